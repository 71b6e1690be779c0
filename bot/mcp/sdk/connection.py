"""A :class:`Connection` is one live session with one server, over stdio or streamable HTTP
(see :mod:`bot.mcp.sdk.transports`).

The SDK's task groups must be entered and left by the same task, so each connection is owned
by one task that opens the transport and the session, runs the ``initialize`` handshake, and
holds them until :meth:`Connection.aclose` or until the server goes away. Everything the SDK
raises is turned into :class:`~bot.errors.McpError` and its subclasses.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from bot.errors import McpError, McpTimeout, McpUnavailable
from bot.mcp.asking import Asker, NobodyAsks, Output, Picture, Returned
from bot.mcp.endpoint import Endpoint, RemoteTool, StdioEndpoint, remote_tools
from bot.mcp.process import server_log
from bot.mcp.sdk.asks import Calls, Running, callbacks
from bot.mcp.sdk.tasks import TTL_MS, TaskStatus, created_task, follow
from bot.mcp.sdk.transports import (
    Refusals,
    Relay,
    Streams,
    http_streams,
    stdio_streams,
)

CLIENT = types.Implementation(name="threadline", version="0.1")


class Progress(Protocol):
    """Hears how far a call got: progress, total (if known), message (if any)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


MAX_PAGES = 100


