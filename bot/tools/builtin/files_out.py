"""``send_file(path)``: post a file of the thread's workspace into the thread, as the
platform's own file (Slack's upload, a Discord attachment, a link in the playground).

A toolkit because it needs the thread's surface, which the core knows; offered wherever the
workspace tools are. Posting into the thread the model is answering needs no approval, but it
is a side effect: a call a restart cut off is never re-run silently.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Hashable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bot.api.inbound import ThreadKey
from bot.api.transfer import file_transfer
from bot.config import Settings
from bot.errors import SurfaceError
from bot.files.kinds import size_words
from bot.files.names import safe_name
from bot.thread.reach import Surfaces
from bot.tools.base import Tool, ToolContext, ToolError, tool
from bot.tools.sandbox import Workspace

NAMES = ("send_file",)
NO_STATE: Mapping[str, Any] = MappingProxyType({})


class FilesToolkit:
    name = "threadline.files"

    def __init__(self, settings: Settings, root: Path, surfaces: Surfaces) -> None:
        self._tools = {"send_file": _send_file(root, surfaces, settings.file_max_bytes)}
        self._offered = settings.workspace_tools

    def version(self, key: str | None, state: Mapping[str, Any] = NO_STATE) -> Hashable:
        return ()

    def tools(self, key: str | None, state: Mapping[str, Any] = NO_STATE) -> Mapping[str, Tool]:
        return self._tools if self._offered else {}

    def missing(self, key: str | None, name: str, state: Mapping[str, Any] = NO_STATE) -> str:
        return "this bot has no workspace, so there is no file to send."

    def instructions(self, state: Mapping[str, Any] = NO_STATE) -> str:
        return ""

    def status(self, state: Mapping[str, Any] = NO_STATE) -> list[str]:
        return []


def _send_file(root: Path, surfaces: Surfaces, cap: int) -> Tool:
    async def send_file(ctx: ToolContext, path: str) -> str:
        """Post a file of the workspace into this thread, for the people here to download.

        Args:
            path: Path relative to the workspace.
        """
        surface = surfaces.surface_for(ThreadKey(ctx.thread_key))
        transfer = file_transfer(surface) if surface is not None else None
        if transfer is None:
            raise ToolError("files cannot be posted in this thread")
        name, data = await asyncio.to_thread(_read, root, ctx.thread_key, path, cap)
        try:
            await transfer.send(name, data)
        except SurfaceError as exc:
            raise ToolError(f"the platform refused the file: {exc}") from None
        return f"Posted {name} ({size_words(len(data))}) in the thread."

    return tool(send_file, side_effects=True, approval="never")


def _read(root: Path, key: str, path: str, cap: int) -> tuple[str, bytes]:
    ws = Workspace.for_thread(root, key)
    fd = ws.open_file(path, ws.resolve(path))
    with os.fdopen(fd, "rb") as found:
        size = os.fstat(found.fileno()).st_size
        if size > cap:
            raise ToolError(
                f"{path!r} is {size_words(size)}; files up to {size_words(cap)} can be posted"
            )
        if size == 0:
            raise ToolError(f"{path!r} is empty; there is nothing to post")
        data = found.read(cap + 1)
    return safe_name(Path(path).name), data
