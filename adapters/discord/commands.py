"""``/threadline status|reset|stop|quiet|listen|model|schedules|memory|skill`` as Discord
application commands (what each does is :mod:`bot.api.commands`), the shortcuts of
:mod:`bot.api.shortcuts` as message commands (type 3: a message's "Apps" menu), and registering
them with Discord only when they change.

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
from typing import Any, Protocol

import discord
from discord import app_commands

from bot.api.commands import ChooseModel, Command, Kept, LoadSkill
from bot.api.shortcuts import SHORTCUTS, Shortcut

log = logging.getLogger(__name__)


HASH_FILE = "discord-commands.json"


class CommandHandler(Protocol):
    async def on_command(self, interaction: discord.Interaction[Any], command: Command) -> None: ...

    async def on_shortcut(
        self, interaction: discord.Interaction[Any], shortcut: Shortcut, message: discord.Message
    ) -> None: ...


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

    @group.command(name="quiet", description="Answer this thread only when a message mentions me")
    async def quiet(interaction: discord.Interaction[Any]) -> None:
        await handler.on_command(interaction, "quiet")

    @group.command(name="listen", description="Answer every message of this thread again")
    async def listen(interaction: discord.Interaction[Any]) -> None:
        await handler.on_command(interaction, "listen")

    @group.command(
        name="model", description="Show the model of this thread, or change it for this thread only"
    )
    @app_commands.describe(name="The model to use in this thread ('default': the channel's)")
    async def model(
        interaction: discord.Interaction[Any], name: app_commands.Range[str, 1, 200] | None = None
    ) -> None:
        await handler.on_command(interaction, ChooseModel((name or "").strip()))

    @group.command(
        name="schedules", description="This thread's scheduled prompts; cancel one by id"
    )
    @app_commands.describe(cancel="The id of a scheduled prompt to cancel (s12)")
    async def schedules(interaction: discord.Interaction[Any], cancel: str | None = None) -> None:
        await handler.on_command(interaction, Kept("schedules", (cancel or "").strip()))

    @group.command(name="memory", description="What the bot remembers here; forget a memory by id")
    @app_commands.describe(forget="The id of a memory to forget (m12)")
    async def memory(interaction: discord.Interaction[Any], forget: str | None = None) -> None:
        await handler.on_command(interaction, Kept("memory", (forget or "").strip()))

    @group.command(
        name="skill",
        description="Load a skill (the team's instructions for a task) into this thread",
    )
    @app_commands.describe(name="The skill's name")
    async def skill(
        interaction: discord.Interaction[Any], name: app_commands.Range[str, 1, 64]
    ) -> None:
        await handler.on_command(interaction, LoadSkill(name))

    return group


def message_commands(handler: CommandHandler) -> list[app_commands.ContextMenu]:
    """The shortcuts as message commands, one per shortcut, named as people see them."""
    return [_message_command(handler, shortcut, name) for shortcut, (name, _) in SHORTCUTS.items()]


def _message_command(
    handler: CommandHandler, shortcut: Shortcut, name: str
) -> app_commands.ContextMenu:
    async def used(interaction: discord.Interaction[Any], message: discord.Message) -> None:
        await handler.on_shortcut(interaction, shortcut, message)

    return app_commands.ContextMenu(name=name, callback=used)


async def sync_if_changed(
    tree: app_commands.CommandTree[Any], application_id: int, data_dir: Path
) -> bool:
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
    log.info("registered %d application command(s) with Discord", len(commands))
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
