"""The running process: the core, the HTTP server, and the configured platform adapters."""

from __future__ import annotations

import logging
from typing import Protocol

from aiohttp import web

from adapters.playground import PlaygroundAdapter
from bot.clock import Clock
from bot.config import Settings
from bot.core import Core
from bot.llm.model import Model
from bot.scheduler.timer import Timer

log = logging.getLogger(__name__)


class Adapter(Protocol):
    def install(self, app: web.Application) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Runtime:
    def __init__(self, settings: Settings, *, clock: Clock | None = None, model: Model | None = None):
        self.settings = settings
        self.core = Core.create(settings, clock=clock, model=model)
        self.adapters: list[Adapter] = []
        self.timer = Timer(self.core.scheduler, self.core.clock)
        self._runner: web.AppRunner | None = None
        self.http_port: int | None = None

    async def start(self) -> None:
        """Start everything; on any failure, stop what was started (nothing is left running)."""
        adapters = self._platform_adapters()  # configuration errors surface here, before any I/O
        if self.settings.playground_enabled:
            adapters.append(PlaygroundAdapter(self.core, self.settings.data_dir))
        try:
            await self.core.start()
            app = web.Application()
            app.router.add_get("/healthz", self._healthz)
            for adapter in adapters:
                adapter.install(app)
                self.adapters.append(adapter)
                await adapter.start()
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.settings.http_host, self.settings.http_port)
            await site.start()
            await self.timer.start()
            await self.core.recover()
        except BaseException:
            await self.stop()
            raise
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.http_port = sockets[0].getsockname()[1] if sockets else self.settings.http_port
        log.info("HTTP server on http://%s:%s", self.settings.http_host, self.http_port)

    def _platform_adapters(self) -> list[Adapter]:
        """Each configured platform; their SDKs are imported only when used."""
        found: list[Adapter] = []
        if self.settings.slack_bot_token is not None:
            from adapters.slack import SlackAdapter

            found.append(SlackAdapter(self.core, self.settings))
        if self.settings.discord_token is not None:
            from adapters.discord import DiscordAdapter

            found.append(DiscordAdapter(self.core, self.settings))
        return found

    @property
    def url(self) -> str:
        return f"http://{self.settings.http_host}:{self.http_port}"

    async def stop(self) -> None:
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
        await self.core.aclose()

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"ok": True, "model": self.core.model_label, "adapters": [type(a).__name__ for a in self.adapters]}
        )
