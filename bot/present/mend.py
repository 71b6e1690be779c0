"""What a crash left live in a thread, put to rest without reading the thread back.

A run keeps a record of each message that shows its Stop button or still streams
(:class:`~bot.sessions.model.LiveMessage`, written before the message shows it). After a restart
each is mended from its record alone: a reply shows the text it had, without the button and with
a note; a message holding nothing of the answer ("Working…", the control message, a draft) is
deleted; an open native stream is stopped with the note as its last words. Edits and deletions
wait for the surface's edit budget like any final edit.
"""

from __future__ import annotations

import logging

from bot.api.surface import Surface, native_streams
from bot.errors import EditRefused, MessageTooLong, SurfaceError, SurfaceRateLimited
from bot.present.budget import EditBudget, Priority
from bot.sessions.model import LiveMessage

log = logging.getLogger(__name__)

NOTE = "_Interrupted by a restart._"
ATTEMPTS = 3
"""Rate-limited attempts at one message before it is left as it is."""


async def mend(surface: Surface, live: LiveMessage, budget: EditBudget) -> None:
    """Put ``live`` to rest; a platform failure is logged and the message left as it is."""
    for _ in range(ATTEMPTS):
        await budget.acquire(object(), Priority.FINAL)
        try:
            await _mend_once(surface, live)
        except SurfaceRateLimited as exc:
            budget.note_rate_limited(exc.retry_after)
            continue
        except EditRefused:
            return  # gone: nothing to press or watch any more
        except SurfaceError as exc:
            log.info(
                "could not mend message %s in %s: %s", live.message_id, surface.thread_key, exc
            )
        return
    log.info("message %s in %s left as it is: rate limited", live.message_id, surface.thread_key)


async def _mend_once(surface: Surface, live: LiveMessage) -> None:
    if live.stream:
        await _stop_stream(surface, live.message_id)
    elif live.text is None:  # recorded before the text was kept
        await surface.drop_buttons(live.message_id)
    elif not live.text:
        await surface.delete(live.message_id)
    else:
        await _noted(surface, live.message_id, live.text)


async def _noted(surface: Surface, message_id: str, text: str) -> None:
    """The reply's text again, with the note under it (without it, where it would not fit)."""
    try:
        await surface.edit(message_id, f"{text}\n\n{surface.render(NOTE)}", (), final=True)
    except MessageTooLong:
        await surface.edit(message_id, text, (), final=True)


async def _stop_stream(surface: Surface, stream_id: str) -> None:
    streams = native_streams(surface)
    if streams is None:  # streaming was turned off since: the platform ends it on its own
        log.info("stream %s in %s left to expire", stream_id, surface.thread_key)
        return
    try:
        await streams.stop(stream_id, "\n\n" + surface.render(NOTE))
    except SurfaceRateLimited:
        raise
    except SurfaceError as exc:  # it had expired already: it streams no more
        log.info("stream %s in %s was over: %s", stream_id, surface.thread_key, exc)
