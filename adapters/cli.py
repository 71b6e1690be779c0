"""``threadline``: run the bot, or check its configuration.

The parser is built from light modules only, and each command imports what it runs inside the
function that runs it: ``threadline --help``, ``threadline COMMAND --help``, ``--version`` and
``healthcheck`` (Docker's, every 30 s) load neither the model client, the MCP SDK, the chat
SDKs nor the database drivers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.admin import add_commands
from adapters.mcp_command import add_mcp_command

if TYPE_CHECKING:
    from adapters.platforms import Platforms
    from bot.config import Settings

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
DOCTOR = (
    "Check the configuration, the data directory and store, the model endpoint (one short "
    "request; its retries are said in its line, and a URL that is no OpenAI-compatible API is "
    "said so), the HTTP port, the command sandbox, each configured platform (token shape, "
    "token, scopes, intents), MCP servers and tools, then print the effective limits and "
    "policy. Each line starts with [ok  ], [FAIL] or [--  ] (information); the output is the "
    "report only (nothing below ERROR is logged). Exit status: 0 when nothing failed, 1 when "
    "a check failed, 2 when the configuration is invalid."
)


def package_version() -> str:
    """The installed package's version, else (a checkout run without installing) pyproject's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("threadline")
    except PackageNotFoundError:
        import tomllib

        try:
            return str(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"])
        except (OSError, ValueError, KeyError):
            return "unknown"


class _Version(argparse.Action):
    """``--version``: the version is looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print the version of Threadline and exit")
        super().__init__(
            option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, **kwargs
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="threadline",
        description="An LLM agent that lives in Slack and Discord threads. With nothing "
        "configured, `threadline run` serves a local playground on an offline demo model.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", help="what to do; `threadline COMMAND --help` tells more"
    )
    sub.add_parser("run", help="run the bot (the local playground when no platform is configured)")
    sub.add_parser(
        "doctor",
        help="check the configuration, the model endpoint and each platform",
        description=DOCTOR,
    )
    sub.add_parser("discord-invite", help="print the link that adds the Discord bot to a server")
    add_commands(sub)
    add_mcp_command(sub)
    sub.add_parser(
        "healthcheck", help="exit 0 when the running bot's /healthz answers (for containers)"
    )
    return parser


async def _serve(settings: Settings, platforms: Platforms) -> None:
    import asyncio
    import contextlib
    import logging
    import signal

    from adapters.runtime import Runtime
    from bot.infra import collector

    runtime = Runtime(settings, platforms=platforms)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await runtime.start()
    # Start-up is done: what it built is frozen out of the garbage collector's walks and the
    # young generation's threshold raised, which cut the collector's share of a busy worker's
    # CPU from about a fifth to a few percent (bench/engine.py --gc; docs/benchmarks.md). Here,
    # not in Runtime.start, since it is a decision for the whole process.
    collector.settle()
    try:
        if settings.playground_enabled(platforms.configured):
            opened = (
                "  (open it as /?token=<THREADLINE_PLAYGROUND_TOKEN>)"
                if settings.playground_token
                else ""
            )
            print(
                f"Threadline playground: {runtime.url}  (model: {runtime.core.model_label}){opened}",
                flush=True,
            )
        await stop.wait()
        logging.getLogger("threadline").info("stopping")
    finally:
        await runtime.stop()


def _admin(settings: Settings, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The operator's commands: ``audit``, ``rules`` and ``mcp``."""
    if args.command == "mcp":
        from adapters.mcp_command import run_mcp

        return run_mcp(settings, args, parser)
    import asyncio

    from adapters.admin import run_audit, run_feedback, run_rules
    from bot.errors import StoreError
    from bot.storage.choose import store_problem

    command = {"audit": run_audit, "rules": run_rules, "feedback": run_feedback}[args.command]
    try:
        return asyncio.run(command(settings, args))
    except ValueError as exc:
        print(f"threadline {args.command}: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"threadline: {store_problem(settings, exc)}", file=sys.stderr)
        return 1


def _healthcheck() -> int:
    """Reads the core settings only (the host and port it asks): the platforms' settings are
    the running bot's concern, and Docker runs this every 30 s."""
    from adapters.healthcheck import run_healthcheck
    from bot.config import load_settings
    from bot.errors import ConfigError

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"threadline: invalid configuration: {exc}", file=sys.stderr)
        return 2
    return run_healthcheck(settings)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "healthcheck":
        return _healthcheck()
    import asyncio

    from adapters.platforms import Platforms
    from bot.config import load_settings
    from bot.errors import ConfigError, StoreError
    from bot.infra.logs import configure_logging

    try:
        settings = load_settings()
        platforms = Platforms.load()
    except ConfigError as exc:
        print(f"threadline: invalid configuration: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings, *platforms.settings())
    if args.command == "doctor":
        import logging

        from adapters.doctor import run_doctor

        # the report is the output: what the checks log on the way (a retry, a sandbox found)
        # is in their lines already; only errors are logged
        for handler in logging.getLogger().handlers:
            handler.setLevel(max(handler.level, logging.ERROR))
        return asyncio.run(run_doctor(settings, platforms))
    if args.command in ("audit", "rules", "mcp", "feedback"):
        return _admin(settings, args, parser)
    if args.command == "discord-invite":
        from adapters.discord.invite import print_invite  # imports discord.py only when asked

        return asyncio.run(print_invite(platforms.discord))
    try:
        asyncio.run(_serve(settings, platforms))
    except ConfigError as exc:
        print(f"threadline: invalid configuration: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        from bot.storage.choose import store_problem

        print(f"threadline: {store_problem(settings, exc)}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"threadline: could not start: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