class Connection:
    def __init__(
        self,
        name: str,
        timeout_s: float,
        on_tools_changed: Callable[[], None],
        calls: Calls | None = None,
    ) -> None:
        self.name = name
        self.timeout_s = timeout_s
        """For the handshake and for each request."""
        self._log = server_log(name)
        self._on_tools_changed = on_tools_changed
        self._session: ClientSession | None = None
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.ended: str | None = None
        """Why the connection ended, once it has."""
        self.closed = asyncio.Event()
        self._relay = Relay()
        self._refusals = Refusals()
        self._listing = asyncio.Lock()
        self._calls = calls or Calls(name, NobodyAsks(), timeout_s, local=False)
        """The calls running, and who answers what the server asks during each."""
        self.server_label = ""
        """The server's name and version and the protocol version agreed, once connected."""
        self.task_calls = False
        """The server declares task-augmented ``tools/call`` (``tasks.requests.tools.call``)."""
        self._task_cancel = False
        self._as_tasks: set[str] = set()
        """The tools called as tasks (their ``execution.taskSupport`` is ``required``)."""
        self._cancelling: set[asyncio.Task[Any]] = set()

    @classmethod
    async def open(
        cls,
        name: str,
        endpoint: Endpoint,
        timeout_s: float,
        on_tools_changed: Callable[[], None],
        idle: Asker | None = None,
    ) -> Connection:
        """Start the server (or reach it) and run the handshake within ``timeout_s`` seconds.
        ``idle`` answers what the server asks while none of the calls runs (declines)."""
        local = isinstance(endpoint, StdioEndpoint)
        calls = Calls(name, idle or NobodyAsks(), timeout_s, local=local)
        connection = cls(name, timeout_s, on_tools_changed, calls)
        connection._task = asyncio.get_running_loop().create_task(
            connection._own(endpoint), name=f"mcp:{name}"
        )
        try:
            await asyncio.shield(connection._ready)
        except BaseException:
            await connection.aclose()
            raise
        return connection

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._stop.is_set()

    async def aclose(self) -> None:
        self._stop.set()
        if self._task is not None:
            if not self._ready.done():  # still in the handshake: stop waiting for it
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await asyncio.gather(*self._cancelling, return_exceptions=True)

    async def list_tools(self) -> list[RemoteTool]:
        """Every page of the listing; a tool the server describes badly is skipped (logged)."""
        session = self._live()
        found: list[RemoteTool] = []
        cursor: str | None = None
        async with self._listing:
            for _ in range(MAX_PAGES):
                page = await self._request(
                    session.list_tools(params=types.PaginatedRequestParams(cursor=cursor)),
                    "tools/list",
                )
                raw = self._relay.page if isinstance(self._relay.page, dict) else {}
                tools, problems = remote_tools(raw.get("tools"), tasks=self.task_calls)
                for problem in problems:
                    self._log.warning("[%s] tools/list: %s", self.name, problem)
                found.extend(tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        self._as_tasks = {t.name for t in found if t.task_required and not t.unavailable}
        return found

    async def run(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        asker: Asker | None = None,
        whose: str = "",
        status: TaskStatus | None = None,
    ) -> Output:
        """The tool's output (what the model reads, what only people see, its images), and
        whether the server says it failed (``isError``).
        With ``progress``, the request carries a progress token and each progress notification
        the server sends for it is passed on. Cancelling the call (Stop) sends
        ``notifications/cancelled`` to the server. ``asker`` answers what the server asks
        during the call (for the thread ``whose``); its time limit waits while a person is.
        A tool that can only be called as a task is (:mod:`bot.mcp.sdk.tasks`): ``status``
        hears the task's status while it runs, and cancelling the call cancels the task."""
        session = self._live()
        with self._calls.running(tool, asker, whose) as running:
            if tool in self._as_tasks:
                result = await self._as_task(session, tool, arguments, progress, running, status)
            else:
                pending = session.call_tool(tool, arguments, progress_callback=progress)
                result = await self._request(pending, tool, running)
        if not isinstance(result, types.CallToolResult):
            raise McpError(
                f"{self.name}: {tool} answered with a {type(result).__name__}, not a tool result"
            )
        return output(result)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        asker: Asker | None = None,
        whose: str = "",
    ) -> tuple[str, bool]:
        """:meth:`run`, as the text the model reads and whether the call failed."""
        out = await self.run(tool, arguments, progress, asker, whose)
        return out.text, out.failed

    async def _as_task(
        self,
        session: ClientSession,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None,
        running: Running,
        status: TaskStatus | None,
    ) -> Any:
        params = types.CallToolRequestParams(
            name=tool, arguments=arguments, task=types.TaskMetadata(ttl=TTL_MS)
        )
        pending = session.send_request(
            types.CallToolRequest(params=params), types.CallToolResult, progress_callback=progress
        )
        answer = await self._request(pending, tool, running)
        task = created_task(answer)
        if task is None:  # the server answered at once
            return answer
        self._log.info("[%s] %s runs as task %s", self.name, tool, task.task_id)

        async def get(task_id: str) -> types.Task:
            request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
            found: types.GetTaskResult = await self._request(
                session.send_request(request, types.GetTaskResult), f"{tool}: tasks/get"
            )
            return found

        async def fetch(task_id: str) -> types.CallToolResult:
            params = types.GetTaskPayloadRequestParams(task_id=task_id)
            request = types.GetTaskPayloadRequest(params=params)
            pending = session.send_request(request, types.CallToolResult)
            result: types.CallToolResult = await self._request(
                pending, f"{tool}: tasks/result", running
            )
            return result

        over = False
        try:
            result = await follow(
                f"{self.name}: {tool}", task, self._relay.tasks, get, fetch, status
            )
            over = True
            return result
        finally:
            if not over:
                self._cancel_task(session, tool, task.task_id)

    def _cancel_task(self, session: ClientSession, tool: str, task_id: str) -> None:
        """Send ``tasks/cancel`` for a task whose call ended first (in the background: Stop
        does not wait for the server's answer)."""
        if not self._task_cancel:
            self._log.info(
                "[%s] %s: task %s left running (the server does not declare tasks/cancel)",
                self.name,
                tool,
                task_id,
            )
            return

        async def cancel() -> None:
            request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
            try:
                await self._request(
                    session.send_request(request, types.CancelTaskResult), f"{tool}: tasks/cancel"
                )
            except McpError as exc:
                self._log.warning("[%s] could not cancel task %s: %s", self.name, task_id, exc)
            else:
                self._log.info("[%s] %s: task %s cancelled", self.name, tool, task_id)

        job = asyncio.get_running_loop().create_task(cancel())
        self._cancelling.add(job)
        job.add_done_callback(self._cancelling.discard)

    def _live(self) -> ClientSession:
        if self._session is None or self._stop.is_set():
            raise McpUnavailable(f"{self.name}: not connected ({self.ended or 'starting'})")
        return self._session

    async def _request(self, pending: Any, what: str, running: Running | None = None) -> Any:
        timeout = self.timeout_s
        self._refusals.status = None
        self._refusals.failure = None
        try:
            async with asyncio.timeout(timeout) as timer:
                if running is not None:
                    running.timer = timer
                return await pending
        except TimeoutError:
            raise McpTimeout(f"{self.name}: no answer to {what} within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                raise McpTimeout(f"{self.name}: no answer to {what} within {timeout:g} s") from None
            if exc.code == types.CONNECTION_CLOSED:
                if (refused := self._refusals.error(self.name)) is not None:
                    self._end(str(refused))
                    raise refused from None
                self._end(self.ended or "the connection closed")
                raise McpUnavailable(f"{self.name}: {self.ended}") from None
            if (refused := self._refusals.error(self.name)) is not None:
                raise refused from None
            raise McpError(
                f"{self.name}: {what} failed: {exc.message} (error {exc.code})"
            ) from None
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "result"
            self._log.warning(
                "[%s] malformed answer to %s: %s: %s", self.name, what, where, first["msg"]
            )
            raise McpError(
                f"{self.name}: malformed answer to {what} ({where}: {first['msg']})"
            ) from None
        except (httpx2.HTTPError, OSError) as exc:
            self._end(f"{type(exc).__name__}: {exc}")
            raise McpUnavailable(f"{self.name}: {self.ended}") from None
        except RuntimeError as exc:  # a result shape this client does not take (input required…)
            raise McpError(f"{self.name}: {what}: {exc}") from None

    def _end(self, why: str) -> None:
        if self.ended is None:
            self.ended = why
        self._stop.set()

    async def _own(self, endpoint: Endpoint) -> None:
        timeout = self.timeout_s
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(endpoint))
                session = ClientSession(
                    read,
                    write,
                    message_handler=self._on_message,
                    client_info=CLIENT,
                    **callbacks(self._calls),
                )
                await stack.enter_async_context(session)
                try:
                    async with asyncio.timeout(timeout):
                        agreed = await session.initialize()
                except TimeoutError:
                    raise McpTimeout(
                        f"{self.name}: no answer to initialize within {timeout:g} s"
                    ) from None
                self._session = session
                self.server_label = _label(agreed)
                tasks = agreed.capabilities.tasks
                requests = tasks.requests if tasks is not None else None
                tools = requests.tools if requests is not None else None
                self.task_calls = tools is not None and tools.call is not None
                self._task_cancel = tasks is not None and tasks.cancel is not None
                self._ready.set_result(None)
                await self._stop.wait()
        except asyncio.CancelledError:
            self._ready.cancel()
            raise
        except BaseException as exc:  # the handshake failed, or the transport broke
            refused = self._refusals.error(self.name)
            error = refused or _translate(self.name, exc, self.ended)
            if not self._ready.done():
                self._ready.set_exception(error)
            else:
                self._end(str(error))
        finally:
            self._session = None
            self._end(self.ended or "closed")
            self.closed.set()

    @asynccontextmanager
    async def _transport(self, endpoint: Endpoint) -> AsyncIterator[Streams]:
        opened: contextlib.AbstractAsyncContextManager[Streams]
        if isinstance(endpoint, StdioEndpoint):
            opened = stdio_streams(self.name, endpoint, self._end, self._exited)
        else:
            opened = http_streams(endpoint, self._refusals)
        async with opened as streams, self._relay.around(streams) as relayed:
            yield relayed

    def _exited(self, code: int | None) -> None:
        if code not in (None, 0) and self.ended in (None, "the server closed its output"):
            self.ended = f"the server exited with code {code}"

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message, types.ToolListChangedNotification
        ):
            self._on_tools_changed()
        elif isinstance(message, Exception):
            self._log.warning("[%s] unreadable message: %s", self.name, message)


