"""Tools every Threadline agent has."""

from __future__ import annotations

from bot.config import Settings
from bot.tools.base import Tool
from bot.tools.builtin.todo import todo_write


def builtin_tools(settings: Settings | None = None) -> list[Tool]:
    """``todo_write``; with ``settings``, also what they enable (the workspace tools)."""
    tools = [todo_write]
    if settings is not None and settings.workspace_tools:
        from bot.tools.builtin.workspace import workspace_tools

        tools.extend(workspace_tools(settings.data_dir / "workspaces"))
    return tools
