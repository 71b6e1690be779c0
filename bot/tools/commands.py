"""How ``run_command`` runs a command: in the bubblewrap sandbox, or (only when an operator
says so with ``THREADLINE_SANDBOX=none``) directly on the host as the bot's own user.

The choice is made once at start-up: ``auto`` uses the sandbox when it works and otherwise
offers no command tool, ``bwrap`` refuses to start without it, ``none`` runs unsandboxed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from bot.config import Settings
from bot.errors import ConfigError
from bot.tools import bwrap
from bot.tools.process import CommandResult, run_process
from bot.tools.sandbox import Workspace

log = logging.getLogger(__name__)

_SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET")
_SECRET_PREFIXES = ("SLACK_", "DISCORD_")
_SECRET_NAMES = frozenset({"OPENAI_BASE_URL"})


class CommandRunner(Protocol):
    """Runs one shell command line, or one program with its arguments (no shell), in a
    thread's workspace."""

    owner: tuple[int, int] | None
    """Who must own the workspace for the command to write in it (None: the bot's user)."""
    note: str
    """What the model is told about where its commands run (may be empty)."""

    async def run(
        self, command: str | Sequence[str], workspace: Workspace, timeout_s: float, *, network: bool
    ) -> CommandResult: ...


class HostRunner:
    """``/bin/sh -c`` in the workspace directory, as the bot's own user, with the secrets
    removed from the environment. Everything the bot's user can reach, the command can."""

    owner: tuple[int, int] | None = None
    note = ""

    async def run(
        self, command: str | Sequence[str], workspace: Workspace, timeout_s: float, *, network: bool
    ) -> CommandResult:
        env = clean_environment(workspace.root)
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        return await run_process(argv, workspace.root, timeout_s, env)


def clean_environment(workspace: Path, source: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an unsandboxed command: ``source`` without secrets, HOME at the
    workspace."""
    env = {
        name: value
        for name, value in (os.environ if source is None else source).items()
        if not _is_secret(name) and name != "OLDPWD"
    }
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(HOME=str(workspace), PWD=str(workspace), TERM="dumb", PAGER="cat")
    return env


def _is_secret(name: str) -> bool:
    upper = name.upper()
    return (
        upper.endswith(_SECRET_SUFFIXES)
        or upper.startswith(_SECRET_PREFIXES)
        or "PASSWORD" in upper
        or upper in _SECRET_NAMES
    )


def choose_runner(settings: Settings) -> CommandRunner | None:
    """The runner ``settings.sandbox`` asks for, or None when commands cannot be offered.

    Raises ConfigError when the sandbox is required (``bwrap``) and cannot be used.
    """
    if settings.sandbox == "none":
        log.warning(
            "THREADLINE_SANDBOX=none: commands run without a sandbox, as the bot's own user; "
            "they can read what it can (its files, its data directory, other threads' "
            "workspaces, its processes) and reach the network"
        )
        return HostRunner()
    found = bwrap.probe()
    if found.usable:
        log.info("commands run in a bubblewrap sandbox (%s)", found.detail)
        return bwrap.BwrapRunner(found.executable, command_limits(settings))
    if settings.sandbox == "bwrap":
        raise ConfigError(
            "THREADLINE_SANDBOX",
            f"the bubblewrap sandbox cannot be used: {found.detail}. {bwrap.REMEDY}",
        )
    log.warning(
        "run_command is not offered: the bubblewrap sandbox cannot be used: %s. %s",
        found.detail,
        bwrap.REMEDY,
    )
    return None


def command_limits(settings: Settings) -> bwrap.Limits:
    """A sandboxed command's limits from the settings (the rest: bubblewrap's defaults)."""
    return bwrap.Limits(
        processes=settings.command_processes,
        memory_bytes=settings.command_process_memory_mib << 20,
    )


def runs_commands(settings: Settings) -> bool:
    """Whether any tool may run programs: the workspace's ``run_command``, or a custom tool
    with a ``command``."""
    custom = any(t.enabled and t.command is not None for t in settings.custom_tools.values())
    return settings.workspace_tools or custom


def describe_sandbox(settings: Settings) -> tuple[bool | None, str]:
    """What ``threadline doctor`` says about where commands run: (ok, words); ok is None for
    a choice that works but deserves a second look."""
    if not runs_commands(settings):
        return None, "sandbox: not needed (THREADLINE_WORKSPACE_TOOLS=false: no commands run)"
    if settings.sandbox == "none":
        return None, (
            "sandbox: off (THREADLINE_SANDBOX=none): commands run unsandboxed as the bot's own "
            "user and can read its files, environment and data directory"
        )
    found = bwrap.probe()
    if found.usable:
        memory = command_limits(settings).describe_memory()
        return True, f"sandbox: commands run in bubblewrap ({found.detail}); {memory}"
    outcome = (
        "the bot will not start (THREADLINE_SANDBOX=bwrap)"
        if settings.sandbox == "bwrap"
        else "run_command is not offered (nor custom command tools)"
    )
    return False, f"sandbox: {found.detail}; {outcome}. {bwrap.REMEDY}"
