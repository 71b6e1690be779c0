"""The session's callbacks for what a server asks of the client (elicitation, sampling, roots),
translated to and from :mod:`bot.mcp.asking`, and the calls they belong to.

The protocol does not say which of the client's requests a server's request serves, so each
running call is registered with its :class:`~bot.mcp.asking.Asker` (:meth:`Calls.running`): a
request made while the calls running on the connection all belong to one thread goes to the
newest of them; while calls of several threads run, it cannot be told apart and is refused
(the server gets an error, the log says why); with none running, the connection's idle asker
answers. While a person is asked, the call's own time limit is held (a form takes minutes).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import logging
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import mcp_types as types
from mcp.client.session import ClientRequestContext

from bot.mcp.asking import Asker, FormAsked, Picture, Refused, SampleAsked, Turn
from bot.mcp.form_schema import BadSchema, Form

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_IMAGE_TEXT = 100 * 1024 * 1024 * 4 // 3
"""The base64 text of an image in a sampling request is not decoded past the largest
``image_max_bytes`` (the sampler holds each image to the configured one)."""


@dataclass
class Running:
    tool: str
    asker: Asker
    whose: str
    """The thread the call runs for ("" outside a thread)."""
    timer: asyncio.Timeout | None = None
    asking: int = 0
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """The call is over: what it asked is withdrawn (its card closed)."""


@dataclass
class Calls:
    name: str
    idle: Asker
    timeout_s: float
    local: bool
    """The server runs here (stdio): it is given the thread's workspace as its root."""
    _running: dict[int, Running] = field(default_factory=dict)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    _asking: set[asyncio.Task[Any]] = field(default_factory=set)

    @contextmanager
    def running(self, tool: str, asker: Asker | None, whose: str) -> Iterator[Running]:
        entry = Running(tool, asker or self.idle, whose)
        key = next(self._ids)
        self._running[key] = entry
        try:
            yield entry
        finally:
            entry.ended.set()
            del self._running[key]

    def _owner(self, what: str) -> Running | None:
        """The call a request belongs to; raises :class:`Refused` when it cannot be told."""
        running = list(self._running.values())
        if not running:
            return None
        if len({r.whose for r in running}) > 1:
            log.warning(
                "[%s] asked for %s while calls of %d threads ran: refused (it cannot be told"
                " which call asks)",
                self.name,
                what,
                len({r.whose for r in running}),
            )
            raise Refused(
                f"{what} refused: calls of several threads are running on this server and the"
                " request does not say which one it serves"
            )
        return running[-1]

    async def _while_running(self, owner: Running | None, work: Coroutine[Any, Any, T]) -> T | None:
        """``work`` (asking a person) while the call lasts, its time limit held meanwhile;
        None when the call ended first (``work`` is cancelled: its card says so). The work is a
        task of its own, so that it closes what it showed even when the session's handler
        is cancelled under it."""
        task = asyncio.ensure_future(work)
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)
        if owner is None:
            return await asyncio.shield(task)
        owner.asking += 1
        if owner.timer is not None and not owner.ended.is_set():
            owner.timer.reschedule(None)
        ended = asyncio.ensure_future(owner.ended.wait())
        try:
            await asyncio.wait({task, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not task.done():
                task.cancel()
            owner.asking -= 1
            if owner.asking == 0 and owner.timer is not None and not owner.ended.is_set():
                owner.timer.reschedule(asyncio.get_running_loop().time() + self.timeout_s)
        if task.cancelled() or not task.done():
            return None
        return task.result()

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        try:
            owner = self._owner("a form")
        except Refused as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        asker = owner.asker if owner else self.idle
        tool = owner.tool if owner else ""
        if isinstance(params, types.ElicitRequestURLParams):
            asked = FormAsked(self.name, tool, params.message, url=params.url)
        else:
            try:
                form = Form.read(params.message, params.requested_schema)
            except BadSchema as exc:
                log.warning("[%s] asked for a form it describes badly: %s", self.name, exc)
                await asker.note(f"`{self.name}` asked for a form this client cannot show: {exc}")
                return types.ErrorData(
                    code=types.INVALID_PARAMS, message=f"the requested schema is refused: {exc}"
                )
            asked = FormAsked(self.name, tool, params.message, form=form)
        answer = await self._while_running(owner, asker.elicit(asked))
        if answer is None:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action=answer.action, content=answer.content)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        try:
            owner = self._owner("a model's answer")
            asker = owner.asker if owner else self.idle
            asked = SampleAsked(
                self.name,
                owner.tool if owner else "",
                _turns(params),
                params.system_prompt or "",
                params.max_tokens,
            )
            sampled = await self._while_running(owner, asker.sample(asked))
        except Refused as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        if sampled is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="the call ended first")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=sampled.text),
            model=sampled.model,
            stop_reason=sampled.stop_reason,
        )

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        try:
            owner = self._owner("its roots")
        except Refused as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        if owner is None or not self.local:
            return types.ListRootsResult(roots=[])
        found = [
            types.Root(uri=path.resolve().as_uri(), name=path.name or "workspace")
            for path in owner.asker.roots()
        ]
        return types.ListRootsResult(roots=found)


def _turns(params: types.CreateMessageRequestParams) -> tuple[Turn, ...]:
    """The request's messages: their text, and their images decoded (whether the thread's
    model may see them is the sampler's to say)."""
    turns: list[Turn] = []
    for message in params.messages:
        texts: list[str] = []
        images: list[Picture] = []
        for block in message.content_as_list:
            match block:
                case types.TextContent():
                    texts.append(block.text)
                case types.ImageContent():
                    images.append(_picture(block))
                case types.AudioContent():
                    raise Refused("audio cannot be sampled: this client sends text and images")
                case _:
                    kind = getattr(block, "type", "?")
                    raise Refused(f"only text and images can be sampled, not {kind}")
        turns.append(Turn(message.role, "\n".join(texts), tuple(images)))
    if not turns:
        raise Refused("a sampling request without messages")
    return tuple(turns)


def _picture(block: types.ImageContent) -> Picture:
    if len(block.data) > MAX_IMAGE_TEXT:
        raise Refused(f"an image of more than {MAX_IMAGE_TEXT * 3 // 4} bytes cannot be sampled")
    try:
        data = base64.b64decode(block.data, validate=True)
    except binascii.Error:
        raise Refused(f"an image ({block.mime_type}) is not valid base64") from None
    return Picture(block.mime_type, data)


def callbacks(calls: Calls) -> dict[str, Any]:
    """The session's keyword arguments that declare and answer the three capabilities."""
    return {
        "elicitation_callback": calls.elicit,
        "sampling_callback": calls.sample,
        "list_roots_callback": calls.roots,
    }
