"""``threadline mcp list`` and ``threadline mcp try``: the configured MCP servers, and one server
tried by hand (connect, list its tools, call one, print the result).

The parser is built from this light module; what the commands run is imported when they run.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from bot.config import Settings
    from bot.mcp.report import Trial

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

LOGIN = (
    "Sign the bot in to a configured MCP server with OAuth 2.1 (its shared sign-in): prints a "
    "link to open in a browser and waits for the sign-in to come back to a local port "
    "(http://127.0.0.1:PORT/mcp/oauth/callback). The tokens are kept encrypted in the data "
    "directory (THREADLINE_SECRET_KEY, else data_dir/secret.key). Exit status 1 when the "
    "sign-in did not go through, 2 for a server that is not configured for OAuth."
)
LOGOUT = (
    "Revoke a server's OAuth sign-in at its authorization server (where it offers revocation) "
    "and delete the tokens kept for it."
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
    trial.add_argument(
        "--follow-sign-in",
        action="store_true",
        help="open an OAuth sign-in link itself, without a person (for test authorization"
        " servers that sign in whoever asks, as the MCP conformance suite's)",
    )
    login = actions.add_parser(
        "login",
        help="sign the bot in to a server with OAuth (its shared sign-in)",
        description=LOGIN,
    )
    login.add_argument("name", metavar="NAME", help="a configured server with an [oauth] section")
    login.add_argument(
        "--port",
        type=int,
        default=None,
        metavar="PORT",
        help="the local port the sign-in comes back to (default: http_port, or any free one"
        " when the bot holds it)",
    )
    logout = actions.add_parser(
        "logout", help="revoke and delete a server's OAuth sign-in", description=LOGOUT
    )
    logout.add_argument("name", metavar="NAME", help="a configured server with an [oauth] section")
    logout.add_argument(
        "--person",
        default=None,
        metavar="ID",
        help="one person's sign-in to a per-person server (their id as `threadline mcp list`"
        " counts them), instead of the shared one",
    )


def run_mcp(settings: Settings, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import asyncio

    from bot.infra.clock import SystemClock
    from bot.mcp.report import BadInput, Trial, list_servers, logout

    def say(line: str) -> None:
        print(line, flush=True)

    if args.mcp_command is None:
        parser.parse_args(["mcp", "--help"])
        return 0
    if args.mcp_command == "list":
        return asyncio.run(list_servers(settings, SystemClock(), say))
    try:
        if args.mcp_command == "login":
            return asyncio.run(_login(settings, args.name, args.port, say))
        if args.mcp_command == "logout":
            return asyncio.run(logout(args.name, settings, say, args.person))
    except BadInput as exc:
        print(f"threadline mcp {args.mcp_command}: {exc}", file=sys.stderr)
        return 2
    if args.timeout is not None and not 0 < args.timeout <= 3600:
        print("threadline mcp try: --timeout must be above 0 and at most 3600", file=sys.stderr)
        return 2
    trial = Trial(args.target, args.tool, args.arguments, args.timeout)
    try:
        return asyncio.run(_try(trial, settings, args.follow_sign_in, say))
    except BadInput as exc:
        print(f"threadline mcp try: {exc}", file=sys.stderr)
        return 2


async def _try(trial: Trial, settings: Settings, follow: bool, say: Callable[[str], None]) -> int:
    from adapters.mcp_sign_in import LoopbackBrowser
    from bot.infra.clock import SystemClock
    from bot.mcp.report import try_server

    browser = LoopbackBrowser(say, follow=follow)
    await browser.start()
    try:
        return await try_server(trial, settings, SystemClock(), say, browser=browser)
    finally:
        await browser.aclose()


async def _login(
    settings: Settings, name: str, port: int | None, say: Callable[[str], None]
) -> int:
    from adapters.mcp_sign_in import LoopbackBrowser
    from bot.infra.clock import SystemClock
    from bot.mcp.report import login

    browser = LoopbackBrowser(say)
    try:
        await browser.start(port=settings.http_port if port is None else port)
    except OSError:
        if port is not None:
            say(f"port {port} cannot be opened on 127.0.0.1 (in use?): give another --port")
            return 1
        await browser.start()  # the bot holds its port: any free one
    try:
        return await login(name, settings, SystemClock(), say, browser)
    finally:
        await browser.aclose()
