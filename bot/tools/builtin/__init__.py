"""Tools every Threadline agent has."""

from __future__ import annotations

from collections.abc import Callable

from bot.config import Settings
from bot.errors import ConfigError
from bot.infra.clock import Clock
from bot.tools.base import Tool
from bot.tools.builtin.todo import todo_write
from bot.tools.registry import ToolRegistry


def builtin_tools(settings: Settings | None = None) -> list[Tool]:
    """``todo_write``; with ``settings``, also what they enable (the workspace tools, with
    ``run_command`` when commands can run as ``settings.sandbox`` asks; ``fetch_url`` unless
    turned off; ``web_search`` when a provider is configured)."""
    tools = [todo_write]
    if settings is None:
        return tools
    from bot.tools.builtin.workspace import workspace_tools
    from bot.tools.commands import choose_runner, runs_commands
    from bot.tools.custom import custom_tools

    runner = choose_runner(settings) if runs_commands(settings) else None
    workspaces = settings.data_dir / "workspaces"
    if settings.workspace_tools:
        tools.extend(workspace_tools(workspaces, runner, network_for(settings, "run_command")))
    tools.extend(web_tools(settings))
    builtin = {t.name for t in tools}
    for name in settings.custom_tools:
        if name in builtin:
            raise ConfigError(
                f"[custom_tools.{name}]", f"{name} is the name of a built-in tool; choose another"
            )
    tools.extend(
        custom_tools(
            settings.custom_tools,
            runner,
            workspaces,
            lambda name, default: network_for(settings, name, default),
        )
    )
    return tools


def tool_registry(settings: Settings, clock: Clock | None = None) -> ToolRegistry:
    """Every tool the settings enable, and the skills toolkit (``load_skill``) over
    ``settings.skills_path``."""
    from bot.tools.skills import TOOL, SkillsToolkit

    registry = ToolRegistry(builtin_tools(settings))
    registry.attach(SkillsToolkit(settings.skills_path, clock), own=(TOOL,))
    return registry


def web_tools(settings: Settings) -> list[Tool]:
    """``fetch_url`` (unless ``[tools.fetch_url] enabled = false``) and ``web_search`` (when
    ``[tools.web_search]`` names a provider)."""
    from bot.tools.search import web_search_tool
    from bot.tools.web import fetch_url_tool

    found = [fetch_url_tool(settings.fetch_url)] if settings.fetch_url.enabled else []
    search = web_search_tool(settings.web_search)
    return [*found, search] if search is not None else found


def network_for(settings: Settings, tool: str, default: bool = False) -> Callable[[str], bool]:
    """Whether a thread's calls of the command tool ``tool`` may reach the network:
    ``network`` of ``tool`` in the thread's channel section, else in ``[tools.<tool>]``, else
    ``default``."""

    def allowed(key: str) -> bool:
        channel = settings.channel(key)
        sections = (channel.tools if channel is not None else {}, settings.tools)
        for section in sections:
            found = section.get(tool)
            if found is not None and found.network is not None:
                return found.network
        return default

    return allowed
