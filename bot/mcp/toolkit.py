"""An MCP server as a :class:`~bot.tools.toolkit.Toolkit`: its tools offered as
``<server>__<tool>``, in the threads whose channel allows the server.

A tool annotated ``readOnlyHint: true`` runs without asking, unless it is also annotated
``openWorldHint: true`` (it reaches outside, as ``fetch_url`` does: what it is sent can carry
thread content out); every other one asks first (approval ``ask``: "Always allow here" is
offered) and counts as having side effects. ``destructiveHint: true`` is shown on its card.
``[tools."<server>__<tool>"]`` overrides either, as for any tool. A tool whose
``execution.taskSupport`` is ``required`` is called as a task (:mod:`bot.mcp.sdk.tasks`), its
status shown as the call's live line; it is not offered when the server does not declare
task-augmented calls (``threadline doctor`` names it).

``[mcp_servers.NAME.gating.TOOL]`` declares when a tool is offered in a thread and what its
successful calls turn on and off (:mod:`bot.tools.gating`); a server with none declared offers
every tool in every thread it is allowed in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from bot.errors import McpError
from bot.mcp.asking import Output
from bot.mcp.endpoint import RemoteTool
from bot.mcp.forms import Asking
from bot.mcp.personal import PersonalServer
from bot.mcp.progress import ProgressLine
from bot.mcp.schema import description, fix_schema, offered_names
from bot.mcp.server import McpServer
from bot.tools.base import AnyArguments, Tool, ToolContext, ToolError
from bot.tools.gating import Gates, states
from bot.tools.state import EMPTY
from bot.tools.toolkit import State

log = logging.getLogger(__name__)

DESTRUCTIVE = "the server marks this tool destructive"
Allowed = Callable[[str], bool]
"""Whether the thread with this key is offered the server's tools."""


def asks_first(remote: RemoteTool) -> bool:
    """Whether a call asks a person first (unless ``[tools.NAME]`` says otherwise): every tool
    but one annotated read-only that does not reach outside."""
    return not remote.read_only or remote.open_world


SIGN_IN = "sign_in"
"""The one tool of a per-person server nobody has signed in to yet: ``<server>__sign_in``."""


