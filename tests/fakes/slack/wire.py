"""Reading a Web API request the way Slack does, and checking Block Kit against Slack's limits."""

from __future__ import annotations

from typing import Any

from aiohttp import web

MAX_BLOCKS = 50


class SlackError(Exception):
    """An ``{"ok": false, "error": code}`` answer."""

    def __init__(self, code: str, **extra: Any) -> None:
        super().__init__(code)
        self.code = code
        self.extra = extra


def check_blocks(blocks: Any, markdown_limit: int) -> None:
    if blocks is None:
        return
    if (
        not isinstance(blocks, list)
        or len(blocks) > MAX_BLOCKS
        or not all(isinstance(b, dict) for b in blocks)
    ):
        raise SlackError("invalid_blocks")
    markdown = sum(len(b.get("text", "")) for b in blocks if b.get("type") == "markdown")
    if markdown > markdown_limit:
        raise SlackError("msg_too_long")
    for block in blocks:
        if block.get("type") == "actions":
            _check_buttons(block.get("elements", []))
        elif block.get("type") == "context_actions":
            _check_feedback(block.get("elements", []))
        elif block.get("type") not in {"markdown", "section", "divider", "context"}:
            raise SlackError("invalid_blocks")


def _check_feedback(elements: list[dict[str, Any]]) -> None:
    """``context_actions`` holds ``feedback_buttons`` (Slack's AI apps' 👍 / 👎)."""
    if not elements or len(elements) > 5:
        raise SlackError("invalid_blocks")
    for element in elements:
        halves = [element.get("positive_button"), element.get("negative_button")]
        if element.get("type") != "feedback_buttons" or not element.get("action_id"):
            raise SlackError("invalid_blocks")
        for half in halves:
            if (
                not isinstance(half, dict)
                or half.get("text", {}).get("type") != "plain_text"
                or not half.get("text", {}).get("text")
                or not 0 < len(half.get("value", "")) <= 2000
            ):
                raise SlackError("invalid_blocks")


def _check_buttons(elements: list[dict[str, Any]]) -> None:
    ids = [e.get("action_id") for e in elements]
    if not elements or len(elements) > 25 or len(set(ids)) != len(ids):
        raise SlackError("invalid_blocks")
    for element in elements:
        label = element.get("text", {}).get("text", "")
        if (
            element.get("type") != "button"
            or not 0 < len(label) <= 75
            or len(element.get("action_id", "")) > 255
            or len(element.get("value", "")) > 2000
            or element.get("style", "primary") not in {"primary", "danger"}
        ):
            raise SlackError("invalid_blocks")


async def arguments(request: web.Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("not an object")
            args.update(body)
        else:
            args.update(dict(await request.post()))
    return args


def token_of(request: web.Request, args: dict[str, Any]) -> str | None:
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header[len("Bearer ") :].strip()
    token = args.pop("token", None)
    return str(token) if token else None
