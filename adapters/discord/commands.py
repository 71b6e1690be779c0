"""``/threadline status|reset|stop|schedules|memory|skill NAME``, and registering them with Discord only when
they change.

Discord rate-limits command registration hard, so :func:`sync_if_changed` keeps a hash of the
command set (with the application id) in the data directory and overwrites the global commands
only when that hash differs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import discord
from discord import app_commands

from bot.conversation import Author, ThreadKey
from bot.errors import Refused
from bot.ports import CoreApi
from bot.present.surface import Surface

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Kept:
    """``/threadline schedules [cancel:ID]`` and ``/threadline memory [forget:ID]``: the thread's
    list, or the one with that id removed."""

    what: Literal["schedules", "memory"]
    target: str = ""

    def __str__(self) -> str:
        removing = {"schedules": "cancel", "memory": "forget"}[self.what]
        return f"{self.what} {removing}:{self.target}" if self.target else self.what




@dataclass(frozen=True, slots=True)
class LoadSkill:
    """``/threadline skill NAME``."""

    name: str

    def __str__(self) -> str:
        return f"skill {self.name}"


Command = Literal["status", "reset", "stop"] | Kept | LoadSkill
HASH_FILE = "discord-commands.json"
RESET_DONE = "Done: the next message in this thread starts a fresh conversation."


class CommandHandler(Protocol):
    async def on_command(self, interaction: discord.Interaction[Any], command: Command) -> None: ...


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

    @group.command(name="schedules", description="This thread's scheduled prompts; cancel one by id")
    @app_commands.describe(cancel="The id of a scheduled prompt to cancel (s12)")
    async def schedules(interaction: discord.Interaction[Any], cancel: str | None = None) -> None:
        await handler.on_command(interaction, Kept("schedules", (cancel or "").strip()))

    @group.command(name="memory", description="What the bot remembers here; forget a memory by id")
    @app_commands.describe(forget="The id of a memory to forget (m12)")
    async def memory(interaction: discord.Interaction[Any], forget: str | None = None) -> None:
        await handler.on_command(interaction, Kept("memory", (forget or "").strip()))

    @group.command(name="skill", description="Load a skill (the team's instructions for a task) into this thread")
    @app_commands.describe(name="The skill's name")
    async def skill(interaction: discord.Interaction[Any], name: app_commands.Range[str, 1, 64]) -> None:
        await handler.on_command(interaction, LoadSkill(name))

    return group


async def run_command(
    core: CoreApi, command: Command, key: ThreadKey, surface: Surface, actor: Author
) -> str:
    """What the command does in the thread ``key``; returns the answer for the person."""
    if isinstance(command, Kept):
        return await _kept(core, command, key)
    if isinstance(command, LoadSkill):
        return await core.load_skill(key, command.name, actor)
    if command == "status":
        return await core.describe(key)
    if command == "reset":
        await core.reset(key, surface)
        return RESET_DONE
    if await core.stop(key, actor):
        return "Stopping the run in this thread."
    return "Nothing is running in this thread."


async def _kept(core: CoreApi, command: Kept, key: ThreadKey) -> str:
    try:
        if command.what == "schedules" and command.target:
            removed = await core.schedules.cancel(key, command.target)
            return f"Cancelled {core.schedules.describe(removed)}"
        if command.what == "schedules":
            return await core.schedules.listing(key)
        if command.target:
            forgotten = await core.memory.forget(key, command.target)
            return f"Forgot {forgotten.id}: {forgotten.note[:300]}"
        return await core.memory.listing(key)
    except Refused as exc:
        return f"Nothing changed: {exc}"


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
