"""An MCP server that floods progress and log notifications, through the real ``threadline run``
on the fake Slack with Slack's tiers (``chat.update`` 50 a minute for the workspace).

The server (this file, ``--serve``: a stdio MCP server of its own, no SDK) has one tool,
``flood``, which sends ``--rate`` progress notifications a second and as many log notifications
(``notifications/message``) for ``--seconds``, then answers with the count and a checksum. The
scripted model calls it in one thread; a quarter of the way in, another thread in another
channel asks something of its own. Prints:

* the updates of the flooded thread's reply Slack showed per minute during the flood, and how
  many of them carried a new progress line;
* the 429s Slack sent and the calls made while a ``Retry-After`` ran (both must be 0);
* the bot's CPU (the ``threadline run`` process, not the server it started) during the flood;
* whether the tool's answer reached the model exactly, and the final answer the thread shows;
* how long the other thread took from its mention to its whole answer.

    python bench/mcp_progress.py [--rate 1000] [--seconds 60] [--text] [--streaming edit]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FINAL = "The flood is read: every row is accounted for."
OTHER = "The other thread's answer, on time."
TICK_S = 0.01


# --- the flooding MCP server (stdio, JSON-RPC a line) -----------------------------------------


def serve(rate: int, seconds: float) -> int:
    out = sys.stdout
    flood_tool = {
        "name": "flood",
        "description": "Reads every row, reporting progress as it goes.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    }

    def send(message: dict[str, object]) -> None:
        out.write(json.dumps(message) + "\n")

    for line in sys.stdin:
        if not line.strip():
            continue
        asked = json.loads(line)
        ident, method = asked.get("id"), asked.get("method")
        params = asked.get("params") or {}
        if ident is None:
            continue  # a notification of the client's
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "flood", "version": "1.0"},
            }
        elif method == "tools/list":
            result = {"tools": [flood_tool]}
        elif method == "tools/call":
            token = (params.get("_meta") or {}).get("progressToken")
            result = _flood(send, token, rate, seconds)
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": ident, "result": result})
        out.flush()
    return 0


def _flood(send: object, token: object, rate: int, seconds: float) -> dict[str, object]:
    assert callable(send)
    total = int(rate * seconds)
    start, sent, checksum = time.monotonic(), 0, 0
    while sent < total:
        due = min(total, int((time.monotonic() - start) * rate) + 1)
        for i in range(sent + 1, due + 1):
            if token is not None:
                progress = {"progressToken": token, "progress": i, "total": total}
                progress["message"] = f"row {i}"
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
            log = {"level": "info", "logger": "flood", "data": f"row {i} read"}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
            checksum = (checksum * 31 + i) % 1_000_000_007
        sent = due
        sys.stdout.flush()
        time.sleep(TICK_S)
    text = f"read {total} rows, checksum {checksum}"
    return {"content": [{"type": "text", "text": text}], "isError": False}


def expected(rate: int, seconds: float) -> str:
    total, checksum = int(rate * seconds), 0
    for i in range(1, total + 1):
        checksum = (checksum * 31 + i) % 1_000_000_007
    return f"read {total} rows, checksum {checksum}"


# --- the benchmark ------------------------------------------------------------------------------


def cpu_s(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` (its children not counted)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Figures:
    notifications: int
    """Progress notifications sent (as many log notifications besides)."""
    flood_s: float
    status_lines: int
    reply_lines: int
    reply_edits: int
    updates: int
    """``chat.update`` calls in all."""
    appends: int
    """``chat.appendStream`` calls in all."""
    rejected: int
    violations: int
    cpu_s: float
    exact: bool
    final_shown: bool
    other_s: float

    @property
    def shown_per_minute(self) -> float:
        return (self.status_lines + self.reply_lines) / self.flood_s * 60


async def measure(args: argparse.Namespace, home: Path) -> Figures:
    from tests.e2e.test_process_restart import free_port, threadline
    from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
    from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack, Message

    slack = FakeSlack()
    slack.add_channel("CFLOOD", "flood")
    slack.add_channel("COTHER", "other")
    await slack.start()
    fake = FakeOpenAI()
    await fake.start()
    serve_args = [args.here, "--serve", "--rate", str(args.rate), "--seconds", str(args.seconds)]
    (home / "threadline.toml").write_text(
        f"[mcp_servers.flood]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(serve_args)}\ntimeout_s = {args.seconds + 120}\n"
    )
    first = "Reading every row now." if args.text else ""
    fake.push(Reply(first, calls=[FakeCall("flood__flood", {})]), Reply(OTHER), Reply(FINAL))
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "sk-bench",
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_SLACK_STREAMING": args.streaming,
    }

    def replies(root: Message) -> list[Message]:
        return [
            m
            for m in slack.workspace.messages.values()
            if m.channel == root.channel and m.thread_ts == root.ts and m.bot_id
        ]

    def progressed(root: Message) -> bool:
        """Whether a progress line showed: as the thread's status, or in the reply."""
        said = [*slack.status_history("CFLOOD", root.ts)]
        said += [v for m in replies(root) for v in m.versions]
        return any("row " in line for line in said)

    def answered(root: Message, text: str) -> float | None:
        for m in replies(root):
            if not m.deleted and not m.streaming and m.shown.strip().endswith(text):
                return m.version_times[-1]
        return None

    try:
        async with threadline(home, free_port(), **settings) as proc:
            await slack.wait_for(lambda: len(slack.socket.connections) == 1, 60)
            root = await slack.say("UADA", "CFLOOD", f"{MENTION} read every row of the flood")
            await fake.wait_for_requests(1, 60)
            began, cpu_began = time.monotonic(), cpu_s(proc.pid)
            await slack.wait_for(lambda: progressed(root), 60)
            other_at = time.monotonic()
            other = await slack.say("UBOB", "COTHER", f"{MENTION} something else, meanwhile")
            await slack.wait_for(lambda: answered(other, OTHER) is not None, args.seconds + 60)
            other_s = (answered(other, OTHER) or 0.0) - other_at
            await fake.wait_for_requests(3, args.seconds + 120)
            ended, cpu_ended = time.monotonic(), cpu_s(proc.pid)
            await slack.wait_for(lambda: answered(root, FINAL) is not None, 60)
    finally:
        await fake.stop()
        await slack.stop()

    versions = [
        (shown, at)
        for m in replies(root)
        for shown, at in zip(m.versions, m.version_times, strict=True)
        if began <= at <= ended
    ]
    statuses = [s for s in slack.status_history("CFLOOD", root.ts) if "row " in s]
    tool_result = [m.get("content") for m in fake.requests[2].messages if m.get("role") == "tool"]
    given = [str(c).splitlines()[1:-1] for c in tool_result]  # inside <tool_output …>
    return Figures(
        notifications=int(args.rate * args.seconds),
        flood_s=ended - began,
        status_lines=len(statuses),
        reply_lines=len({shown for shown, _ in versions if "row " in shown}),
        reply_edits=len(versions),
        updates=slack.count("chat.update"),
        appends=slack.count("chat.appendStream"),
        rejected=sum(slack.limits.rejected.values()),
        violations=sum(slack.limits.violations.values()),
        cpu_s=cpu_ended - cpu_began,
        exact=given == [[expected(args.rate, args.seconds)]],
        final_shown=answered(root, FINAL) is not None,
        other_s=other_s,
    )