def _audience(block: Any) -> tuple[bool, bool]:
    """Whether the block is for the model, and for people (``annotations.audience``)."""
    annotations = getattr(block, "annotations", None)
    audience = getattr(annotations, "audience", None) if annotations is not None else None
    if not audience:
        return True, True
    return "assistant" in audience, "user" in audience


def output(result: types.CallToolResult) -> Output:
    """A tool result split by audience: text for the model, text for people alone, images."""
    parts: list[str] = []
    public: list[str] = []
    shown: list[str] = []
    pictures: list[Picture] = []
    files: list[Returned] = []
    for block in result.content:
        model, people = _audience(block)
        if isinstance(block, types.ImageContent):
            try:
                data = base64.b64decode(block.data, validate=True)
            except (binascii.Error, ValueError):
                parts.append(f"[{block.mime_type} image that is not valid base64, dropped]")
                continue
            pictures.append(Picture(block.mime_type, data, model, people))
        elif (found := _file_of(block)) is not None:
            if isinstance(found, str):
                parts.append(found)
            else:
                files.append(Returned(found.name, found.mime, found.data, model, people))
        elif not model:
            if people and isinstance(block, types.TextContent):
                shown.append(block.text)
        else:
            parts.append(_text_of(block))
            if people:
                public.append(parts[-1])
    text = "\n".join(p for p in parts if p)
    nothing = not parts and not shown and not pictures and not files
    if nothing and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    hidden = len(public) < len(parts)
    for_people = "\n".join(p for p in public if p) if hidden else text
    return Output(
        text,
        bool(result.is_error),
        tuple(shown),
        tuple(pictures),
        for_people,
        hidden,
        tuple(files),
    )


