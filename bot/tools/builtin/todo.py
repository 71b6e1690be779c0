"""``todo_write``: the agent's plan, shown to the thread as a pinned panel."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from bot.sessions.model import Todo
from bot.tools.base import ToolContext, ToolError, tool

MAX_TODOS = 50


def render_for_model(todos: tuple[Todo, ...]) -> str:
    if not todos:
        return "The todo list is empty."
    lines = [f"{i}. [{t.status}] {t.content}" for i, t in enumerate(todos, 1)]
    return "Current todo list:\n" + "\n".join(lines)


@tool
async def todo_write(
    ctx: ToolContext, todos: Annotated[list[Todo], Field(max_length=MAX_TODOS)]
) -> str:
    """Replace the thread's whole todo list. Use it to plan work with several steps and to
    report progress: mark an item in_progress when you start it, completed when done, and
    cancelled when it was dropped undone (denied, failed, no longer wanted). Keep at most one
    item in_progress.

    Args:
        todos: The complete new list, in order. Each item has `content` (what to do) and
            `status`: pending, in_progress, completed or cancelled.
    """
    if sum(1 for t in todos if t.status == "in_progress") > 1:
        raise ToolError("only one item may be in_progress at a time")
    ctx.session.todos = tuple(todos)
    done = sum(1 for t in todos if t.status == "completed")
    return f"Todo list saved ({done}/{len(todos)} completed)."
