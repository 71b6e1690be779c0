"""The fake Discord's gateway: one WebSocket per connection, sessions that survive a drop.

HELLO → IDENTIFY (token, intents) → READY (``session_id``, ``resume_gateway_url``) and a
GUILD_CREATE per guild; HEARTBEAT → HEARTBEAT_ACK; RESUME replays what the session missed and
ends with RESUMED, or answers INVALID_SESSION. Close codes: 4004 (bad token), 4010 (an invalid
``shard``), 4014 (a privileged intent the application does not have). Frames are plain JSON text;
:meth:`Gateway.send_frame` sends any text as a frame, or bytes through the connection's
``zlib-stream`` (as Discord compresses), for frames that do not decode.

Sharding as on Discord: an IDENTIFY with ``shard: [id, count]`` gets the guilds whose
``(guild_id >> 22) % count == id`` (in READY, GUILD_CREATE and every later event of theirs) and,
on shard 0 only, direct messages; ``Session.shard`` records what each connection identified as.

Dispatches follow the session's intents: guild and direct messages need their intents, and
without MESSAGE_CONTENT a message's content is blank unless it is a DM, mentions the bot or is
the bot's own — as on Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.discord import payloads
from tests.fakes.discord.world import World

HELLO, HEARTBEAT, IDENTIFY, RESUME, INVALID_SESSION, HEARTBEAT_ACK = 10, 1, 2, 6, 9, 11
GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT = 1 << 0, 1 << 9, 1 << 12, 1 << 15
APP_MESSAGE_CONTENT = (1 << 18) | (1 << 19)
Frame = dict[str, Any]
Raw = str | bytes
"""A frame sent as it is: text, or bytes to compress (see :meth:`Gateway.send_frame`)."""


@dataclass
class Session:
    id: str
    intents: int
    events: list[Frame] = field(default_factory=list)
    ws: web.WebSocketResponse | None = None
    queue: asyncio.Queue[Frame | Raw | None] | None = None
    alive: bool = True
    shard: tuple[int, int] | None = None
    """``(id, count)`` from IDENTIFY; None: unsharded (every guild, and DMs)."""

    def sees(self, guild_id: int | None) -> bool:
        """Whether events of ``guild_id`` (None: a DM) go to this session's shard."""
        if self.shard is None:
            return True
        shard_id, count = self.shard
        return shard_id == 0 if guild_id is None else (guild_id >> 22) % count == shard_id

    @property
    def seq(self) -> int:
        return len(self.events)


@dataclass
class Connection:
    path: str
    session: Session | None = None
    heartbeats: int = 0
    close_code: int | None = None


