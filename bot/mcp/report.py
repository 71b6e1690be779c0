"""What ``threadline mcp list`` and ``threadline mcp try`` print: the configured servers, whether
each connects (or why not), their tools with the hints that decide how they are offered, and
how each signs in; and one server tried by hand, with one call of one of its tools.

Nothing here writes to a store or a thread: it is what an operator runs before enabling a server.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.config import McpOAuthSettings, McpServerSettings, Settings
from bot.errors import ConfigError, McpError
from bot.infra.clock import Clock
from bot.mcp.asking import Answer, FormAsked, Refused, SampleAsked, Sampled
from bot.mcp.auth import Browser
from bot.mcp.endpoint import Endpoint, RemoteTool, endpoint, sign_in
from bot.mcp.schema import offered_names
from bot.mcp.sdk.tasks import TaskStatus
from bot.mcp.server import McpServer
from bot.mcp.sign_ins import bot_callback, log_out, opened_vault, signed, state_line
from bot.mcp.tokens import MemorySlot, Slot, Vault
from bot.mcp.toolkit import asks_first

Print = Callable[[str], None]
TRIED = "server"
"""The name a server tried by its URL goes by (in its log lines and its errors)."""
APPROVAL_WORDS = {"never": "runs without asking", "ask": "asks first", "always": "asks every time"}


class BadInput(Exception):
    """What the operator typed cannot be tried (exit status 2)."""


def transport(config: McpServerSettings) -> str:
    if config.url is not None:
        return f"streamable HTTP {config.url}"
    return f"stdio: {' '.join([config.command or '', *config.args])}"


def hints(tool: RemoteTool) -> str:
    """The tool's annotations, in words."""
    said = [
        word
        for on, word in (
            (tool.read_only, "read-only"),
            (tool.open_world, "open world"),
            (tool.destructive, "destructive"),
        )
        if on
    ]
    return ", ".join(said) or "no hints"


def approval(tool: RemoteTool, offered: str, settings: Settings) -> str:
    """How a thread meets the tool: not offered, or when it asks (``[tools.NAME]`` wins)."""
    if tool.unavailable:
        return f"not offered: {tool.unavailable}"
    section = settings.tools.get(offered)
    task = "; called as a task" if tool.task_required else ""
    if section is not None and section.approval is not None:
        return APPROVAL_WORDS[section.approval] + task
    return APPROVAL_WORDS["ask" if asks_first(tool) else "never"] + task


def tool_lines(name: str, server: McpServer, settings: Settings, *, own: bool) -> list[str]:
    """A line per tool: by the name a thread is offered it under, or (``own``) its own."""
    offered = {
        original: o for o, original in offered_names(name, [t.name for t in server.tools]).items()
    }
    lines = []
    for tool in server.tools:
        shown = tool.name if own else offered[tool.name]
        about = f"  {first_line(tool.description)}" if tool.description.strip() else ""
        lines.append(
            f"    {shown}  [{hints(tool)}; {approval(tool, offered[tool.name], settings)}]{about}"
        )
    return lines


