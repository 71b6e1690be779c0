"""``threadline``: run the bot, or check its configuration."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence

from adapters.admin import add_commands, run_audit, run_rules
from adapters.doctor import run_doctor
from adapters.platforms import Platforms
from adapters.runtime import Runtime
from bot.config import Settings, load_settings
from bot.errors import ConfigError, StoreError
from bot.infra.logs import configure_logging
from bot.storage.choose import store_problem

log = logging.getLogger("threadline")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="threadline",
        description="An LLM agent that lives in Slack and Discord threads. With nothing "
        "configured, `threadline run` serves a local playground on an offline demo model.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the bot (the local playground when no platform is configured)")
    sub.add_parser("doctor", help="check the configuration, the model endpoint and each platform")
    sub.add_parser("discord-invite", help="print the link that adds the Discord bot to a server")
    add_commands(sub)
    sub.add_parser(
        "healthcheck", help="exit 0 when the running bot's /healthz answers (for containers)"
    )
    return parser


async def _serve(settings: Settings, platforms: Platforms) -> None:
    runtime = Runtime(settings, platforms=platforms)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await runtime.start()
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
        log.info("stopping")
    finally:
        await runtime.stop()


def _admin(settings: Settings, args: argparse.Namespace) -> int:
    command = run_audit if args.command == "audit" else run_rules
    try:
        return asyncio.run(command(settings, args))
    except ValueError as exc:
        print(f"threadline {args.command}: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"threadline: {store_problem(settings, exc)}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 0
    try:
        settings = load_settings()
        platforms = Platforms.load()
    except ConfigError as exc:
        print(f"threadline: invalid configuration: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings, *platforms.settings())
    if args.command == "doctor":
        return asyncio.run(run_doctor(settings, platforms))
    if args.command in ("audit", "rules"):
        return _admin(settings, args)
    if args.command == "healthcheck":
        from adapters.healthcheck import run_healthcheck

        return asyncio.run(run_healthcheck(settings))
    if args.command == "discord-invite":
        from adapters.discord.invite import print_invite  # imports discord.py only when asked

        return asyncio.run(print_invite(platforms.discord))
    try:
        asyncio.run(_serve(settings, platforms))
    except ConfigError as exc:
        print(f"threadline: invalid configuration: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
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
