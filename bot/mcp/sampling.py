"""A server's request for a model's answer (``sampling/createMessage``) while its tool runs:
shown in full on an approval card in the thread (its messages, its system prompt, the tokens
asked and the tokens it may use), decided as any call by the people the approval policy names
(``[tools."<server>__sampling"]``: it asks every time unless configured otherwise), and only
then run on the thread's model, with no tools, its answer capped at the server's
``sampling_max_tokens`` (0 refuses every request). What it uses counts in the run's limits and
the thread's totals. A denial, an expiry or a Stop refuses it: the server gets an error.

Images in the request (PNG, JPEG, GIF, WebP, each at most ``image_max_bytes``) go to the model
with the message they are in, when the thread's model sees images; the card names them (how
many, their types and sizes), never shows their bytes. A request with an image the model cannot
be given, or with audio, is refused before anyone is asked.

The wait is an inline approval (:mod:`bot.approvals.inline`): recorded in the run's session
before its card shows, so a restart or a Stop closes the card.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from hashlib import sha256
from typing import Protocol

from bot.api.inbound import ThreadKey
from bot.engine.events import EventSink
from bot.engine.gate import Proceed, Verdict
from bot.engine.limits import charge
from bot.engine.states import EngineConfig
from bot.errors import ModelError
from bot.files.kinds import data_url, size_words, sniff
from bot.llm.messages import AssistantMessage, Message, ToolCall, Usage, UserMessage
from bot.llm.model import FinishPiece, Model, ModelRequest, TextPiece, UsagePiece
from bot.mcp.asking import Refused, SampleAsked, Sampled, Turn
from bot.sessions.model import Session
from bot.tools.base import AnyArguments, Tool, ToolContext, ToolError

log = logging.getLogger(__name__)

SUFFIX = "__sampling"


class Gate(Protocol):
    async def check(self, ctx: ToolContext, call: ToolCall, tool: Tool) -> Verdict: ...


GateFor = Callable[[Session, EventSink | None], Gate]
"""The inline approval gate of a run's session."""
Configure = Callable[[Session], EngineConfig]
Caps = Callable[[str], int]
"""A server's ``sampling_max_tokens``."""
SeesImages = Callable[[ThreadKey], bool]
"""Whether the thread's model is given images."""


async def _never(ctx: ToolContext, **arguments: object) -> str:
    raise ToolError("a sampling request is run by the client, not called")


def request_tool(server: str) -> Tool:
    """What the card names: ``<server>__sampling``, asking every time by default."""
    return Tool(
        f"{server}{SUFFIX}",
        f"A request of the MCP server {server} for an answer of the thread's model.",
        AnyArguments,
        _never,
        side_effects=True,
        approval="always",
        caution="the server's own text goes to the model; its answer goes back to the server",
    )


class Sampler:
    def __init__(
        self,
        model: Model,
        configure: Configure,
        gate_for: GateFor,
        caps: Caps,
        sees_images: SeesImages,
        image_max_bytes: int,
    ) -> None:
        self._model = model
        self._configure = configure
        self._gate_for = gate_for
        self._caps = caps
        self._sees_images = sees_images
        self._image_max_bytes = image_max_bytes

    async def __call__(self, ctx: ToolContext, asked: SampleAsked) -> Sampled:
        cap = self._caps(asked.server)
        if cap <= 0:
            raise Refused("sampling is off for this server (sampling_max_tokens = 0)")
        self._check_images(ctx.thread_key, asked)
        tokens = min(asked.max_tokens, cap) if asked.max_tokens > 0 else cap
        tool = request_tool(asked.server)
        shown = {
            "system": asked.system,
            "messages": [_shown(t) for t in asked.turns],
            "max_tokens_asked": asked.max_tokens,
            "max_tokens": tokens,
        }
        call = ToolCall(
            id=f"{ctx.call_id}-sampling-{secrets.token_hex(4)}",
            wire_id="",
            name=tool.name,
            arguments=json.dumps(shown, ensure_ascii=False),
        )
        verdict = await self._gate_for(ctx.session, ctx.events).check(ctx, call, tool)
        if not isinstance(verdict, Proceed):
            reason = getattr(verdict, "text", "not approved")
            log.info("[%s] sampling refused in %s: %s", asked.server, ctx.thread_key, reason)
            raise Refused(f"the request was not approved: {reason}")
        return await self._run(ctx, asked, tokens)

    def _check_images(self, key: ThreadKey, asked: SampleAsked) -> None:
        """Raises :class:`Refused` when an image of the request cannot go to the model."""
        pictures = [p for t in asked.turns for p in t.images]
        if not pictures:
            return
        if any(t.images for t in asked.turns if t.role == "assistant"):
            raise Refused("images can be sampled in the user's messages only")
        for picture in pictures:
            sniffed = sniff(picture.data)
            if sniffed.kind != "image" or sniffed.mimetype != picture.mime:
                said = sniffed.mimetype if sniffed.kind == "image" else "not an image"
                raise Refused(
                    f"an image said to be {picture.mime} is {said}: this client samples PNG,"
                    " JPEG, GIF and WebP images"
                )
            if len(picture.data) > self._image_max_bytes:
                raise Refused(
                    f"an image of {size_words(len(picture.data))} is over the"
                    f" {size_words(self._image_max_bytes)} this client gives a model"
                )
        if not self._sees_images(key):
            log.info("[%s] sampling with images refused in %s", asked.server, key)
            raise Refused(
                f"the request has {_count(len(pictures))} and the thread's model does not take"
                " images (vision is off for it)"
            )

    async def _run(self, ctx: ToolContext, asked: SampleAsked, tokens: int) -> Sampled:
        config = self._configure(ctx.session)
        messages: list[Message] = [
            UserMessage(text=t.text, images=tuple(data_url(p.data, p.mime) for p in t.images))
            if t.role == "user"
            else AssistantMessage(text=t.text)
            for t in asked.turns
        ]
        request = ModelRequest(
            system=asked.system,
            messages=messages,
            tools=(),
            max_tokens=tokens,
            model=config.model,
            sampling=config.sampling,
        )
        parts: list[str] = []
        usage = Usage()
        finish: str | None = None
        try:
            async for piece in self._model.stream(request):
                match piece:
                    case TextPiece(text):
                        parts.append(text)
                    case UsagePiece(used):
                        usage = usage + used
                    case FinishPiece(reason):
                        finish = reason
                    case _:
                        pass
        except ModelError as exc:
            raise Refused(f"the model failed: {exc}") from None
        finally:
            cost = config.cost(usage)
            if ctx.spent is not None:
                ctx.spent(usage, cost)
            else:
                charge(ctx.session, usage, cost, ctx.clock.now())
        log.info("[%s] sampled in %s: %d tokens", asked.server, ctx.thread_key, usage.total)
        stop = "maxTokens" if finish == "length" else "endTurn"
        return Sampled("".join(parts), config.model or self._model.name, stop)


def _count(n: int) -> str:
    return f"{n} image" if n == 1 else f"{n} images"


def _shown(turn: Turn) -> dict[str, str]:
    """A message as its card shows it: its text, and its images named (not their bytes; their
    digest, so that an "Always allow" of this exact request holds for these images only)."""
    shown = {"role": turn.role, "text": turn.text}
    if turn.images:
        each = "; ".join(
            f"{p.mime}, {size_words(len(p.data))}, sha256 {sha256(p.data).hexdigest()[:16]}"
            for p in turn.images
        )
        shown["images"] = f"{_count(len(turn.images))} ({each})"
    return shown
