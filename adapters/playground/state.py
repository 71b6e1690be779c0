"""The playground's own little platform: threads, their messages and pins.

It lives in memory, is saved to ``playground.json`` (written to a temporary file, then
``os.replace``-d over the old one) and tells its listeners — the open browsers — about every
change. Saves are coalesced: a change schedules one write ``save_delay`` seconds later, so a
streamed reply does not rewrite the file on every edit; :meth:`PlaygroundState.close` writes
whatever is left. A new message (a person's, or the bot's) is written at once by whoever posted
it (:meth:`PlaygroundState.flush`), as a platform keeps a message once it accepted it. The
status line ("thinking…") is transient and never saved.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from bot.api.kit import Clock, SystemClock

log = logging.getLogger(__name__)

Event = dict[str, Any]
"""A JSON-ready change notice: ``{"type": ..., "thread_id": ..., ...}``."""
Listener = Callable[[Event], None]

BOT_ID = "playground:threadline"
BOT_NAME = "Threadline"
TITLE_CHARS = 60


class ButtonData(BaseModel):
    action_id: str
    label: str
    style: Literal["primary", "danger", "default"] = "default"


class FileData(BaseModel):
    """A file shown with a message; its bytes are in the playground's file store."""

    id: str
    name: str
    """Already made safe (``bot.files.names``)."""
    size: int
    mimetype: str
    kept: bool = True
    """False for a file over the cap: named with its size, its bytes not kept."""


class MessageData(BaseModel):
    id: str
    author_id: str
    author_name: str
    bot: bool = False
    text: str
    buttons: list[ButtonData] = Field(default_factory=list)
    files: list[FileData] = Field(default_factory=list)
    created_at: float
    edited_at: float | None = None
    edits: int = 0
    event_id: str | None = None
    """The client's id for the POST that wrote it (user messages), to recognise a retry."""


class ThreadData(BaseModel):
    id: str
    title: str
    created_at: float
    updated_at: float
    messages: list[MessageData] = Field(default_factory=list)
    pins: list[str] = Field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "updated_at": self.updated_at}

    def find(self, message_id: str) -> MessageData | None:
        return next((m for m in self.messages if m.id == message_id), None)


class StateFile(BaseModel):
    version: Literal[1] = 1
    threads: list[ThreadData] = Field(default_factory=list)


class UnknownThread(LookupError):
    pass


class UnknownMessage(LookupError):
    pass


def new_id() -> str:
    return secrets.token_hex(6)


def title_of(text: str) -> str:
    words = " ".join(text.split())
    return words if len(words) <= TITLE_CHARS else words[: TITLE_CHARS - 1] + "…"