def first_line(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def reason(server: McpServer) -> str:
    return (server.last_error or "it did not start").removeprefix(server.name + ": ")


# --- list ------------------------------------------------------------------------------------


async def list_servers(
    settings: Settings, clock: Clock, say: Print, environ: Mapping[str, str] | None = None
) -> int:
    """Every configured server, started all at once (the enabled ones); 1 when one fails."""
    env = os.environ if environ is None else environ
    if not settings.mcp_servers:
        say("No MCP servers are configured ([mcp_servers.NAME] in threadline.toml).")
        return 0
    async with AsyncExitStack() as stack:
        vault = None
        if any(c.oauth is not None for c in settings.mcp_servers.values()):
            vault = await stack.enter_async_context(opened_vault(settings))
        found = await asyncio.gather(
            *(_describe(n, c, settings, clock, env, vault) for n, c in settings.mcp_servers.items())
        )
    for lines, _ in found:
        for line in lines:
            say(line)
    return 0 if all(ok for _, ok in found) else 1


async def _describe(
    name: str,
    config: McpServerSettings,
    settings: Settings,
    clock: Clock,
    env: Mapping[str, str],
    vault: Vault | None,
) -> tuple[list[str], bool]:
    head = [f"{name}  ({transport(config)})", f"  sign-in: {sign_in(config)}"]
    vault = vault if config.oauth is not None else None
    if vault is not None and (said := await state_line(name, config, vault)):
        head.append(f"  signed in: {said}")
    if not config.enabled:
        return [*head, f"  state: disabled (`threadline mcp try {name}` tries it)"], True
    if config.oauth is not None and config.oauth.sign_in == "per_person":
        return [*head, "  state: not tried (each person signs in to it in their thread)"], True
    try:
        where = endpoint(name, config, env)
        if vault is not None:
            where = signed(
                name, config, where, env, slot=vault.slot(name), redirect_uri=bot_callback(settings)
            )
        server = McpServer(name, config, where, clock)
    except ConfigError as exc:
        return [*head, f"  state: not started: {exc}"], False
    try:
        if not await server.start():
            return [*head, f"  state: does not connect: {reason(server)}"], False
        count = len(server.tools)
        state = f"  state: connects ({server.server_label}): {count} tool{'s' * (count != 1)}"
        return [*head, state, *tool_lines(name, server, settings, own=False)], True
    finally:
        await server.aclose()


# --- try -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Trial:
    """One ``threadline mcp try``: which server, and the call to make, if any."""

    target: str
    """A configured server's name, or the URL of a streamable HTTP server."""
    tool: str | None = None
    arguments: str | None = None
    """The call's arguments as JSON text (an object); none: ``{}``."""
    timeout_s: float | None = None


def arguments_of(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"the arguments are not JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(value, dict):
        raise BadInput(f'the arguments must be a JSON object (like {{"id": "T-1"}}), not {text}')
    return value


def server_for(trial: Trial, settings: Settings) -> tuple[str, McpServerSettings]:
    """The server to try: a configured one by its name (even a disabled one), or a URL."""
    target = trial.target
    if target.startswith(("http://", "https://")):
        config = McpServerSettings(url=target, oauth=McpOAuthSettings())
        name = TRIED
    elif target in settings.mcp_servers:
        config, name = settings.mcp_servers[target], target
    else:
        known = ", ".join(sorted(settings.mcp_servers)) or "none are configured"
        raise BadInput(
            f"no MCP server named {target!r} in threadline.toml (configured: {known});"
            " give a configured name or an http:// or https:// URL"
        )
    if trial.timeout_s is not None:
        config = config.model_copy(update={"timeout_s": trial.timeout_s})
    return name, config


def _kept(name: str, config: McpServerSettings) -> bool:
    """Whether ``threadline mcp try`` uses the server's kept shared sign-in (else one kept for
    the run only: a URL, or a per-person server)."""
    return name != TRIED and config.oauth is not None and config.oauth.sign_in != "per_person"


def _reached(
    name: str,
    config: McpServerSettings,
    settings: Settings,
    env: Mapping[str, str],
    browser: Browser | None,
    slot: Slot,
) -> Endpoint:
    try:
        where = endpoint(name, config, env)
        redirect = browser.redirect_uri if browser is not None else bot_callback(settings)
        return signed(
            name,
            config,
            where,
            env,
            slot=slot,
            redirect_uri=redirect,
            browser=browser,
        )
    except ConfigError as exc:
        raise BadInput(str(exc)) from None


async def try_server(
    trial: Trial,
    settings: Settings,
    clock: Clock,
    say: Print,
    environ: Mapping[str, str] | None = None,
    browser: Browser | None = None,
) -> int:
    """Connect, list the tools, call one if asked; 0 when all went well, 1 when the server
    failed or the tool said it failed, 2 when the input cannot be tried. A server that asks
    for an OAuth sign-in is signed in to through ``browser``, if given."""
    env = os.environ if environ is None else environ
    name, config = server_for(trial, settings)
    arguments = arguments_of(trial.arguments)
    async with AsyncExitStack() as stack:
        slot: Slot = MemorySlot()
        if _kept(name, config):
            slot = (await stack.enter_async_context(opened_vault(settings))).slot(name)
        where = _reached(name, config, settings, env, browser, slot)
        server = McpServer(name, config, where, clock)
        return await _try(server, name, config, (trial.tool, arguments), settings, say)


async def _try(
    server: McpServer,
    name: str,
    config: McpServerSettings,
    call: tuple[str | None, dict[str, Any]],
    settings: Settings,
    say: Print,
) -> int:
    tool, arguments = call
    try:
        say(f"{name}  ({transport(config)})")
        said = "OAuth when the server asks for it (kept for this run only)"
        say(f"  sign-in: {said if name == TRIED else sign_in(config)}")
        if not await server.start():
            say(f"  does not connect: {reason(server)}")
            return 1
        say(f"  connects ({server.server_label}): {len(server.tools)} tools, by their own names")
        for line in tool_lines(name, server, settings, own=True):
            say(line)
        if tool is None:
            return 0
        return await _call(server, tool, arguments, say)
    finally:
        await server.aclose()


async def _call(server: McpServer, tool: str, arguments: dict[str, Any], say: Print) -> int:
    if tool not in {t.name for t in server.tools}:
        listed = ", ".join(t.name for t in server.tools) or "none"
        raise BadInput(f"the server has no tool {tool!r} (its tools: {listed})")
    say(f"calling {tool} {json.dumps(arguments, ensure_ascii=False)}")
    try:
        out = await server.run(tool, arguments, asker=TrialAsker(say), status=_task_said(say))
    except McpError as exc:
        say(f"  the call failed: {str(exc).removeprefix(server.name + ': ')}")
        return 1
    say("  the tool says it failed (isError):" if out.failed else "  result:")
    for line in (out.text or "(empty)").splitlines() or [""]:
        say(f"    {line}")
    for text in out.shown:
        say("  for the user alone (shown in the thread, not sent to the model):")
        for line in text.splitlines() or [""]:
            say(f"    {line}")
    for picture in out.pictures:
        say(f"  an image: {picture.mime}, {len(picture.data):,} bytes")
    for file in out.files:
        say(f"  a file: {file.name or '(no name)'}, {file.mime}, {len(file.data):,} bytes")
    return 1 if out.failed else 0


def _task_said(say: Print) -> TaskStatus:
    async def said(status: str, message: str | None) -> None:
        say(f"  task {status.replace('_', ' ')}" + (f": {message}" if message else ""))

    return said


class TrialAsker:
    """What ``threadline mcp try`` answers a server that asks during the call, with nobody to
    fill a form in: the form's defaults when they make a valid answer (said), else a decline;
    a link is shown and declined; sampling is refused; the working directory is the root."""

    def __init__(self, say: Print) -> None:
        self._say = say

    async def elicit(self, asked: FormAsked) -> Answer:
        self._say(f"  the server asks: {asked.message}")
        if asked.form is None:
            self._say(f"    a link to open: {asked.url} (declined: nobody is here to open it)")
            return Answer("decline")
        content, errors = asked.form.check({})
        if errors:
            wrong = "; ".join(f"{k}: {v}" for k, v in errors.items())
            self._say(f"    declined: its defaults do not make an answer ({wrong})")
            return Answer("decline")
        self._say(f"    answered with its defaults: {json.dumps(content, ensure_ascii=False)}")
        return Answer("accept", content)

    async def sample(self, asked: SampleAsked) -> Sampled:
        self._say("  the server asks for a model's answer: refused here (no model is used)")
        raise Refused("threadline mcp try runs no model")

    def roots(self) -> Sequence[Path]:
        return (Path.cwd(),)

    async def note(self, text: str) -> None:
        self._say(f"  {text}")


# --- login and logout --------------------------------------------------------------------------


def _oauth_server(name: str, settings: Settings, command: str) -> McpServerSettings:
    config = settings.mcp_servers.get(name)
    if config is None:
        known = ", ".join(sorted(settings.mcp_servers)) or "none are configured"
        raise BadInput(f"no MCP server named {name!r} in threadline.toml (configured: {known})")
    if config.oauth is None:
        raise BadInput(
            f"{name} does not sign in with OAuth: give it an [mcp_servers.{name}.oauth] section"
        )
    if command == "login" and config.oauth.sign_in == "per_person":
        raise BadInput(
            f"{name} is signed in to by each person (sign_in = per_person): each signs in from"
            " their thread the first time a run of theirs calls it"
        )
    return config


async def login(
    name: str,
    settings: Settings,
    clock: Clock,
    say: Print,
    browser: Browser,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Sign the bot in to ``name`` anew (the shared sign-in), kept encrypted for the bot."""
    env = os.environ if environ is None else environ
    config = _oauth_server(name, settings, "login")
    async with opened_vault(settings) as vault:
        return await _login(name, config, vault, settings, clock, say, browser, env)


async def _login(
    name: str,
    config: McpServerSettings,
    vault: Vault,
    settings: Settings,
    clock: Clock,
    say: Print,
    browser: Browser,
    env: Mapping[str, str],
) -> int:
    slot = vault.slot(name)
    kept = await slot.read() or {}
    if not kept:  # none, or one sealed with another key: this sign-in replaces it
        await slot.erase()
    await slot.write({k: v for k, v in kept.items() if k == "client"})  # a new sign-in
    wait = max(config.timeout_s, 600.0)
    config = config.model_copy(update={"timeout_s": wait})
    server = McpServer(name, config, _reached(name, config, settings, env, browser, slot), clock)
    try:
        if not await server.start():
            say(f"{name}: not signed in: {reason(server)}")
            return 1
        say(f"{name}: {await state_line(name, config, vault)}; {len(server.tools)} tools")
        return 0
    finally:
        await server.aclose()


async def logout(name: str, settings: Settings, say: Print, person: str | None = None) -> int:
    """Revoke (where the server offers it) and delete the shared sign-in, or one person's."""
    _oauth_server(name, settings, "logout")
    async with opened_vault(settings) as vault:
        said = await log_out(name, vault, person)
    say(f"{name}: {said}")
    return 0
