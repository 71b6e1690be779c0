"""The configured MCP servers of one process: built from the settings, started together at
start-up (each within its own ``timeout_s``; one that fails leaves the others and the bot
running), offered to the tool registry as toolkits, and stopped at the end."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

from bot.config import McpServerSettings, Settings
from bot.infra.clock import Clock
from bot.mcp.endpoint import Endpoint, endpoint, sign_in
from bot.mcp.forms import Asking
from bot.mcp.peers import Peers
from bot.mcp.personal import PersonalServer
from bot.mcp.server import McpServer
from bot.mcp.sign_in_desk import Expire, Kept, Resume, SignInDesk
from bot.mcp.sign_in_waits import SignInWaitStore
from bot.mcp.sign_ins import bot_callback, opened_vault, sealer_of, signed, state_line, vault_of
from bot.mcp.tokens import SignInKeep, Vault
from bot.mcp.toolkit import Allowed, McpToolkit
from bot.tools.registry import ToolRegistry


class McpServers:
    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        environ: Mapping[str, str] | None = None,
        asking: Asking | None = None,
        waits: SignInWaitStore | None = None,
        resume: Resume | None = None,
        keep: SignInKeep | None = None,
        expire: Expire | None = None,
        peers: Peers | None = None,
        take_over: Resume | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.settings = settings
        self.vault = vault_of(settings, keep) if keep is not None else None
        """The sign-ins, kept in the store (None: no store given, and no OAuth server may be
        configured)."""
        self.asking = asking
        """Who answers what the servers ask during a thread's call (None: declined)."""
        kept = None
        if waits is not None and resume is not None and self.vault is not None:
            kept = Kept(waits, sealer_of(settings), self.vault, resume, expire, peers, take_over)
        self.sign_ins = SignInDesk(clock, bot_callback(settings), kept)
        """The per-person sign-ins waited for (kept in ``waits`` across restarts: a callback
        after one resumes its thread's run with ``resume``, and ``expire`` ends a paused run's
        call at the link's expiry; with ``peers``, a callback that reaches another worker is
        handed to this one); the bot's HTTP server takes their callbacks."""
        if kept is not None and peers is not None:
            peers.listen(self.sign_ins.heard)
        self.servers: dict[str, McpServer | PersonalServer] = {}
        for name, server in settings.mcp_servers.items():
            if not server.enabled:
                continue
            if server.oauth is not None and server.oauth.sign_in == "per_person":
                self.servers[name] = PersonalServer(
                    name,
                    server,
                    endpoint(name, server, env),
                    clock,
                    self._vault(name),
                    self.sign_ins,
                    env,
                )
            else:
                vault = self._vault(name) if server.oauth is not None else None
                self.servers[name] = McpServer(
                    name, server, _reached(name, server, settings, env, vault), clock
                )

    def _vault(self, name: str) -> Vault:
        if self.vault is None:
            raise ValueError(f"MCP server {name} signs in with OAuth: give McpServers the store")
        return self.vault

    async def start(self) -> None:
        """Start every server (failures are logged; those servers are tried again later), once
        sign-ins left in files from before are moved into the store."""
        if self.vault is not None:
            await self.vault.adopt_files(self.settings.data_dir, list(self.servers))
        await asyncio.gather(*(s.start() for s in self.servers.values()))

    def install(self, registry: ToolRegistry) -> None:
        for server in self.servers.values():
            registry.attach(McpToolkit(server, allowed_in(self.settings, server.name), self.asking))

    async def aclose(self) -> None:
        await asyncio.gather(*(s.aclose() for s in self.servers.values()))


def _reached(
    name: str,
    config: McpServerSettings,
    settings: Settings,
    env: Mapping[str, str],
    vault: Vault | None,
) -> Endpoint:
    """The server's endpoint; one that signs in with OAuth uses its shared sign-in."""
    where = endpoint(name, config, env)
    if config.oauth is None or vault is None:
        return where
    slot = vault.slot(name)
    return signed(name, config, where, env, slot=slot, redirect_uri=bot_callback(settings))


def allowed_in(settings: Settings, server: str) -> Allowed:
    """Whether a thread is offered ``server``: yes, unless the most specific channel section
    for it lists ``mcp_servers`` without this one."""

    def allowed(key: str) -> bool:
        channel = settings.channel(key)
        return channel is None or channel.mcp_servers is None or server in channel.mcp_servers

    return allowed


