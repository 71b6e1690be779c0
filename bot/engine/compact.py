"""Compaction: older messages of a long thread are summarised by the model and replaced by
the summary, keeping the most recent turns verbatim.

The cut is always just before a user message, so a tool call is never separated from its
result. A summary that fails leaves the transcript as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot.errors import ModelError
from bot.llm.messages import (
    AssistantMessage,
    Message,
    Summary,
    SystemMessage,
    ToolResult,
    UserMessage,
)
from bot.llm.model import Model, ModelRequest, TextPiece

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
SUMMARY_PROMPT = """\
You summarise the earlier part of a team chat thread for an assistant that will continue it.
Keep what matters for the rest of the work: who asked for what, decisions and their reasons,
facts found, files and commands used and their outcomes, open questions, and promises made.
Write compact Markdown bullet points. Do not invent anything."""
MAX_RESULT_CHARS = 2000
"""How much of each tool result the summariser reads."""
LEFT_OUT = "\n(… part of the conversation left out to fit the context window …)\n"


class CompactionFailed(Exception):
    """The summary call failed; the transcript is unchanged."""


@dataclass(slots=True)
class TokenGauge:
    """Estimates the tokens of the next request: the provider's count for the last request it
    saw, plus an estimate for the messages added since."""

    known_tokens: int = 0
    known_messages: int = 0

    def observe(self, prompt_tokens: int, completion_tokens: int, messages: int) -> None:
        if prompt_tokens:
            self.known_tokens = prompt_tokens + completion_tokens
            self.known_messages = messages

    def estimate(self, system: str, messages: Sequence[Message]) -> int:
        if self.known_messages and self.known_messages <= len(messages):
            return self.known_tokens + estimate_tokens(messages[self.known_messages :])
        return estimate_tokens(messages) + len(system) // CHARS_PER_TOKEN

    def reset(self) -> None:
        self.known_tokens = self.known_messages = 0


def estimate_tokens(messages: Sequence[Message]) -> int:
    chars = 0
    for message in messages:
        if isinstance(message, AssistantMessage):
            chars += len(message.text) + sum(
                len(c.arguments) + len(c.name) for c in message.tool_calls
            )
        elif isinstance(message, ToolResult):
            chars += len(message.content)
        else:
            chars += len(message.text)
        chars += 16  # role and framing
    return chars // CHARS_PER_TOKEN


def cut_point(messages: Sequence[Message], keep_turns: int) -> int:
    """Index of the first message kept: the ``keep_turns``-th last user message (0: no cut)."""
    starts = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    if len(starts) <= keep_turns:
        return 0
    return starts[-keep_turns]


def render_for_summary(messages: Sequence[Message]) -> str:
    lines: list[str] = []
    for message in messages:
        match message:
            case UserMessage(text=text, author_name=name):
                lines.append(f"{name or 'user'}: {text}")
            case AssistantMessage(text=text, tool_calls=calls):
                if text:
                    lines.append(f"assistant: {text}")
                lines.extend(f"assistant called {c.name}({c.arguments})" for c in calls)
            case ToolResult(name=name, content=content):
                lines.append(f"{name} returned: {content[:MAX_RESULT_CHARS]}")
            case Summary(text=text):
                lines.append(f"(summary of what came before)\n{text}")
            case SystemMessage(text=text):
                lines.append(f"(note) {text}")
    return "\n".join(lines)


def fitted(text: str, chars: int | None) -> str:
    """``text`` cut to about ``chars`` characters: its first third and its end (who asked for
    what, and where things stand), with a note of what was left out between them."""
    if chars is None or len(text) <= chars:
        return text
    head = chars // 3
    return text[:head] + LEFT_OUT + text[len(text) - (chars - head) :]


async def summarise(
    model: Model, messages: Sequence[Message], *, name: str | None = None, chars: int | None = None
) -> str:
    """The summary of ``messages`` by ``model`` (asked as ``name``, the thread's model), from
    at most about ``chars`` characters of them."""
    request = ModelRequest(
        system=SUMMARY_PROMPT,
        messages=[UserMessage(text=fitted(render_for_summary(messages), chars))],
        tools=(),
        model=name,
    )
    try:
        parts = [p.text async for p in model.stream(request) if isinstance(p, TextPiece)]
    except ModelError as exc:
        raise CompactionFailed(str(exc)) from exc
    text = "".join(parts).strip()
    if not text:
        raise CompactionFailed("the model returned an empty summary")
    return text


async def compacted(
    model: Model,
    messages: Sequence[Message],
    keep_turns: int,
    *,
    name: str | None = None,
    chars: int | None = None,
) -> list[Message] | None:
    """The transcript with its older part replaced by a summary; None when there is nothing
    to compact. The summary is asked of the thread's model (``name``) from what fits its
    window (``chars``). Raises :class:`CompactionFailed`."""
    cut = cut_point(messages, keep_turns)
    if cut == 0 and keep_turns > 1:
        cut = cut_point(messages, 1)
    if cut == 0:
        return None
    older = messages[:cut]
    replaced = sum(m.replaced if isinstance(m, Summary) else 1 for m in older)
    text = await summarise(model, older, name=name, chars=chars)
    log.info("compacted %d messages into a summary of %d characters", len(older), len(text))
    return [Summary(text=text, replaced=replaced), *messages[cut:]]
