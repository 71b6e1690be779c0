"""Slack's assistant threads: suggested prompts when one starts, a title from its first question.

An assistant thread is a thread of the bot's direct messages that Slack opens in the AI app's
panel (``assistant_thread_started``: the person, the direct message and the thread's ts; the
thread's root is Slack's, with the subtype ``assistant_app_thread``). The person's messages
there are replies in that thread and are answered like any thread of a direct message. When one
starts, Slack is given up to four suggested prompts: ``THREADLINE_SLACK_SUGGESTED_PROMPTS`` when
set, otherwise prompts chosen by the tools the bot has. The first message the bot answers in a
thread of its direct messages titles the thread (Slack refuses the title of a thread that is not
an assistant thread, and nothing else happens).

Both need the ``assistant:write`` scope and Agents & AI Apps enabled for the app; without
them Slack refuses, and the feature is off (:mod:`adapters.slack.optional`): no prompt, no
title, every answer as before. Each call is owned by the adapter's tasks, so the event is
acknowledged at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from adapters.slack.api import SlackApi
from adapters.slack.optional import Features
from bot.api.home import Ability
from bot.api.kit import TaskSet
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

MAX_PROMPTS = 4
"""Slack shows at most four suggested prompts."""
PROMPTS_TITLE = "Try asking"
TITLE_CHARS = 60


@dataclass(frozen=True, slots=True)
class Prompt:
    title: str
    """What the button shows."""
    message: str
    """What it sends, as the person, when clicked."""

    def payload(self) -> dict[str, str]:
        return {"title": self.title, "message": self.message}


ASK = Prompt("What can you do?", "What can you do here, and which tools can you use?")
BY_TOOL: tuple[tuple[str, Prompt], ...] = (
    (
        "web_search",
        Prompt(
            "This week's tech news",
            "Search the web for this week's biggest tech news and summarise it, with links.",
        ),
    ),
    (
        "run_command",
        Prompt(
            "Run a little script",
            "Write a Python script that prints the first 20 prime numbers, run it, and show me"
            " the output.",
        ),
    ),
    (
        "schedule_prompt",
        Prompt("Schedule a reminder", "How can I have you remind me here every weekday at 9:00?"),
    ),
    (
        "remember",
        Prompt("Remember a preference", "Remember that I prefer short answers with bullet points."),
    ),
)
"""Prompts that show what a tool does, in order of preference, when the bot has the tool."""


def prompts(abilities: Sequence[Ability], configured: Sequence[str] = ()) -> list[Prompt]:
    """The configured prompts (each its own title), or "what can you do?" and prompts for the
    tools the bot has; at most four."""
    if configured:
        return [Prompt(one_line(text, TITLE_CHARS), text) for text in configured[:MAX_PROMPTS]]
    names = {a.name for a in abilities}
    chosen = [ASK, *(prompt for tool, prompt in BY_TOOL if tool in names)]
    return chosen[:MAX_PROMPTS]


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word to ``limit`` characters (an ellipsis says so)."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.") + "…"


@dataclass(frozen=True, slots=True)
class StartedThread:
    user: str
    channel: str
    """The direct message the thread is in."""
    thread_ts: str


def parse_started(event: Any) -> StartedThread | None:
    """The thread in an ``assistant_thread_started`` event, or None when it names none."""
    thread = event.get("assistant_thread") if isinstance(event, dict) else None
    if not isinstance(thread, dict):
        return None
    user, channel, ts = thread.get("user_id"), thread.get("channel_id"), thread.get("thread_ts")
    if not (_text(user) and _text(channel) and _text(ts)):
        return None
    return StartedThread(user, channel, ts)


def _text(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value)


class AssistantThreads:
    def __init__(
        self,
        api: SlackApi,
        abilities: Callable[[], Sequence[Ability]],
        configured: Sequence[str],
        tasks: TaskSet,
        optional: Features,
    ) -> None:
        self._api = api
        self._abilities = abilities
        self._configured = tuple(configured)
        self._tasks = tasks
        self._optional = optional

    async def on_started(self, event: dict[str, Any]) -> None:
        """``assistant_thread_started``: acknowledged at once; its prompts in an owned task."""
        started = parse_started(event)
        if started is None:
            log.info("ignoring an assistant_thread_started event without its thread")
            return
        if self._optional.on("suggested prompts"):
            self._tasks.spawn(self._suggest(started))

    async def _suggest(self, thread: StartedThread) -> None:
        offered = [p.payload() for p in prompts(self._abilities(), self._configured)]
        try:
            refused = await self._api.set_suggested_prompts(
                thread.channel, thread.thread_ts, PROMPTS_TITLE, offered
            )
        except SurfaceError:
            log.info("could not suggest prompts in %s", thread.channel, exc_info=True)
            return
        if refused is not None:
            self._optional.refused(
                "suggested prompts", "assistant.threads.setSuggestedPrompts", refused
            )

    def may_title(self, direct: bool, in_thread: bool) -> bool:
        """Whether a first message of this kind titles its thread: a reply in a thread of a
        direct message (an assistant thread's messages are replies to Slack's root)."""
        return direct and in_thread and self._optional.on("thread titles")

    def title(self, channel: str, thread_ts: str, question: str) -> None:
        """Title the thread with its first question (in an owned task)."""
        title = one_line(question, TITLE_CHARS)
        if title:
            self._tasks.spawn(self._title(channel, thread_ts, title))

    async def _title(self, channel: str, thread_ts: str, title: str) -> None:
        try:
            refused = await self._api.set_title(channel, thread_ts, title)
        except SurfaceError:
            log.info("could not title the thread %s in %s", thread_ts, channel, exc_info=True)
            return
        if refused is not None:
            self._optional.refused("thread titles", "assistant.threads.setTitle", refused)
