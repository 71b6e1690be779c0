"""A per-person MCP server (``sign_in = "per_person"``): one connection per person, each with
that person's own sign-in, opened on their first call and closed once idle.

The tools offered are those the server listed to the last person connected (at start, to the
first person found signed in). Before anyone has signed in, the server offers one tool,
``<server>__sign_in``: the run's person signs in, and the server's tools are offered from then
on. A call whose person has no valid sign-in (none yet, expired, revoked) shows them the link
(:mod:`bot.mcp.sign_in_desk`) and waits for it within ``form_timeout_s``; a wait that ends
without a sign-in ends the call with "not signed in", and the run goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.config import McpServerSettings
from bot.errors import McpError
from bot.infra.clock import Clock
from bot.mcp.asking import Asker, Output
from bot.mcp.endpoint import Endpoint, RemoteTool
from bot.mcp.sdk.connection import Progress
from bot.mcp.sdk.tasks import TaskStatus
from bot.mcp.server import McpServer
from bot.mcp.sign_in_desk import ChatBrowser, SignInDesk
from bot.mcp.sign_ins import signed
from bot.mcp.tokens import Vault
from bot.tools.base import ToolContext

log = logging.getLogger(__name__)

IDLE_S = 600.0
"""A person's connection unused this long is closed (opened again on their next call)."""


@dataclass
class _Person:
    server: McpServer
    browser: ChatBrowser
    used_at: float
    busy: int = 0


class PersonalServer:
    """Duck-typed as an :class:`McpServer` for the toolkit, with :meth:`run_for` for calls."""

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        endpoint: Endpoint,
        clock: Clock,
        vault: Vault,
        desk: SignInDesk,
        environ: Mapping[str, str],
    ) -> None:
        self.name = name
        self.settings = settings
        self.endpoint = endpoint
        self._clock = clock
        self._vault = vault
        self._desk = desk
        self._environ = environ
        self._people: dict[str, _Person] = {}
        self.tools: tuple[RemoteTool, ...] = ()
        self.generation = 0
        self.last_error: str | None = None
        self.server_label = ""

    @property
    def running(self) -> bool:
        return any(p.server.running for p in self._people.values())

    @property
    def signed_in_anyone(self) -> bool:
        return bool(self.tools)

    def poke(self) -> None:
        return

    async def start(self) -> bool:
        """List the tools with the first person found signed in (no sign-in is asked for)."""
        for person, record in await self._vault.people(self.name):
            if not record.get("tokens"):
                continue
            entry = self._person(person)
            if await entry.server.start():
                self._took(entry.server)
                return True
        return False

    async def run_for(
        self,
        ctx: ToolContext,
        tool: str | None,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        asker: Asker | None = None,
        status: TaskStatus | None = None,
    ) -> Output:
        """Call ``tool`` with the connection of the run's person (signing them in first when
        they are not); ``tool`` None only signs in."""
        if ctx.requester is None:
            raise McpError(
                f"{self.name}: each person signs in to it, and no person is behind this run"
            )
        await self._close_idle()
        entry = self._person(ctx.requester.id)
        entry.browser.ctx = ctx
        entry.busy += 1
        try:
            if tool is None:
                if not await entry.server.start():
                    raise McpError(entry.server.last_error or f"{self.name}: not signed in")
                self._took(entry.server)
                return Output(f"signed in to {self.name}: its tools are offered from the next step")
            out = await entry.server.run(tool, arguments, progress, asker, ctx.thread_key, status)
            self._took(entry.server)
            return out
        finally:
            entry.busy -= 1
            entry.used_at = self._clock.monotonic()

    async def aclose(self) -> None:
        for entry in self._people.values():
            await entry.server.aclose()
        self._people.clear()

    def _person(self, person: str) -> _Person:
        found = self._people.get(person)
        if found is not None:
            return found
        wait = self.settings.form_timeout_s
        browser = self._desk.browser(self.name, person, wait)
        # the handshake and each call may wait for the person's sign-in meanwhile
        config = self.settings.model_copy(update={"timeout_s": self.settings.timeout_s + wait})
        endpoint = signed(
            self.name,
            config,
            self.endpoint,
            self._environ,
            slot=self._vault.slot(self.name, person),
            redirect_uri=self._desk.redirect_uri,
            browser=browser,
            person=person,
        )
        server = McpServer(self.name, config, endpoint, self._clock)
        entry = self._people[person] = _Person(server, browser, self._clock.monotonic())
        return entry

    def _took(self, server: McpServer) -> None:
        self.server_label = server.server_label
        self.last_error = None
        if server.tools and server.tools != self.tools:
            self.tools = server.tools
            self.generation += 1

    async def _close_idle(self) -> None:
        now = self._clock.monotonic()
        for person, entry in list(self._people.items()):
            if now - entry.used_at > IDLE_S and not entry.busy:
                del self._people[person]
                await entry.server.aclose()
                log.info("[%s] a person's idle connection closed", self.name)
