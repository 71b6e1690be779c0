"""A stand-in for the bot process in the sandbox-escape suite.

It starts as the bot does (settings from its environment, ``.env`` and ``threadline.toml`` in its
working directory; the built-in tools composed from them), says ``{"ready": …}`` on stdout, then
answers one JSON request a line: ``{"tool": name, "args": {…}, "key": thread key}`` →
``{"id": its id, "result": text}`` (a tool failure is a result too, as the model would see it). A request with
``"limits"`` runs ``run_command`` in a sandbox with those limits instead of the defaults.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

from bot.api.inbound import ThreadKey
from bot.config import load_settings
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools.base import Tool, ToolContext, ToolError
from bot.tools.builtin import builtin_tools
from bot.tools.builtin.workspace import workspace_tools
from bot.tools.bwrap import BwrapRunner, Limits, probe


async def call(tools: dict[str, Tool], request: dict[str, Any]) -> str:
    key = ThreadKey(request.get("key", "playground:security"))
    ctx = ToolContext(key, Session(key=key), None, ManualClock())
    item = tools[request["tool"]]
    try:
        return await item.invoke(ctx, item.parse(json.dumps(request["args"])))
    except ToolError as exc:
        return f"error: {exc}"


async def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    settings = load_settings()
    tools = {item.name: item for item in builtin_tools(settings)}
    root = settings.data_dir / "workspaces"
    print(json.dumps({"ready": sorted(tools), "pid": os.getpid(), "uid": os.geteuid()}), flush=True)
    while line := await asyncio.to_thread(sys.stdin.readline):
        request = json.loads(line)
        chosen = tools
        if "limits" in request:
            runner = BwrapRunner(probe().executable, Limits(**request["limits"]))
            chosen = {item.name: item for item in workspace_tools(root, runner)}
        answer = {"id": request.get("id"), "result": await call(chosen, request)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