class McpToolkit:
    def __init__(
        self,
        server: McpServer | PersonalServer,
        allowed: Allowed,
        asking: Asking | None = None,
    ) -> None:
        self._server = server
        self._allowed = allowed
        self._asking = asking
        self._built = -1
        self._tools: dict[str, Tool] = {}
        self._gates = Gates(server.name, {})

    @property
    def name(self) -> str:
        return self._server.name

    def version(self, key: str | None, state: State = EMPTY) -> Hashable:
        self._server.poke()
        allowed = key is None or self._allowed(key)
        return (
            self._server.generation,
            allowed,
            self._gates.version(state) if key is not None else (),
        )

    def tools(self, key: str | None, state: State = EMPTY) -> Mapping[str, Tool]:
        if key is not None and not self._allowed(key):
            return {}
        if self._built != self._server.generation:
            self._built = self._server.generation
            self._tools = self._build(self._server.tools)
        return self._tools if key is None else self._gates.offer(self._tools, state)

    def instructions(self, state: State) -> str:
        return ""

    def status(self, state: State) -> list[str]:
        on = states(state)
        return [f"{self.name}: {', '.join(sorted(on))}"] if on else []

    def missing(self, key: str | None, name: str, state: State = EMPTY) -> str:
        server = self._server
        if key is not None and not self._allowed(key):
            return f"{name} is not offered in this thread: its channel does not use the MCP server {server.name}"
        if not server.running and server.last_error:
            return f"{name} is not available now: {server.last_error}"
        self.tools(None)
        if (reason := self._gates.missing(name, state)) is not None:
            return reason
        offered = ", ".join(sorted(self.tools(key))) or "none"
        return f"the MCP server {server.name} has no tool {name} now; its tools: {offered}"

    def _build(self, listed: tuple[RemoteTool, ...]) -> dict[str, Tool]:
        server = self._server
        by_name = {t.name: t for t in listed}
        built: dict[str, Tool] = {}
        if isinstance(server, PersonalServer) and not listed:
            return {f"{server.name}__{SIGN_IN}": self._sign_in_tool()}
        names = offered_names(server.name, by_name)
        for offered, original in names.items():
            remote = by_name[original]
            if remote.unavailable:
                log.warning(
                    "[%s] tool %r is not offered: %s", server.name, original, remote.unavailable
                )
                continue
            fixed = fix_schema(remote.schema)
            if fixed.schema is None:
                log.warning(
                    "[%s] tool %r is not offered: %s", server.name, original, "; ".join(fixed.notes)
                )
                continue
            if offered != f"{server.name}__{original}":
                log.info("[%s] tool %r is offered as %s", server.name, original, offered)
            if fixed.notes:
                log.info(
                    "[%s] schema of %r fixed up: %s", server.name, original, "; ".join(fixed.notes)
                )
            built[offered] = self._tool(offered, original, remote, fixed.schema)
        log.info("[%s] offers %d tools: %s", server.name, len(built), ", ".join(built) or "none")
        self._gates = self._declared(
            {original: offered for offered, original in names.items() if offered in built}
        )
        return built

    def _declared(self, offered: Mapping[str, str]) -> Gates:
        """The gating declared for the server's tools in its settings, by their offered names."""
        server = self._server
        declared = server.settings.gating
        for original in sorted(set(declared) - set(offered)):
            log.warning(
                "[%s] gating is declared for %r, which the server does not offer",
                server.name,
                original,
            )
        return Gates(server.name, {offered[o]: g for o, g in declared.items() if o in offered})

    def _sign_in_tool(self) -> Tool:
        server = self._server
        assert isinstance(server, PersonalServer)

        async def sign_in(ctx: ToolContext) -> str:
            try:
                out = await server.run_for(ctx, None, {})
            except McpError as exc:
                raise ToolError(str(exc)) from None
            return out.text

        return Tool(
            f"{server.name}__{SIGN_IN}",
            f"Sign the person of this run in to the MCP server {server.name} (each person signs"
            " in to it themselves): its tools are offered once someone has signed in. Call it"
            f" when the person asks for something {server.name} does.",
            AnyArguments,
            sign_in,
            schema={"type": "object", "properties": {}},
        )

    def _tool(
        self, offered: str, original: str, remote: RemoteTool, schema: dict[str, Any]
    ) -> Tool:
        server = self._server
        asking = self._asking

        async def _run(
            ctx: ToolContext,
            original: str,
            arguments: dict[str, Any],
            progress: ProgressLine,
            asker: Any,
        ) -> Output:
            if isinstance(server, PersonalServer):
                return await server.run_for(
                    ctx, original, arguments, progress, asker, progress.task
                )
            return await server.run(
                original, arguments, progress, asker, ctx.thread_key, progress.task
            )

        async def call(ctx: ToolContext, **arguments: Any) -> str:
            asker = asking.asker(ctx, server.settings.form_timeout_s) if asking else None
            progress = ProgressLine(ctx, offered)
            try:
                out = await _run(ctx, original, arguments, progress, asker)
            except McpError as exc:
                raise ToolError(str(exc)) from None
            finally:
                await progress.aclose()
            if out.failed:
                raise ToolError(out.text or f"{offered} failed")
            if asking is None:
                return out.text
            return await asking.deliver(ctx, offered, out)

        text = description(remote.description, f"{original} (from the MCP server {server.name})")
        if not asks_first(remote):
            return Tool(
                offered,
                text,
                AnyArguments,
                call,
                side_effects=False,
                approval="never",
                schema=schema,
            )
        return Tool(
            offered,
            text,
            AnyArguments,
            call,
            side_effects=True,
            approval="ask",
            schema=schema,
            caution=DESTRUCTIVE if remote.destructive else "",
        )