async def probe(settings: Settings, clock: Clock) -> list[tuple[bool | None, str]]:
    """For ``threadline doctor``: start each server (all at once), list its tools, stop it;
    and say how each enabled one signs in."""
    servers = settings.mcp_servers.items()
    if not any(c.enabled and c.oauth is not None for _, c in servers):
        return await _probe_all(settings, clock, None)
    async with opened_vault(settings) as vault:
        return await _probe_all(settings, clock, vault)


async def _probe_all(
    settings: Settings, clock: Clock, vault: Vault | None
) -> list[tuple[bool | None, str]]:
    servers = settings.mcp_servers.items()
    found = await asyncio.gather(*(_probe(n, s, settings, clock, vault) for n, s in servers))
    lines: list[tuple[bool | None, str]] = []
    for (name, config), line in zip(servers, found, strict=True):
        lines.append(line)
        if config.enabled:
            lines.append((None, f"MCP server {name}: sign-in: {sign_in(config)}"))
            lines.append((None, f"MCP server {name}: {asks(config)}"))
        if config.enabled and config.oauth is not None and vault is not None:
            said = await state_line(name, config, vault)
            lines.append((None, f"MCP server {name}: signed in: {said}"))
        if config.enabled and config.oauth is not None and config.oauth.sign_in == "per_person":
            lines.append(callback_line(name, settings))
    if vault is not None and (warning := shared_key_line(settings)) is not None:
        lines.append(warning)
    return lines


def shared_key_line(settings: Settings) -> tuple[bool | None, str] | None:
    """A warning when workers share a database (and so the sign-ins) but each seals them with
    its own key file: what one worker signs in, another cannot read."""
    if settings.database_url is None or settings.secret_key is not None:
        return None
    return (
        None,
        "MCP sign-ins are kept in the shared database, sealed with this host's"
        f" {settings.data_dir / 'secret.key'}: set the same THREADLINE_SECRET_KEY on every"
        " worker, or each worker can read only the sign-ins made on it",
    )


def callback_line(name: str, settings: Settings) -> tuple[bool | None, str]:
    """Where people's sign-ins come back; a warning when only this machine can reach it."""
    url = bot_callback(settings)
    if settings.public_url is None and settings.http_host in ("127.0.0.1", "localhost", "::1"):
        return (
            None,
            f"MCP server {name}: sign-ins come back to {url}, which only this machine reaches:"
            " set THREADLINE_PUBLIC_URL to where people's browsers reach the bot",
        )
    return None, f"MCP server {name}: sign-ins come back to {url}"


def asks(config: McpServerSettings) -> str:
    """What the server may ask of a thread during a call, in words (for the doctor)."""
    sampling = (
        f"up to {config.sampling_max_tokens:,} tokens, each request approved on a card"
        if config.sampling_max_tokens
        else "off"
    )
    roots = "the thread's workspace" if config.command is not None else "none (a remote server)"
    return (
        f"forms wait {config.form_timeout_s:g} s for the run's person; sampling: {sampling};"
        f" roots: {roots}"
    )


async def _probe(
    name: str, config: McpServerSettings, settings: Settings, clock: Clock, vault: Vault | None
) -> tuple[bool | None, str]:
    if not config.enabled:
        return None, f"MCP server {name}: disabled"
    if config.oauth is not None and config.oauth.sign_in == "per_person":
        return None, f"MCP server {name}: not tried (each person signs in to it)"
    server = McpServer(name, config, _reached(name, config, settings, os.environ, vault), clock)
    try:
        if not await server.start():
            return (
                False,
                f"MCP server {name}: {(server.last_error or '').removeprefix(name + ': ')}",
            )
        offered = McpToolkit(server, lambda key: True).tools(None).values()
        names = ", ".join(
            t.name + (" (asks first)" if t.approval != "never" else "") for t in offered
        )
        unavailable = {t.name: t.unavailable for t in server.tools if t.unavailable}
        skipped = len(server.tools) - len(offered) - len(unavailable)
        note = f" ({skipped} not offered: see the log)" if skipped else ""
        if unavailable:
            names_of = ", ".join(sorted(unavailable))
            note += f" (not offered: {names_of}: {next(iter(unavailable.values()))})"
        tasks = sorted(t.name for t in server.tools if t.task_required and not t.unavailable)
        if tasks:
            note += f" (called as tasks: {', '.join(tasks)})"
        listed = {t.name for t in server.tools}
        unknown = sorted(set(config.gating) - listed)
        if unknown:
            return (
                False,
                f"MCP server {name}: gating declared for tools it does not have: {', '.join(unknown)}",
            )
        gated = f"; gated: {', '.join(sorted(config.gating))}" if config.gating else ""
        return True, f"MCP server {name}: {len(offered)} tools{note}: {names or 'none'}{gated}"
    finally:
        await server.aclose()
