"""Feedback on answers: the buttons offered under a final answer, a click kept, a note added.

The buttons go under a run's final answer (a message of their own, so that no edit of the
answer is spent on them), when ``feedback`` is on. A click is kept per run and person, the last
one winning (:mod:`bot.feedback.model`), and counted in ``/metrics`` when it is new or changes.
A 👎 asks "what went wrong?" in one line (each platform its own way); the line is kept with it,
unless the thread was reset since.
"""

from __future__ import annotations

import logging

from bot.api.actions import Rate, encode
from bot.api.inbound import Author, ThreadKey
from bot.api.surface import Button, Surface
from bot.errors import SurfaceError
from bot.feedback.model import Feedback, FeedbackStore, Value
from bot.infra import metrics
from bot.infra.clock import Clock

log = logging.getLogger(__name__)

NOTE_CHARS = 500
"""The longest note kept: a one-line answer to "what went wrong?"."""
THANKS = "Thanks, noted."
GONE = "That answer's thread was reset (or the 👎 changed) since, so this note was not kept."
EMPTY = "Nothing was written, so nothing was kept."
QUESTION = "What went wrong?"


def buttons(run_id: str) -> tuple[Button, Button]:
    """👍 and 👎 for the run's final answer."""
    return (
        Button(encode(Rate(run_id, good=True)), "👍"),
        Button(encode(Rate(run_id, good=False)), "👎"),
    )


class Feedbacks:
    def __init__(self, store: FeedbackStore, clock: Clock, *, enabled: bool) -> None:
        self.store = store
        self.clock = clock
        self.enabled = enabled

    async def offer(self, surface: Surface, run_id: str) -> str | None:
        """The buttons, under the run's final answer (a platform failure loses only them);
        the id of their message."""
        if not self.enabled:
            return None
        try:
            return await surface.post("", buttons(run_id))
        except SurfaceError:
            log.warning("could not offer feedback buttons in %s", surface.thread_key)
            return None

    async def rate(self, run_id: str, good: bool, actor: Author, key: ThreadKey) -> None:
        value: Value = "up" if good else "down"
        given = Feedback(run_id, key, actor.id, actor.display_name, value, self.clock.now())
        recorded = await self.store.record_feedback(given)
        if recorded != "same":
            metrics.feedback_given(value)
        log.info("feedback %s on run %s in %s by %s (%s)", value, run_id, key, actor.id, recorded)

    async def note(self, run_id: str, actor: Author, text: str) -> str:
        """The person's answer to "what went wrong?"; what to tell them."""
        line = " ".join(text.split())[:NOTE_CHARS]
        if not line:
            return EMPTY
        if await self.store.note_feedback(run_id, actor.id, line):
            return THANKS
        return GONE
