"""``threadline mcp list`` and ``threadline mcp try``: the configured MCP servers, and one server
tried by hand (connect, list its tools, call one, print the result).

The parser is built from this light module; what the commands run is imported when they run.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.config import Settings

TRY = (
    "Connect to one MCP server (a configured one by its name, even a disabled one, or a "
    "streamable HTTP server by its URL), list its tools with their hints and how a thread would "
    "meet them, and call one tool when TOOL is given, printing its result. Exit status: 0 when "
    "all went well, 1 when the server did not connect or the call failed, 2 when the input "
    "cannot be tried (an unknown name or tool, arguments that are not a JSON object)."
)
LIST = (
    "Start every enabled MCP server of threadline.toml (all at once, each within its "
    "timeout_s), and print, for each configured server, how it is reached, how it signs in, "
    "whether it connects (or why not), and its tools with their hints. Exit status 1 when a "
    "server does not connect."
)


def add_mcp_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="list the configured MCP servers, or try one by hand")
    actions = mcp.add_subparsers(
        dest="mcp_command", metavar="ACTION", help="`threadline mcp ACTION --help` tells more"
    )
    actions.add_parser(
        "list", help="the configured servers, their state and tools", description=LIST
    )
    trial = actions.add_parser(
        "try", help="connect to one server, list its tools, call one", description=TRY
    )
    trial.add_argument("target", metavar="NAME|URL", help="a configured server's name, or a URL")
    trial.add_argument("tool", metavar="TOOL", nargs="?", help="the tool to call (its own name)")
    trial.add_argument(
        "arguments", metavar="JSON", nargs="?", help='the call\'s arguments, e.g. \'{"id": "T-1"}\''
    )
    trial.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="to connect and for the call (default: the server's timeout_s, else 60)",
    )


def run_mcp(settings: Settings, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import asyncio

    from bot.infra.clock import SystemClock
    from bot.mcp.report import BadInput, Trial, list_servers, try_server

    def say(line: str) -> None:
        print(line, flush=True)

    if args.mcp_command is None:
        parser.parse_args(["mcp", "--help"])
        return 0
    if args.mcp_command == "list":
        return asyncio.run(list_servers(settings, SystemClock(), say))
    if args.timeout is not None and not 0 < args.timeout <= 3600:
        print("threadline mcp try: --timeout must be above 0 and at most 3600", file=sys.stderr)
        return 2
    trial = Trial(args.target, args.tool, args.arguments, args.timeout)
    try:
        return asyncio.run(try_server(trial, settings, SystemClock(), say))
    except BadInput as exc:
        print(f"threadline mcp try: {exc}", file=sys.stderr)
        return 2