class Gateway:
    def __init__(self, world: World, token: str) -> None:
        self.world = world
        self.token = token
        self.sessions: dict[str, Session] = {}
        self.connections: list[Connection] = []
        self.heartbeat_interval_ms = 41_250
        self.redeliver_on_resume = 0
        """Replay this many already-delivered events on the next RESUME (a redelivery)."""
        self.refuse_resume = False
        self.resume_url = ""
        self._ids = itertools.count(1)
        world.listeners.append(self._on_world_event)

    # --- the socket ---------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        connection = Connection(request.path)
        self.connections.append(connection)
        await ws.send_json({"op": HELLO, "d": {"heartbeat_interval": self.heartbeat_interval_ms}})
        pump: asyncio.Task[None] | None = None
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                started = await self._on_frame(ws, connection, frame)
                if started is not None:
                    pump = asyncio.create_task(self._pump(ws, started))
        finally:
            if connection.session is not None and connection.session.ws is ws:
                connection.session.ws = None
                if ws.close_code == 1000 or ws.close_code == 1001:
                    connection.session.alive = False  # a clean close ends the session
            if pump is not None:
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump
            connection.close_code = connection.close_code or ws.close_code
            self.world.changed()
        return ws

    async def _on_frame(
        self, ws: web.WebSocketResponse, connection: Connection, frame: Frame
    ) -> Session | None:
        op, data = frame.get("op"), frame.get("d") or {}
        if op == HEARTBEAT:
            connection.heartbeats += 1
            await ws.send_json({"op": HEARTBEAT_ACK})
            self.world.changed()
        elif op == IDENTIFY:
            return await self._identify(ws, connection, data)
        elif op == RESUME:
            return await self._resume(ws, connection, data)
        return None

    async def _identify(
        self, ws: web.WebSocketResponse, connection: Connection, data: Frame
    ) -> Session | None:
        if data.get("token") != self.token:
            connection.close_code = 4004
            await ws.close(code=4004, message=b"Authentication failed.")
            return None
        intents = int(data.get("intents", 0))
        if intents & MESSAGE_CONTENT and not self.world.app_flags & APP_MESSAGE_CONTENT:
            connection.close_code = 4014
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return None
        shard = data.get("shard")
        if shard is not None and not _valid_shard(shard):
            connection.close_code = 4010
            await ws.close(code=4010, message=b"Invalid shard.")
            return None
        session = Session(
            f"session-{next(self._ids)}", intents, shard=tuple(shard) if shard else None
        )
        self.sessions[session.id] = session
        self._attach(session, ws, connection)
        ready = {
            "v": 10,
            "user": payloads.user(self.world.bot),
            "session_id": session.id,
            "resume_gateway_url": self.resume_url,
            "guilds": [
                {"id": str(g), "unavailable": True} for g in self.world.guilds if session.sees(g)
            ],
            "application": {"id": str(self.world.app_id), "flags": self.world.app_flags},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "user_settings": {},
            "session_type": "normal",
        }
        if session.shard is not None:
            ready["shard"] = list(session.shard)
        self._enqueue(session, "READY", ready)
        for guild_id, guild in self.world.guilds.items():
            if session.sees(guild_id):
                self._enqueue(session, "GUILD_CREATE", payloads.guild_create(guild, self.world))
        return session

    async def _resume(
        self, ws: web.WebSocketResponse, connection: Connection, data: Frame
    ) -> Session | None:
        session = self.sessions.get(str(data.get("session_id")))
        valid = session is not None and session.alive and data.get("token") == self.token
        if not valid or self.refuse_resume or session is None:
            await ws.send_json({"op": INVALID_SESSION, "d": False})
            return None
        start = max(0, int(data.get("seq") or 0) - self.redeliver_on_resume)
        self.redeliver_on_resume = 0
        self._attach(session, ws, connection)
        assert session.queue is not None
        for frame in session.events[start:]:
            session.queue.put_nowait(frame)
        self._enqueue(session, "RESUMED", {}, record=False)
        return session

    def _attach(self, session: Session, ws: web.WebSocketResponse, connection: Connection) -> None:
        session.ws = ws
        session.queue = asyncio.Queue()
        connection.session = session

    async def _pump(self, ws: web.WebSocketResponse, session: Session) -> None:
        queue = session.queue
        assert queue is not None
        deflate = zlib.compressobj()
        while (frame := await queue.get()) is not None:
            if ws.closed:
                return
            with contextlib.suppress(ConnectionError):
                if isinstance(frame, bytes):  # one zlib-stream message, as Discord sends it
                    await ws.send_bytes(deflate.compress(frame) + deflate.flush(zlib.Z_SYNC_FLUSH))
                else:
                    await ws.send_str(frame if isinstance(frame, str) else json.dumps(frame))
            self.world.changed()

    # --- dispatching --------------------------------------------------------------------------
    def _enqueue(self, session: Session, event: str, data: Any, *, record: bool = True) -> None:
        frame: Frame = {"op": 0, "t": event, "s": session.seq + (1 if record else 0), "d": data}
        if record:
            session.events.append(frame)
        else:
            frame["s"] = None
        if session.ws is not None and session.queue is not None:
            session.queue.put_nowait(frame)

    def dispatch(
        self, event: str, data: Frame, *, needs: int = 0, guild_id: int | None = None
    ) -> None:
        """Send ``event`` (of ``guild_id``; None: a DM) to every live session whose intents
        include ``needs`` and whose shard has that guild."""
        for session in self.sessions.values():
            if session.alive and session.intents & needs == needs and session.sees(guild_id):
                self._enqueue(session, event, self._visible(session, event, data))

    def send_raw(self, event: str, data: Any) -> None:
        """Send ``data`` exactly as given (a malformed event, say) to every live session."""
        for session in self.sessions.values():
            if session.alive:
                self._enqueue(session, event, data)

    def send_frame(self, frame: Raw) -> None:
        """Send ``frame`` as it is to every live session: a ``str`` as a text frame (``[]``, not
        JSON at all…), ``bytes`` compressed into a binary frame (bytes that are not UTF-8)."""
        for session in self.sessions.values():
            if session.alive and session.ws is not None and session.queue is not None:
                session.queue.put_nowait(frame)

    def _visible(self, session: Session, event: str, data: Frame) -> Frame:
        if event != "MESSAGE_CREATE" or session.intents & MESSAGE_CONTENT:
            return data
        bot = str(self.world.bot.id)
        readable = (
            "guild_id" not in data
            or data["author"]["id"] == bot
            or any(u["id"] == bot for u in data["mentions"])
        )
        if readable:
            return data
        return {**data, "content": "", "embeds": [], "attachments": [], "components": []}

    def _on_world_event(self, event: str, ref: Frame) -> None:
        world = self.world
        if event in ("MESSAGE_CREATE", "MESSAGE_UPDATE"):
            message = world.messages[ref["message"]]
            needs = GUILD_MESSAGES if message.guild_id is not None else DIRECT_MESSAGES
            data = payloads.message(message, world, gateway=True)
            self.dispatch(event, data, needs=needs, guild_id=message.guild_id)
        elif event in ("THREAD_CREATE", "THREAD_UPDATE"):
            data = payloads.channel(world.channels[ref["thread"]], world)
            if event == "THREAD_CREATE":
                data["newly_created"] = ref.get("newly_created", False)
            self.dispatch(
                event, data, needs=GUILDS, guild_id=world.channels[ref["thread"]].guild_id
            )
        elif event == "INTERACTION_CREATE":
            interaction = world.interactions[ref["token"]]
            self.dispatch(
                event, payloads.interaction(interaction, world), guild_id=interaction.guild_id
            )

    # --- what a test does ---------------------------------------------------------------------
    async def drop(self, code: int = 4000) -> None:
        """Cut every open connection with a resumable close code (the client resumes)."""
        for session in self.sessions.values():
            if session.ws is not None:
                ws, session.ws = session.ws, None
                await ws.close(code=code, message=b"dropped by the test")

    async def invalidate(self) -> None:
        """Tell every connected session it is invalid (the client identifies anew)."""
        for session in self.sessions.values():
            if session.ws is not None:
                session.alive = False
                await session.ws.send_json({"op": INVALID_SESSION, "d": False})

    def live_sessions(self) -> list[Session]:
        return [s for s in self.sessions.values() if s.alive and s.ws is not None]

    async def close(self) -> None:
        for session in self.sessions.values():
            if session.ws is not None:
                await session.ws.close(code=1001, message=b"fake shutting down")


def _valid_shard(shard: Any) -> bool:
    """``[id, count]`` with ``0 <= id < count`` (Discord closes 4010 otherwise)."""
    return (
        isinstance(shard, list)
        and len(shard) == 2
        and all(isinstance(n, int) for n in shard)
        and 0 <= shard[0] < shard[1]
    )
