"""The running process: the core, the HTTP server, and the configured platform adapters."""

from __future__ import annotations

import asyncio
import hmac
import logging
from typing import Protocol

from aiohttp import web

from adapters.http_port import bind_problem
from adapters.mcp_sign_in import sign_in_callback
from adapters.platforms import Platforms
from adapters.playground import PlaygroundAdapter
from bot.config import Settings
from bot.core import Core
from bot.infra import metrics
from bot.infra.clock import Clock
from bot.llm.model import Model
from bot.mcp.auth import CALLBACK_PATH
from bot.mcp.servers import McpServers
from bot.scheduler.timer import Timer

log = logging.getLogger(__name__)


class Adapter(Protocol):
    name: str
    """How ``/healthz`` and ``/readyz`` name it (``slack``, ``discord``, ``playground``)."""

    def install(self, app: web.Application) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def problem(self) -> str | None:
        """Why it cannot take messages now (disconnected, reconnecting); None when it can."""
        ...


class Runtime:
    def __init__(
        self,
        settings: Settings,
        *,
        platforms: Platforms | None = None,
        clock: Clock | None = None,
        model: Model | None = None,
    ):
        self.settings = settings
        self.platforms = platforms if platforms is not None else Platforms.load()
        self.started = False
        self.core = Core.create(settings, clock=clock, model=model)
        self.mcp = McpServers(
            settings,
            self.core.clock,
            asking=self.core.asking,
            waits=self.core.store,
            resume=self.core.signed_in,
            keep=self.core.store,
            expire=self.core.decisions.sign_in_expires,
            peers=self.core.peers,
            take_over=self.core.sign_in_take_over,
        )
        self.mcp.install(self.core.tools)
        self.adapters: list[Adapter] = []
        self.timer = Timer(self.core.scheduler, self.core.clock)
        self._runner: web.AppRunner | None = None
        self.http_port: int | None = None

    async def start(self) -> None:
        """Start everything; on any failure, stop what was started (nothing is left running)."""
        adapters = self._platform_adapters()  # configuration errors surface here, before any I/O
        if self.settings.playground_enabled(self.platforms.configured):
            token = self.settings.playground_token
            adapters.append(
                PlaygroundAdapter(
                    self.core,
                    self.settings.data_dir,
                    host=self.settings.http_host,
                    token=(token.get_secret_value() or None) if token is not None else None,
                    file_max_bytes=self.settings.file_max_bytes,
                )
            )
        try:
            await self.core.start()
            await self.mcp.start()  # each within its timeout; one that fails is retried later
            app = web.Application()
            app.router.add_get("/healthz", self._healthz)
            app.router.add_get("/readyz", self._readyz)
            app.router.add_get("/metrics", self._metrics)
            app.router.add_get(CALLBACK_PATH, sign_in_callback(self.mcp.sign_ins))
            for adapter in adapters:
                adapter.install(app)
                self.adapters.append(adapter)
                await adapter.start()
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.settings.http_host, self.settings.http_port)
            await self._listen(site)
            await self.timer.start()
            await self.core.recover()
            self.started = True
        except BaseException:
            await self.stop()
            raise
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.http_port = sockets[0].getsockname()[1] if sockets else self.settings.http_port
        log.info("HTTP server on http://%s:%s", self.settings.http_host, self.http_port)

    async def _listen(self, site: web.TCPSite) -> None:
        """Open the HTTP port; a port that cannot be opened is a configuration error."""
        try:
            await site.start()
        except OSError as exc:
            host, port = self.settings.http_host, self.settings.http_port
            raise bind_problem(host, port, exc) from None

    def _platform_adapters(self) -> list[Adapter]:
        """Each configured platform; their SDKs are imported only when used."""
        found: list[Adapter] = []
        platforms = self.platforms
        if platforms.slack.configured:
            from adapters.slack.adapter import SlackAdapter

            found.append(SlackAdapter(self.core, self.settings, platforms.slack))
        if platforms.discord.configured:
            from adapters.discord.adapter import DiscordAdapter

            found.append(DiscordAdapter(self.core, self.settings, platforms.discord))
        return found

    @property
    def url(self) -> str:
        return f"http://{self.settings.http_host}:{self.http_port}"

    async def stop(self) -> None:
        self.started = False
        await self.timer.stop()
        for adapter in reversed(self.adapters):
            try:
                await adapter.stop()
            except Exception:
                log.exception("stopping %s failed", type(adapter).__name__)
        self.adapters.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.mcp.aclose()
        await self.core.aclose()

    async def _platforms(self) -> dict[str, str]:
        return {a.name: (await a.problem()) or "connected" for a in self.adapters}

    async def _healthz(self, request: web.Request) -> web.Response:
        """The process serves (200); ``ok`` says whether every platform is connected."""
        found = await self._platforms()
        ok = self.started and all(v == "connected" for v in found.values())
        return web.json_response({"ok": ok, "model": self.core.model_label, "adapters": found})

    async def _readyz(self, request: web.Request) -> web.Response:
        """200 once started and while every platform is connected and the store answers; 503
        (saying why) otherwise."""
        found = await self._platforms()
        waiting = {k: v for k, v in found.items() if v != "connected"}
        if not self.started:
            waiting["threadline"] = "starting"
        elif (problem := await self.core.store.problem()) is not None:
            waiting["store"] = problem
        return web.json_response(
            {"ready": not waiting, "waiting": waiting}, status=503 if waiting else 200
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        """The process's metrics for Prometheus (with ``THREADLINE_METRICS_TOKEN`` set: only for
        ``Authorization: Bearer <token>``)."""
        token = self.settings.metrics_token
        if token is not None and token.get_secret_value():
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, f"Bearer {token.get_secret_value()}".encode()):
                return web.Response(
                    status=401,
                    text="a bearer token is required\n",
                    headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
                )
        # a busy worker's body takes milliseconds to build: off the event loop
        body, content_type = await asyncio.to_thread(
            metrics.exposition, request.headers.get("Accept", "")
        )
        return web.Response(body=body, headers={"Content-Type": content_type})
