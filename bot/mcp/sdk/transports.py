"""How a connection reaches its server, as the pair of message streams the SDK's session takes:

* stdio: our own bridge over :class:`~bot.mcp.process.ServerProcess` (one message a line,
  bounded; a line that is not JSON-RPC is logged and dropped; big lines parsed off the event
  loop). The SDK's own stdio client joins a long line by repeated concatenation, which takes
  tens of seconds of the event loop for a 50 MB result;
* streamable HTTP: the SDK's client, with the configured headers on every request;
* and, around either, :class:`Relay`, which takes the answers to ``tools/list`` for
  itself (the SDK rejects a whole listing when one tool's schema is off, where we fix up or
  skip that one tool), and the tasks the server creates for task-augmented ``tools/call``
  (which the SDK would reject as malformed tool results; see :mod:`bot.mcp.sdk.tasks`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from bot.errors import McpSignInNeeded, McpUnavailable
from bot.mcp.auth import OAuthAccess
from bot.mcp.endpoint import HttpEndpoint, StdioEndpoint
from bot.mcp.process import MessageTooLong, ServerProcess, server_log
from bot.mcp.sdk.oauth import SignInRequired, described, oauth_auth
from bot.mcp.sdk.tasks import TASK_META, TaskBoard

Streams = tuple[Any, Any]
"""What the session reads (messages or exceptions) and what it writes to."""
BUFFER = 16
_THREAD_PARSE_BYTES = 1_000_000


@asynccontextmanager
async def stdio_streams(
    name: str,
    endpoint: StdioEndpoint,
    end: Callable[[str], None],
    exited: Callable[[int | None], None],
) -> AsyncIterator[Streams]:
    """Start the process; ``end`` is told why the conversation ended, ``exited`` the exit code."""
    process = await ServerProcess.spawn(
        name,
        endpoint.command,
        endpoint.args,
        endpoint.env,
        endpoint.cwd,
        endpoint.max_message_bytes,
    )
    to_session, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](BUFFER)
    outgoing, from_session = anyio.create_memory_object_stream[SessionMessage](BUFFER)
    loop = asyncio.get_running_loop()
    pumps = [
        loop.create_task(_read(name, process, to_session, end)),
        loop.create_task(_write(process, from_session, end)),
    ]
    try:
        yield incoming, outgoing
    finally:
        outgoing.close()
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        exited(await process.stop())
        incoming.close()


async def _read(
    name: str, process: ServerProcess, to_session: Any, end: Callable[[str], None]
) -> None:
    log = server_log(name)
    async with to_session:
        while True:
            try:
                line = await process.read_line()
            except MessageTooLong as exc:
                log.warning("[%s] %s: closing the connection", name, exc)
                end(str(exc))
                return
            if line is None:
                end("the server closed its output")
                return
            if not line.strip():
                continue
            message = await _parse(line)
            if message is None:
                shown = line[:200].decode("utf-8", "replace").strip()
                log.warning("[%s] sent a line that is not JSON-RPC (ignored): %r", name, shown)
                continue
            await to_session.send(message)


async def _write(process: ServerProcess, from_session: Any, end: Callable[[str], None]) -> None:
    async with from_session:
        async for item in from_session:
            data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            try:
                await process.write(data.encode())
            except (BrokenPipeError, ConnectionResetError):
                end("the server stopped reading its input")
                return


async def _parse(line: bytes) -> SessionMessage | None:
    def parse() -> SessionMessage | None:
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValidationError:
            return None

    if len(line) > _THREAD_PARSE_BYTES:  # keep the event loop answering while a big one parses
        return await asyncio.to_thread(parse)
    return parse()


class Refusals:
    """The last HTTP status under 500 and above 399 the server answered with (the SDK turns
    each into the same "error response"): ``401`` and ``403`` say a sign-in is missing or not
    enough; and why an OAuth sign-in failed, if one did (the transport only logs it)."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.failure: BaseException | None = None
        self.oauth: OAuthAccess | None = None

    async def seen(self, response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            self.status = response.status_code

    def failed(self, exc: BaseException) -> None:
        self.failure = exc

    def error(self, name: str) -> McpUnavailable | None:
        """The refusal as our error: :class:`McpSignInNeeded` when a sign-in is missing."""
        if isinstance(self.failure, SignInRequired):
            person = self.oauth.person if self.oauth is not None else None
            said = "none yet, or it expired or was revoked"
            if person is None:
                said += f": `threadline mcp login {name}`"
            whose = "this person's" if person else "a"
            return McpSignInNeeded(
                f"{name}: {whose} sign-in is needed ({said})", server=name, person=person
            )
        refused = self.sign_in(name)
        return McpUnavailable(refused) if refused else None

    def sign_in(self, name: str) -> str | None:
        """What the refusal means to the operator, if the server refused."""
        if self.failure is not None and not isinstance(self.failure, SignInRequired):
            return f"{name}: {described(self.failure)}"
        if self.status == 401 and self.oauth is not None:
            return (
                f"{name}: the server asks for a sign-in (HTTP 401), and the OAuth sign-in did"
                " not go through (the log says why)"
            )
        if self.status == 401:
            return (
                f"{name}: the server asks for a sign-in (HTTP 401): give it an [oauth] section"
                f" (then `threadline mcp login {name}`), or a token in its headers"
            )
        if self.status == 403:
            return (
                f"{name}: the server refuses the sign-in (HTTP 403: not allowed, or too few scopes)"
            )
        return None


@asynccontextmanager
async def http_streams(endpoint: HttpEndpoint, refusals: Refusals) -> AsyncIterator[Streams]:
    timeout = httpx2.Timeout(30.0, read=300.0)
    hooks = {"response": [refusals.seen]}
    auth = None
    if endpoint.oauth is not None:
        refusals.oauth = endpoint.oauth
        auth = oauth_auth(endpoint.url, endpoint.oauth, refusals.failed)
    async with (
        httpx2.AsyncClient(
            headers=dict(endpoint.headers), timeout=timeout, event_hooks=hooks, auth=auth
        ) as client,
        streamable_http_client(endpoint.url, http_client=client) as (read, write),
    ):
        yield read, write


class Relay:
    """Passes messages both ways; an answer to ``tools/list`` is kept (:attr:`page`) and the
    session gets a stand-in page: the same names and cursor, each tool taking any object and
    declaring no output schema (so the session neither rejects the page nor checks results
    against a schema we never read). One listing at a time (the caller's lock).

    An answer to a ``tools/call`` that asked for a task, when it is a task, reaches the session
    as an empty tool result carrying the task under :data:`~bot.mcp.sdk.tasks.TASK_META`; a
    ``notifications/tasks/status`` goes to :attr:`tasks` (the session does not know it)."""

    def __init__(self) -> None:
        self.page: Any = None
        """The ``result`` of the last ``tools/list`` answer, as the server sent it."""
        self._listing: set[Any] = set()
        self._tasked: set[Any] = set()
        self.tasks = TaskBoard()

    @asynccontextmanager
    async def around(self, streams: Streams) -> AsyncIterator[Streams]:
        read, write = streams
        to_session, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](BUFFER)
        outgoing, from_session = anyio.create_memory_object_stream[SessionMessage](BUFFER)
        loop = asyncio.get_running_loop()
        pumps = [
            loop.create_task(self._in(read, to_session)),
            loop.create_task(self._out(from_session, write)),
        ]
        try:
            yield incoming, outgoing
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            incoming.close()
            outgoing.close()

    async def _out(self, from_session: Any, write: Any) -> None:
        async with from_session:
            async for item in from_session:
                message = item.message if isinstance(item, SessionMessage) else None
                if isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
                    self._listing.add(message.id)
                elif isinstance(message, types.JSONRPCRequest) and _asks_task(message):
                    self._tasked.add(message.id)
                try:
                    await write.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def _in(self, read: Any, to_session: Any) -> None:
        async with to_session:
            async for item in read:
                message = item.message if isinstance(item, SessionMessage) else None
                if isinstance(message, types.JSONRPCResponse) and message.id in self._listing:
                    self._listing.discard(message.id)
                    self.page = message.result
                    message.result = _stand_in(message.result)
                elif isinstance(message, types.JSONRPCResponse) and message.id in self._tasked:
                    self._tasked.discard(message.id)
                    message.result = _task_stand_in(message.result)
                elif isinstance(message, types.JSONRPCError):
                    self._listing.discard(message.id)
                    self._tasked.discard(message.id)
                elif (
                    isinstance(message, types.JSONRPCNotification)
                    and message.method == "notifications/tasks/status"
                ):
                    self.tasks.announced(message.params)
                    continue
                try:
                    await to_session.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


def _stand_in(result: Any) -> dict[str, Any]:
    page = result if isinstance(result, dict) else {}
    listed = page.get("tools")
    tools: list[Any] = listed if isinstance(listed, list) else []
    names = [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    cursor = page.get("nextCursor")
    stand_in: dict[str, Any] = {
        "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]
    }
    if isinstance(cursor, str):
        stand_in["nextCursor"] = cursor
    return stand_in


def _asks_task(request: types.JSONRPCRequest) -> bool:
    params = request.params
    return request.method == "tools/call" and isinstance(params, dict) and "task" in params


def _task_stand_in(result: Any) -> Any:
    """A created task as an empty tool result carrying it; any other answer as it came."""
    if (
        isinstance(result, dict)
        and isinstance(result.get("task"), dict)
        and "content" not in result
    ):
        return {"content": [], "_meta": {TASK_META: result["task"]}}
    return result
