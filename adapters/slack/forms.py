"""A form an MCP server asks for, as a Slack modal: the card's "Fill in…" opens it
(``views.open`` with the click's trigger, at once), one input block a field (text, email, URL,
number, date, a select, a multi-select, a checkbox), each with its limits; its
``view_submission`` is answered with the errors beside the fields when an answer does not fit
(``response_action: errors``), and closes when the form was sent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.api.forms import Field, PendingForm

CALLBACK = "threadline-mcp-form"
ACTION = "v"
BLOCK = "f:"
MAX_OPTIONS = 100
MAX_TEXT = 3000

Block = dict[str, Any]


def _text(text: str, limit: int = 150) -> dict[str, str]:
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    return {"type": "plain_text", "text": cut or " "}


def _option(value: str, title: str) -> Block:
    return {"text": _text(title, 75), "value": value[:150]}


def _number(value: float | None) -> str | None:
    return None if value is None else f"{value:g}"


def _element(f: Field) -> Block:  # noqa: C901 (one case a kind)
    element: Block
    match f.kind:
        case "boolean":
            yes = _option("yes", "Yes")
            element = {"type": "checkboxes", "options": [yes]}
            if f.default is True:
                element["initial_options"] = [yes]
        case "choice" | "choices":
            options = [_option(o.value, o.title) for o in f.options[:MAX_OPTIONS]]
            multi = f.kind == "choices"
            element = {
                "type": "multi_static_select" if multi else "static_select",
                "options": options,
            }
            picked = f.default if isinstance(f.default, list) else [f.default]
            chosen = [o for o in options if o["value"] in picked]
            if chosen:
                element["initial_options" if multi else "initial_option"] = (
                    chosen if multi else chosen[0]
                )
            if multi and f.max is not None:
                element["max_selected_items"] = int(f.max)
        case "integer" | "number":
            element = {"type": "number_input", "is_decimal_allowed": f.kind == "number"}
            for key, value in (("min_value", f.min), ("max_value", f.max)):
                if (shown := _number(value)) is not None:
                    element[key] = shown
            if f.default is not None:
                element["initial_value"] = str(f.default)
        case "string" if f.format == "date":
            element = {"type": "datepicker"}
            if isinstance(f.default, str):
                element["initial_date"] = f.default
        case "string":
            kind = {"email": "email_text_input", "uri": "url_text_input"}.get(
                f.format, "plain_text_input"
            )
            element = {"type": kind}
            if kind == "plain_text_input":
                if f.min is not None:
                    element["min_length"] = int(min(f.min, MAX_TEXT))
                element["max_length"] = int(min(f.max or MAX_TEXT, MAX_TEXT))
            if isinstance(f.default, str):
                element["initial_value"] = f.default
    element["action_id"] = ACTION
    return element


def form_modal(form: PendingForm, channel: str, root_ts: str) -> dict[str, Any]:
    asked = form.asked
    fields = asked.form.fields if asked.form is not None else ()
    blocks: list[Block] = [
        {"type": "section", "text": {"type": "plain_text", "text": asked.message[:3000] or " "}}
    ]
    for f in fields[:99]:
        block: Block = {
            "type": "input",
            "block_id": BLOCK + f.name,
            "label": _text(f.title, 2000),
            "element": _element(f),
            "optional": not f.required or f.kind == "boolean",
        }
        hint = " · ".join(h for h in (f.description, f.hint()) if h)
        if hint:
            block["hint"] = _text(hint, 2000)
        blocks.append(block)
    return {
        "type": "modal",
        "callback_id": CALLBACK,
        "private_metadata": json.dumps({"form": form.id, "channel": channel, "root": root_ts}),
        "title": _text(f"{asked.server} asks", 24),
        "submit": _text("Send"),
        "close": _text("Close"),
        "blocks": blocks,
    }


@dataclass(frozen=True, slots=True)
class FormSent:
    user: str
    form_id: str
    channel: str
    root_ts: str
    values: dict[str, Any]


def read_form(body: Any) -> FormSent | None:
    """The MCP form's modal sent; None for any other view."""
    if not isinstance(body, dict) or body.get("type") != "view_submission":
        return None
    view = body.get("view") if isinstance(body.get("view"), dict) else {}
    assert isinstance(view, dict)
    if view.get("callback_id") != CALLBACK:
        return None
    try:
        meta = json.loads(view.get("private_metadata") or "")
    except (ValueError, TypeError):
        return None
    user = (body.get("user") or {}).get("id")
    if not isinstance(meta, dict) or not isinstance(user, str):
        return None
    form, channel, root = meta.get("form"), meta.get("channel"), meta.get("root")
    if not (isinstance(form, str) and isinstance(channel, str) and isinstance(root, str)):
        return None
    state = ((view.get("state") or {}).get("values")) or {}
    values = {
        block.removeprefix(BLOCK): _value(actions.get(ACTION) or {})
        for block, actions in state.items()
        if isinstance(block, str) and block.startswith(BLOCK) and isinstance(actions, dict)
    }
    return FormSent(user, form, channel, root, values)


def _value(element: dict[str, Any]) -> Any:
    match element.get("type"):
        case "checkboxes":
            return bool(element.get("selected_options"))
        case "static_select":
            return (element.get("selected_option") or {}).get("value")
        case "multi_static_select":
            return [o.get("value") for o in element.get("selected_options") or []]
        case "datepicker":
            return element.get("selected_date")
        case _:
            return element.get("value")


def errors_answer(errors: dict[str, str]) -> dict[str, Any]:
    """The ``view_submission`` answer that shows ``errors`` beside their fields."""
    return {
        "response_action": "errors",
        "errors": {BLOCK + name: text[:150] for name, text in errors.items()},
    }
