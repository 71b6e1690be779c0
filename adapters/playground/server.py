"""The playground's HTTP side: the page, a small JSON API and a WebSocket of live changes.

Routes (added by :meth:`PlaygroundAdapter.install`); every one checks the ``Host`` header and
a browser's ``Origin``, and the API needs the session cookie the page sets (see ``gate.py``):

- ``GET /`` the page, which sets the session cookie (with a token configured: only when opened
  as ``/?token=…``, then it redirects to ``/``); ``GET /static/...`` its script and style sheet
- ``GET /api/info`` the bot's name and the model's label
- ``GET /api/threads`` the threads, most recent first; ``GET /api/threads/{id}`` one thread
  (messages, pins, status)
- ``POST /api/messages`` ``{thread_id?, text, event_id, user_name}``: writes the
  message in the thread (a new thread without ``thread_id``) and hands it to the core in the
  background; answers 202 with ``{thread_id, message_id}`` at once. Text that is a
  ``/threadline …`` command is not written: the command runs on the thread (``commands.py``),
  and the answer, for the person alone, comes back as 200 ``{thread_id, note}``. A retried POST (same
  ``event_id``) writes nothing new, and the core ignores the redelivery. With files, the same
  fields come as ``multipart/form-data`` with one ``file`` part per file (see ``uploads.py``).
- ``GET /api/files/{thread_id}/{file_id}`` a file shown in the thread, as a download
- ``POST /api/actions`` ``{thread_id, action_id, user_name, client_id}``: a button click, by
  the session's user; the core's private note comes back in the answer, or — if the core takes longer than
  ``ACTION_WAIT`` seconds — later, over the clicker's own WebSockets only. A "Fill in…" click
  on a form an MCP server asks for answers ``{form}`` (its message and fields) for the page to
  show, or ``{note}`` when it does not open for this person.
- ``POST /api/forms`` ``{thread_id, form_id, values, user_name}``: that form sent; answers
  ``{note, errors, done}`` (``errors`` by field: the form still waits).

The speaker's id comes from the session cookie; ``user_name`` is only the name shown.
- ``GET /api/ws?client=<id>`` every change as JSON (``thread``, ``message``, ``deleted``,
  ``pins``, ``status``, ``error``); ``resync`` tells a page that fell behind to fetch again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError, field_validator

from adapters.playground.commands import answer, command_words
from adapters.playground.door import USER, Door
from adapters.playground.files import FileStore, PlaygroundFiles, attachment, serve
from adapters.playground.live import Connection, Hub
from adapters.playground.state import BOT_NAME, PlaygroundState, UnknownThread
from adapters.playground.surface import PREFIX, PlaygroundSurface, thread_key
from adapters.playground.uploads import Staged, UploadError, keep, read_upload
from bot.api.actions import explain_after, form_to_open
from bot.api.forms import PendingForm
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.api.kit import Clock, TaskSet, valid_text
from bot.config import Settings

if TYPE_CHECKING:
    from bot.api.port import CoreApi

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
ACTION_WAIT = 3.0
FAILED = "Something went wrong while answering; the server log has the details."
COMMAND_FAILED = "Something went wrong with that command; the server log has the details."
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
_ID = r"^[A-Za-z0-9_-]+$"


class _Speaker(BaseModel):
    user_name: str = Field(default="You", max_length=40)

    def author(self, user_id: str) -> Author:
        return Author(id=f"playground:{user_id}", display_name=self.user_name.strip() or "You")


class PostMessage(_Speaker):
    thread_id: str | None = Field(default=None, max_length=64, pattern=_ID)
    text: str = Field(max_length=200_000)
    event_id: str = Field(min_length=8, max_length=100, pattern=_ID)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("the message is empty")
        return text


class PostWithFiles(PostMessage):
    """The fields of a message with files (its text may be empty)."""

    text: str = Field(default="", max_length=200_000)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        return text


class PostAction(_Speaker):
    thread_id: str = Field(max_length=64, pattern=_ID)
    action_id: str = Field(min_length=1, max_length=255)
    client_id: str = Field(default="", max_length=64)
    message_id: str | None = Field(default=None, max_length=64, pattern=_ID)
    """The message whose button was clicked."""


class PostExplain(_Speaker):
    """The answer to "what went wrong?" after a 👎 (the form's id came with the click)."""

    form_id: str = Field(min_length=1, max_length=255)
    text: str = Field(max_length=2_000)


class PostForm(_Speaker):
    """A form an MCP server asks for, sent: each field as typed, picked or ticked."""

    thread_id: str = Field(max_length=64, pattern=_ID)
    form_id: str = Field(min_length=1, max_length=64, pattern=_ID)
    values: dict[str, str | bool | list[str] | int | float | None] = Field(max_length=100)


def form_json(form: PendingForm) -> dict[str, Any]:
    """What the page needs to show the form."""
    asked = form.asked
    fields = asked.form.fields if asked.form is not None else ()
    return {
        "id": form.id,
        "server": asked.server,
        "message": asked.message,
        "fields": [
            {
                "name": f.name,
                "kind": f.kind,
                "title": f.title,
                "description": f.description,
                "required": f.required,
                "default": f.default,
                "options": [{"value": o.value, "title": o.title} for o in f.options],
                "min": f.min,
                "max": f.max,
                "format": f.format,
                "hint": f.hint(),
            }
            for f in fields
        ],
    }


class PlaygroundAdapter:
    name = "playground"

    def __init__(
        self,
        core: CoreApi,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        token: str | None = None,
        clock: Clock | None = None,
        stop_grace: float = 5.0,
        action_wait: float = ACTION_WAIT,
        file_max_bytes: int = Settings.model_fields["file_max_bytes"].default,
    ) -> None:
        self.door = Door(data_dir, host, token, lambda: self._stopping)
        self.core = core
        self.state = PlaygroundState(data_dir / "playground.json", clock=clock)
        self.files = FileStore(data_dir / "playground_files")
        self.hub = Hub()
        self._file_cap = file_max_bytes
        self._stop_grace = stop_grace
        self._action_wait = action_wait
        self.tasks = TaskSet("the playground")
        self._stopping = False
        self._unsubscribe: Callable[[], None] | None = None

    async def problem(self) -> str | None:
        return "stopping" if self._stopping else None

    def install(self, app: web.Application) -> None:
        app.router.add_get("/", self.door.page)
        app.router.add_get("/static/{name}", self.door.static)
        app.router.add_get("/api/info", self.door.api(self._info))
        app.router.add_get("/api/threads", self.door.api(self._threads))
        app.router.add_get("/api/threads/{thread_id}", self.door.api(self._thread))
        app.router.add_post("/api/messages", self.door.api(self._post_message))
        app.router.add_post("/api/actions", self.door.api(self._post_action))
        app.router.add_post("/api/explain", self.door.api(self._post_explain))
        app.router.add_post("/api/forms", self.door.api(self._post_form))
        app.router.add_get(
            "/api/files/{thread_id}/{file_id}",
            self.door.api(lambda r: serve(self.state, self.files, r)),
        )
        app.router.add_get("/api/ws", self.door.api(self._websocket))

    async def start(self) -> None:
        await self.door.open()
        await asyncio.to_thread(self.files.clear_staging)  # uploads a stop cut short
        await self.state.load()
        self._unsubscribe = self.state.subscribe(self.hub.publish)
        self.core.register_surfaces(PREFIX, self._surface_for)

    def _surface_for(self, key: ThreadKey) -> PlaygroundSurface:
        return self._surface(key.removeprefix(PREFIX))

    def _surface(self, thread_id: str) -> PlaygroundSurface:
        return PlaygroundSurface(
            self.state, thread_id, PlaygroundFiles(self.state, self.files, thread_id)
        )

    async def wait_idle(self) -> None:
        """Return once no message or click is being handled (those arriving meanwhile included)."""
        while True:
            await self.tasks.idle()
            await self.core.wait_idle()  # runs resumed by a click
            if not len(self.tasks):
                return

    async def stop(self) -> None:
        """Let running answers finish (up to ``stop_grace`` s), cancel the rest, save, hang up."""
        if self._stopping:
            return
        self._stopping = True
        await self.tasks.drain(self._stop_grace)
        await self.hub.close()
        if self._unsubscribe is not None:
            self._unsubscribe()
        await self.state.close()

    # --- the page and reads -------------------------------------------------------------------
    async def _info(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"bot_name": BOT_NAME, "model_label": self.core.model_label, "user_id": request[USER]}
        )

    async def _threads(self, request: web.Request) -> web.Response:
        threads = [t.summary() for t in self.state.threads()]
        return web.json_response({"threads": threads, "seq": self.state.seq})

    async def _thread(self, request: web.Request) -> web.Response:
        thread_id = request.match_info["thread_id"]
        try:
            thread = self.state.thread(thread_id)
        except UnknownThread:
            raise _error(web.HTTPNotFound, "no such thread") from None
        return web.json_response(
            {
                "thread": thread.summary(),
                "messages": [m.model_dump() for m in thread.messages],
                "pins": list(thread.pins),
                "status": self.state.status(thread_id),
                "seq": self.state.seq,
            }
        )

    # --- writes -------------------------------------------------------------------------------
    async def _post_message(self, request: web.Request) -> web.Response:
        if request.content_type != "multipart/form-data":
            body = await self._body(request, PostMessage)
            if (words := command_words(body.text)) is not None:
                return await self._command(body, words, request[USER])
            return await self._accept(body, request[USER], [])
        staging = await asyncio.to_thread(self.files.staging)
        try:
            try:
                upload = await read_upload(request, staging, self._file_cap)
            except UploadError as exc:
                raise _error(_CLIENT_ERRORS.get(exc.status, web.HTTPBadRequest), str(exc)) from None
            fields = {k: v for k, v in upload.fields.items() if v or k != "thread_id"}
            body = _validated(PostWithFiles, lambda: PostWithFiles.model_validate(fields))
            if not body.text.strip() and not upload.files:
                raise _error(web.HTTPBadRequest, "the message is empty")
            return await self._accept(body, request[USER], upload.files)
        finally:
            await asyncio.to_thread(FileStore.discard, staging)

    async def _command(self, body: PostMessage, words: str, user_id: str) -> web.Response:
        """A ``/threadline`` command on the thread the page has open; its answer goes back to
        the person who typed it, as on Slack and Discord."""
        if body.thread_id is not None:
            try:
                self.state.thread(body.thread_id)
            except UnknownThread:
                raise _error(web.HTTPNotFound, "no such thread") from None
        author = body.author(user_id)
        try:
            note = await answer(self.core, words, body.thread_id, self._surface, author)
        except Exception:
            log.exception("/threadline %s in %s failed", words[:40], body.thread_id)
            note = COMMAND_FAILED
        return web.json_response({"thread_id": body.thread_id, "note": note})

    async def _accept(self, body: PostMessage, user_id: str, staged: list[Staged]) -> web.Response:
        author = body.author(user_id)
        known = self.state.by_event(body.event_id)
        if known is not None:  # a retry: the files of the message written the first time
            thread_id, message_id = known
            files = self.state.message(thread_id, message_id).files
        else:
            try:
                thread = (
                    self.state.create_thread(body.text or ", ".join(f.name for f in staged))
                    if body.thread_id is None
                    else self.state.thread(body.thread_id)
                )
            except UnknownThread:
                raise _error(web.HTTPNotFound, "no such thread") from None
            thread_id = thread.id
            files = [await keep(self.files, thread_id, f) for f in staged]
            message_id = self.state.post(
                thread_id,
                author_id=author.id,
                author_name=author.display_name,
                text=body.text,
                event_id=body.event_id,
                files=files,
            ).id
            await self.state.flush()  # an accepted message is on disk, as on a platform
        inbound = Inbound(
            thread_key(thread_id), author, body.text, body.event_id, tuple(map(attachment, files))
        )
        self._spawn(self._answer(inbound, thread_id, await self._admit(inbound, thread_id)))
        return web.json_response({"thread_id": thread_id, "message_id": message_id}, status=202)

    async def _admit(self, inbound: Inbound, thread_id: str) -> Awaitable[None] | None:
        """The core keeps the message (with its delivery id) before the page hears 202."""
        try:
            return await self.core.admit(inbound, self._surface(thread_id))
        except Exception:
            log.exception("accepting a playground message in %s failed", inbound.thread_key)
            raise _error(
                web.HTTPServiceUnavailable, "the message could not be stored; try again"
            ) from None

    async def _post_action(self, request: web.Request) -> web.Response:
        body = await self._body(request, PostAction)
        try:
            self.state.thread(body.thread_id)
        except UnknownThread:
            raise _error(web.HTTPNotFound, "no such thread") from None
        surface = self._surface(body.thread_id)
        user_id = request[USER]
        if (form_id := form_to_open(body.action_id)) is not None:
            opened = await self.core.open_form(form_id, body.author(user_id))
            if isinstance(opened, str):
                return web.json_response({"note": opened})
            return web.json_response({"note": None, "form": form_json(opened)})
        task = self._spawn(
            self._act(body.action_id, body.author(user_id), surface, body.message_id)
        )
        try:
            note = await asyncio.wait_for(asyncio.shield(task), self._action_wait)
        except TimeoutError:
            task.add_done_callback(
                lambda t: self._late_note(t, body.client_id, user_id, body.thread_id)
            )
            return web.json_response({"note": None, "pending": True}, status=202)
        return web.json_response({"note": note, "ask": explain_after(body.action_id)})

    async def _post_explain(self, request: web.Request) -> web.Response:
        """A 👎's "what went wrong?", asked by the page after the click."""
        body = await self._body(request, PostExplain)
        note = await self.core.explain(body.form_id, body.author(request[USER]), body.text)
        return web.json_response({"note": note})

    async def _post_form(self, request: web.Request) -> web.Response:
        """A form an MCP server asks for, sent from the page."""
        body = await self._body(request, PostForm)
        try:
            self.state.thread(body.thread_id)
        except UnknownThread:
            raise _error(web.HTTPNotFound, "no such thread") from None
        surface = self._surface(body.thread_id)
        reply = await self.core.answer_form(
            body.form_id, body.author(request[USER]), body.values, surface
        )
        return web.json_response(
            {"note": reply.note, "errors": dict(reply.errors), "done": reply.done}
        )

    async def _answer(self, inbound: Inbound, thread_id: str, work: Awaitable[None] | None) -> None:
        try:
            if work is not None:
                await work
        except Exception:
            log.exception("answering a playground message in %s failed", inbound.thread_key)
            self.state.set_status(thread_id, None)
            self.hub.publish({"type": "error", "thread_id": thread_id, "text": FAILED})

    async def _act(
        self, action_id: str, actor: Author, surface: PlaygroundSurface, message_id: str | None
    ) -> str | None:
        try:
            return await self.core.on_action(action_id, actor, surface, message_id)
        except Exception:
            log.exception("the click on %r in %s failed", action_id, surface.thread_key)
            return "Something went wrong with that button; the server log has the details."

    def _late_note(
        self, task: asyncio.Task[str | None], client_id: str, user_id: str, thread_id: str
    ) -> None:
        if not task.cancelled() and (note := task.result()):
            self.hub.send_to(
                client_id, user_id, {"type": "note", "thread_id": thread_id, "text": note}
            )

    # --- live updates ---------------------------------------------------------------------------
    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=25.0)
        await ws.prepare(request)
        connection = Connection(ws, request.query.get("client", "")[:64], request[USER])
        self.hub.connections.add(connection)
        pump = asyncio.create_task(connection.pump())
        try:
            async for _ in ws:  # the page sends nothing that matters; this waits for the close
                pass
        finally:
            self.hub.connections.discard(connection)
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        return ws

    # --- plumbing -------------------------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = self.tasks.spawn(coro)
        if task is None:
            raise _error(web.HTTPServiceUnavailable, "the playground is stopping")
        return task

    async def _body(self, request: web.Request, model: type[M]) -> M:
        if request.content_type != "application/json":
            raise _error(web.HTTPUnsupportedMediaType, "send JSON")
        raw = await request.read()
        return _validated(model, lambda: _parsed(model, raw))


def _parsed(model: type[M], raw: bytes) -> M:
    """``raw`` read as ``model``; a lone surrogate escape (``\\ud800``, valid JSON that the
    strict parser refuses) is read as U+FFFD."""
    try:
        return model.model_validate_json(raw)
    except ValidationError:
        try:
            loose = json.loads(raw)
        except ValueError:
            loose = None
        if loose is None:
            raise
        return model.model_validate_json(json.dumps(_valid(loose)))


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid(v) for v in value]
    if isinstance(value, dict):
        return {valid_text(k): _valid(v) for k, v in value.items()}
    return value


class _TooLarge(web.HTTPClientError):
    status_code = 413


_CLIENT_ERRORS: dict[int, type[web.HTTPException]] = {400: web.HTTPBadRequest, 413: _TooLarge}


def _validated(model: type[M], parse: Callable[[], M]) -> M:
    try:
        return parse()
    except ValidationError as exc:
        problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise _error(web.HTTPBadRequest, problem) from None


def _error(kind: type[web.HTTPException], message: str) -> web.HTTPException:
    return kind(text=json.dumps({"error": message}), content_type="application/json")
