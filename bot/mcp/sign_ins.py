"""Which sign-in a connection to an OAuth server uses, and what ``threadline mcp list``,
``login``, ``logout`` and ``doctor`` say of the sign-ins kept (their state, never a token)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace

from bot.config import McpServerSettings, Settings
from bot.errors import ConfigError
from bot.infra.sealed import Sealer, sealer
from bot.mcp.auth import Browser, OAuthAccess, callback_url, resolved
from bot.mcp.endpoint import Endpoint, HttpEndpoint
from bot.mcp.sdk.oauth import revoke
from bot.mcp.tokens import MemorySlot, SignInKeep, Slot, Vault, state_of


def sealer_of(settings: Settings) -> Sealer:
    """What the sign-ins (and the sign-ins waited for) are sealed with."""
    key = settings.secret_key.get_secret_value() if settings.secret_key is not None else None
    return sealer(settings.data_dir, key)


def vault_of(settings: Settings, keep: SignInKeep) -> Vault:
    """The sign-ins kept in ``keep`` (the store), sealed with the installation's key."""
    return Vault(keep, sealer_of(settings))


@asynccontextmanager
async def opened_vault(settings: Settings) -> AsyncIterator[Vault]:
    """For the commands (``threadline mcp login``, ``logout``, ``list``, ``doctor``): the store
    opened for the while, with sign-ins left in files from before moved into it first."""
    from bot.storage.choose import store_for

    store = store_for(settings)
    await store.open()
    try:
        vault = vault_of(settings, store)
        await vault.adopt_files(settings.data_dir, list(settings.mcp_servers))
        yield vault
    finally:
        await store.close()


def bot_callback(settings: Settings) -> str:
    """Where sign-ins made in threads come back: the bot's own HTTP server."""
    return callback_url(settings.public_url, settings.http_host, settings.http_port)


def signed(
    name: str,
    config: McpServerSettings,
    endpoint: Endpoint,
    environ: Mapping[str, str],
    *,
    slot: Slot,
    redirect_uri: str,
    browser: Browser | None = None,
    person: str | None = None,
) -> Endpoint:
    """``endpoint`` signing in with OAuth as ``config`` says (unchanged without ``[oauth]``)."""
    if config.oauth is None or not isinstance(endpoint, HttpEndpoint):
        return endpoint
    try:
        oauth = resolved(config.oauth, environ)
    except KeyError as exc:
        raise ConfigError(
            f"mcp_servers.{name}.oauth", f"the environment variable {exc.args[0]} is not set"
        ) from None
    access = OAuthAccess(name, oauth, slot, redirect_uri, browser, person)
    return replace(endpoint, oauth=access)


def memory_slot() -> MemorySlot:
    return MemorySlot()


async def state_line(name: str, config: McpServerSettings, vault: Vault) -> str | None:
    """The server's sign-in state in words, for ``list`` and ``doctor`` (None: no OAuth)."""
    if config.oauth is None:
        return None
    now = time.time()
    if config.oauth.sign_in == "per_person":
        people = await vault.people(name)
        current = sum(1 for _, r in people if not state_of(r, now).startswith(("needs", "exp")))
        return (
            f"per person: {current} signed in"
            + (f", {len(people) - current} expired" if len(people) > current else "")
            + " (each person signs in the first time a run of theirs calls it)"
        )
    found = state_of(await vault.slot(name).read(), now)
    if found.startswith(("needs", "expired")):
        return f"{found} (`threadline mcp login {name}`)"
    return found


async def log_out(name: str, vault: Vault, person: str | None = None) -> str:
    """Revoke and forget the shared sign-in, or ``person``'s."""
    return await revoke(vault.slot(name, person))