def _file_of(block: Any) -> Returned | str | None:
    """The file a block carries (an embedded resource's bytes, audio), a note when its bytes
    are not valid base64, or None for any other block."""
    match block:
        case types.AudioContent(data=data, mime_type=mime):
            name = ""
        case types.EmbeddedResource(resource=types.BlobResourceContents() as resource):
            data, mime = resource.blob, resource.mime_type or "application/octet-stream"
            name = unquote(urlsplit(str(resource.uri)).path.rstrip("/").rsplit("/", 1)[-1])
        case _:
            return None
    try:
        return Returned(name, mime, base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        what = f"{mime} file {name}" if name else f"{mime} file"
        return f"[{what} that is not valid base64, dropped]"


def render(result: types.CallToolResult) -> str:
    """A tool result as the text the model reads (every block, whatever its audience)."""
    parts = [_text_of(block) for block in result.content]
    if not any(parts) and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False)]
    return "\n".join(p for p in parts if p)


def _text_of(block: Any) -> str:
    parts: list[str] = []
    match block:
        case types.TextContent(text=text):
            parts.append(text)
        case types.ImageContent(mime_type=mime) | types.AudioContent(mime_type=mime):
            parts.append(f"[{mime} content, not shown]")
        case types.EmbeddedResource(resource=types.TextResourceContents(text=text)):
            parts.append(text)
        case types.EmbeddedResource(resource=resource):
            parts.append(f"[resource {resource.uri}, not shown]")
        case types.ResourceLink(uri=uri, name=name):
            parts.append(f"[link: {name} {uri}]")
    return "".join(parts)


def _label(agreed: types.InitializeResult) -> str:
    info = agreed.server_info
    return f"{info.name} {info.version}, protocol {agreed.protocol_version}"


def _translate(name: str, exc: BaseException, ended: str | None) -> BaseException:
    """What the handshake's failure (or the transport's end) means, as our own error."""
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        return _translate(name, inner[0], ended) if inner else exc
    if isinstance(exc, McpError | asyncio.CancelledError):
        return exc
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return McpUnavailable(
                f"{name}: {ended or 'the connection closed'} before answering initialize"
            )
        return McpError(f"{name}: initialize failed: {exc.message} (error {exc.code})")
    if isinstance(exc, httpx2.HTTPError | OSError):
        return McpUnavailable(f"{name}: {type(exc).__name__}: {exc}")
    if isinstance(exc, ValidationError):
        return McpError(f"{name}: malformed answer to initialize")
    return McpError(f"{name}: {type(exc).__name__}: {exc}")
