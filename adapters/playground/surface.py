"""The Surface of one playground thread: the platform calls, made on :class:`PlaygroundState`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from adapters.playground.channel import PlaygroundChannelHistory
from adapters.playground.state import (
    BOT_ID,
    BOT_NAME,
    ButtonData,
    PlaygroundState,
    UnknownMessage,
    UnknownThread,
)
from bot.api.inbound import ThreadKey
from bot.api.surface import Button, SurfaceLimits
from bot.api.transfer import FileTransfer
from bot.errors import EditRefused, MessageTooLong, SurfaceError

PREFIX = "playground:"
LIMITS = SurfaceLimits(
    max_chars=4000,
    min_edit_interval=0.25,
    edits_per_minute=None,
    budget_key="playground",
    can_pin=True,
)
_MASS_MENTION = re.compile(r"(?<![\w@])@(everyone|here)\b", re.IGNORECASE)


def render(markdown: str) -> str:
    """The page renders Markdown itself; only mass mentions are neutralised (zero-width space)."""
    return _MASS_MENTION.sub("@\u200b\\1", markdown)


def thread_key(thread_id: str) -> ThreadKey:
    return ThreadKey(PREFIX + thread_id)


class PlaygroundSurface:
    def __init__(
        self, state: PlaygroundState, thread_id: str, files: FileTransfer | None = None
    ) -> None:
        self._state = state
        self._thread_id = thread_id
        self._key = thread_key(thread_id)
        self.files = files
        """Shared files read, workspace files posted as downloads (``bot.api.transfer``)."""
        self.channel_history = PlaygroundChannelHistory(state)
        """The playground's threads, read for ``read_channel`` (``bot.api.channel``)."""

    @property
    def thread_key(self) -> ThreadKey:
        return self._key

    @property
    def limits(self) -> SurfaceLimits:
        return LIMITS

    def render(self, markdown: str) -> str:
        return render(markdown)

    async def post(self, text: str, buttons: Sequence[Button] = ()) -> str:
        _check_length(text)
        try:
            message = self._state.post(
                self._thread_id,
                author_id=BOT_ID,
                author_name=BOT_NAME,
                text=text,
                buttons=_buttons(buttons),
                bot=True,
            )
        except UnknownThread as exc:
            raise SurfaceError(f"no playground thread {self._thread_id}") from exc
        await self._state.flush()  # a posted message is kept, as a platform keeps it
        return message.id

    async def edit(
        self, message_id: str, text: str, buttons: Sequence[Button] = (), *, final: bool = False
    ) -> None:
        _check_length(text)
        shown = _buttons(buttons)
        try:
            before = self._state.message(self._thread_id, message_id).buttons
            self._state.edit(self._thread_id, message_id, text, shown)
        except (UnknownThread, UnknownMessage) as exc:
            raise EditRefused(f"message {message_id} is gone") from exc
        if before != shown:  # a run's last edit or a decided card: kept at once, as a platform
            await self._state.flush()  # keeps it (streamed text alone is saved a moment later)

    async def drop_buttons(self, message_id: str) -> None:
        try:
            shown = self._state.message(self._thread_id, message_id)
            self._state.edit(self._thread_id, message_id, shown.text, ())
        except (UnknownThread, UnknownMessage) as exc:
            raise EditRefused(f"message {message_id} is gone") from exc
        await self._state.flush()

    async def delete(self, message_id: str) -> None:
        try:
            self._state.delete(self._thread_id, message_id)
        except (UnknownThread, UnknownMessage) as exc:
            raise SurfaceError(f"message {message_id} not found") from exc

    async def pin(self, message_id: str) -> None:
        try:
            self._state.pin(self._thread_id, message_id)
        except (UnknownThread, UnknownMessage) as exc:
            raise SurfaceError(f"message {message_id} not found") from exc

    async def unpin(self, message_id: str) -> None:
        try:
            self._state.unpin(self._thread_id, message_id)
        except UnknownThread as exc:
            raise SurfaceError(f"no playground thread {self._thread_id}") from exc

    async def set_status(self, text: str | None) -> None:
        try:
            self._state.set_status(self._thread_id, text)
        except UnknownThread as exc:
            raise SurfaceError(f"no playground thread {self._thread_id}") from exc


def _check_length(text: str) -> None:
    if len(text) > LIMITS.max_chars:
        raise MessageTooLong(f"{len(text)} characters; the playground takes {LIMITS.max_chars}")


def _buttons(buttons: Sequence[Button]) -> list[ButtonData]:
    return [ButtonData(action_id=b.action_id, label=b.label, style=b.style) for b in buttons]