class PlaygroundState:
    def __init__(self, path: Path, *, clock: Clock | None = None, save_delay: float = 0.5) -> None:
        self.path = path
        self._clock = clock or SystemClock()
        self._save_delay = save_delay
        self._threads: dict[str, ThreadData] = {}
        self._status: dict[str, str] = {}
        self._by_event: dict[str, tuple[str, str]] = {}
        self._listeners: list[Listener] = []
        self.seq = 0
        """Number of the last change announced; pages ignore announcements older than a fetch."""
        self._dirty = False
        self._lock = asyncio.Lock()
        self._saver: asyncio.Task[None] | None = None
        self._writing = False
        self.saves = 0
        """How many times the file has been written."""

    # --- loading and saving -----------------------------------------------------------------
    async def load(self) -> None:
        """Read the file if there is one; an unreadable file is set aside and a fresh state begun."""
        try:
            raw = await asyncio.to_thread(self.path.read_bytes)
        except FileNotFoundError:
            return
        try:
            data = StateFile.model_validate_json(raw)
        except ValidationError:
            aside = self.path.with_name(self.path.name + ".unreadable")
            log.warning("the playground state %s is unreadable; moved it to %s", self.path, aside)
            await asyncio.to_thread(os.replace, self.path, aside)
            return
        self._threads = {t.id: t for t in data.threads}
        self._by_event = {
            m.event_id: (t.id, m.id) for t in data.threads for m in t.messages if m.event_id
        }

    async def flush(self) -> None:
        """Write the state now if it changed since the last write."""
        async with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            snapshot = StateFile(threads=list(self._threads.values())).model_dump_json()
            try:
                await asyncio.to_thread(_write_atomic, self.path, snapshot)
            except BaseException:
                self._dirty = True
                raise
            self.saves += 1

    async def close(self) -> None:
        """Stop the pending save and write everything that is not on disk yet."""
        saver, self._saver = self._saver, None
        if saver is not None and not saver.done():
            if not self._writing:
                saver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await saver
        await self.flush()

    def _changed(self) -> None:
        self._dirty = True
        if self._saver is None or self._saver.done():
            self._saver = asyncio.get_running_loop().create_task(self._save_soon())

    async def _save_soon(self) -> None:
        """Wait, then write; again while changes keep arriving during a write."""
        while self._dirty:
            await self._clock.sleep(self._save_delay)
            self._writing = True
            try:
                await self.flush()
            except OSError:
                log.warning("could not save the playground state to %s", self.path, exc_info=True)
                return
            finally:
                self._writing = False

    # --- listeners ----------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every change; returns the function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _emit(self, event: Event) -> None:
        self.seq += 1
        event["seq"] = self.seq
        for listener in list(self._listeners):
            listener(event)

    # --- reading ------------------------------------------------------------------------------
    def threads(self) -> list[ThreadData]:
        """Most recently active first."""
        return sorted(self._threads.values(), key=lambda t: t.updated_at, reverse=True)

    def thread(self, thread_id: str) -> ThreadData:
        thread = self._threads.get(thread_id)
        if thread is None:
            raise UnknownThread(thread_id)
        return thread

    def status(self, thread_id: str) -> str | None:
        return self._status.get(thread_id)

    def by_event(self, event_id: str) -> tuple[str, str] | None:
        """(thread id, message id) of the user message written by the POST ``event_id``."""
        return self._by_event.get(event_id)

    # --- changing -------------------------------------------------------------------------------
    def create_thread(self, title: str) -> ThreadData:
        now = self._clock.now()
        thread = ThreadData(
            id=new_id(), title=title_of(title) or "New thread", created_at=now, updated_at=now
        )
        self._threads[thread.id] = thread
        self._changed()
        self._emit({"type": "thread", "thread": thread.summary()})
        return thread

    def post(
        self,
        thread_id: str,
        *,
        author_id: str,
        author_name: str,
        text: str,
        buttons: Iterable[ButtonData] = (),
        bot: bool = False,
        event_id: str | None = None,
        files: Iterable[FileData] = (),
    ) -> MessageData:
        thread = self.thread(thread_id)
        now = self._clock.now()
        message = MessageData(
            id=new_id(),
            author_id=author_id,
            author_name=author_name,
            bot=bot,
            text=text,
            buttons=list(buttons),
            files=list(files),
            created_at=now,
            event_id=event_id,
        )
        thread.messages.append(message)
        thread.updated_at = now
        if event_id:
            self._by_event[event_id] = (thread_id, message.id)
        self._changed()
        self._emit({"type": "message", "thread_id": thread_id, "message": message.model_dump()})
        self._emit({"type": "thread", "thread": thread.summary()})
        return message

    def edit(
        self, thread_id: str, message_id: str, text: str, buttons: Iterable[ButtonData]
    ) -> MessageData:
        message = self._message(thread_id, message_id)
        message.text = text
        message.buttons = list(buttons)
        message.edits += 1
        message.edited_at = self._clock.now()
        self._changed()
        self._emit({"type": "message", "thread_id": thread_id, "message": message.model_dump()})
        return message

    def delete(self, thread_id: str, message_id: str) -> None:
        thread = self.thread(thread_id)
        message = self._message(thread_id, message_id)
        thread.messages.remove(message)
        self._emit({"type": "deleted", "thread_id": thread_id, "message_id": message_id})
        if message_id in thread.pins:
            thread.pins.remove(message_id)
            self._emit_pins(thread)
        self._changed()

    def pin(self, thread_id: str, message_id: str) -> None:
        thread = self.thread(thread_id)
        self._message(thread_id, message_id)
        if message_id not in thread.pins:
            thread.pins.append(message_id)
            self._changed()
            self._emit_pins(thread)

    def unpin(self, thread_id: str, message_id: str) -> None:
        thread = self.thread(thread_id)
        if message_id in thread.pins:
            thread.pins.remove(message_id)
            self._changed()
            self._emit_pins(thread)

    def set_status(self, thread_id: str, text: str | None) -> None:
        self.thread(thread_id)
        if text:
            self._status[thread_id] = text
        else:
            self._status.pop(thread_id, None)
        self._emit({"type": "status", "thread_id": thread_id, "text": text or None})

    def _emit_pins(self, thread: ThreadData) -> None:
        self._emit({"type": "pins", "thread_id": thread.id, "pins": list(thread.pins)})

    def file(self, thread_id: str, file_id: str) -> FileData | None:
        """The file ``file_id`` shown in the thread (None: not one of its files)."""
        for message in self.thread(thread_id).messages:
            for file in message.files:
                if file.id == file_id:
                    return file
        return None

    def message(self, thread_id: str, message_id: str) -> MessageData:
        return self._message(thread_id, message_id)

    def _message(self, thread_id: str, message_id: str) -> MessageData:
        message = self.thread(thread_id).find(message_id)
        if message is None:
            raise UnknownMessage(message_id)
        return message


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