async def run(args: argparse.Namespace, home: Path) -> None:
    f = await measure(args, home)
    print(
        f"flood: {f.notifications:,} progress + {f.notifications:,} log notifications over"
        f" {f.flood_s:.1f} s ({args.rate:,}/s each)"
    )
    print(
        f"  progress lines shown: {f.status_lines + f.reply_lines}"
        f" ({f.shown_per_minute:.1f} a minute): {f.status_lines} as the thread's status,"
        f" {f.reply_lines} in the reply's text"
    )
    print(
        f"  the reply's versions during the flood: {f.reply_edits}"
        f" ({f.reply_edits / f.flood_s * 60:.1f} a minute); chat.update calls: {f.updates},"
        f" chat.appendStream calls: {f.appends}"
    )
    print(f"  429s: {f.rejected}, calls during a Retry-After: {f.violations}")
    print(
        f"  bot CPU during the flood: {f.cpu_s:.1f} s ({f.cpu_s / f.flood_s * 100:.0f}% of one"
        " core)"
    )
    print(
        f"  tool answer reached the model exactly: {f.exact}; final answer shown: {f.final_shown}"
    )
    print(f"  the other thread, mentioned during the flood: answered in {f.other_s:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=1000, help="progress notifications a second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--text",
        action="store_true",
        help="the model writes a line before the call: progress is then the reply's footer,"
        " edited within chat.update's budget (else the thread's status)",
    )
    parser.add_argument(
        "--streaming",
        default="auto",
        choices=["auto", "native", "edit"],
        help="THREADLINE_SLACK_STREAMING (edit: the reply is edited with chat.update)",
    )
    parser.add_argument("--serve", action="store_true", help="be the flooding MCP server")
    args = parser.parse_args()
    args.here = str(Path(__file__).resolve())
    # this folder holds bench/mcp.py, named like the SDK: it must not hide the `mcp` package
    sys.path.pop(0)
    sys.path.insert(0, str(Path(args.here).parents[1]))
    if args.serve:
        sys.exit(serve(args.rate, args.seconds))
    with tempfile.TemporaryDirectory() as home:
        asyncio.run(run(args, Path(home)))


if __name__ == "__main__":
    main()
