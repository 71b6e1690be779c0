"""``/threadline status|reset|stop``, and registering them with Discord only when they change.

Discord rate-limits command registration hard, so :func:`sync_if_changed` keeps a hash of the
command set (with the application id) in the data directory and overwrites the global commands
only when that hash differs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Literal, Protocol

import discord
from discord import app_commands

from bot.conversation import Author, ThreadKey
from bot.present.surface import Surface

log = logging.getLogger(__name__)

Command = Literal["status", "reset", "stop"]
HASH_FILE = "discord-commands.json"
RESET_DONE = "Done: the next message in this thread starts a fresh conversation."


class CommandHandler(Protocol):
    async def on_command(self, interaction: discord.Interaction[Any], command: Command) -> None: ...


class CoreCommands(Protocol):
    async def describe(self, key: ThreadKey) -> str: ...

    async def reset(self, key: ThreadKey, surface: Surface) -> None: ...

    async def stop(self, key: ThreadKey, actor: Author) -> bool: ...


def command_group(handler: CommandHandler) -> app_commands.Group:
    group = app_commands.Group(name="threadline", description="Threadline in this thread")

    @group.command(name="status", description="Model, state, usage and todos of this thread")
    async def status(interaction: discord.Interaction[Any]) -> None:
        await handler.on_command(interaction, "status")

    @group.command(name="reset", description="Forget this thread's conversation and start afresh")
    async def reset(interaction: discord.Interaction[Any]) -> None:
        await handler.on_command(interaction, "reset")

    @group.command(name="stop", description="Stop the run in progress in this thread")
    async def stop(interaction: discord.Interaction[Any]) -> None:
        await handler.on_command(interaction, "stop")

    return group


async def run_command(
    core: CoreCommands, command: Command, key: ThreadKey, surface: Surface, actor: Author
) -> str:
    """What the command does in the thread ``key``; returns the answer for the person."""
    if command == "status":
        return await core.describe(key)
    if command == "reset":
        await core.reset(key, surface)
        return RESET_DONE
    if await core.stop(key, actor):
        return "Stopping the run in this thread."
    return "Nothing is running in this thread."


async def sync_if_changed(tree: app_commands.CommandTree[Any], application_id: int, data_dir: Path) -> bool:
    """Overwrite the global commands when they differ from the last sync; True when synced."""
    commands = [c.to_dict(tree) for c in tree.get_commands()]
    blob = json.dumps({"application": application_id, "commands": commands}, sort_keys=True)
    digest = hashlib.sha256(blob.encode()).hexdigest()
    path = data_dir / HASH_FILE
    if await asyncio.to_thread(_read_digest, path) == digest:
        log.debug("slash commands unchanged; not syncing")
        return False
    await tree.sync()
    await asyncio.to_thread(_write_digest, path, digest)
    log.info("registered %d slash command group(s) with Discord", len(commands))
    return True


def _read_digest(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data.get("digest") if isinstance(data, dict) else None


def _write_digest(path: Path, digest: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"digest": digest}))
    tmp.replace(path)
