"""The CPU a short ``threadline`` command costs before it does anything: user + system time of
``threadline --help``, ``threadline healthcheck --help`` and ``threadline --version``, and of ``threadline healthcheck``
itself (asking a port nothing listens on, as Docker's check does when the bot is down), each run
``--runs`` times as a fresh process (``python -m adapters.cli``, as the installed command
starts), read from ``resource.getrusage(RUSAGE_CHILDREN)`` around each run. Prints the median,
min and max of each in milliseconds.

Run: ``python -m bench.cli_start [--runs 15]``."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("healthcheck", "--help"),
    ("--version",),
    ("healthcheck",),
)
NOTHING_LISTENS = {"THREADLINE_HTTP_HOST": "127.0.0.1", "THREADLINE_HTTP_PORT": "9"}


def cpu_of(args: tuple[str, ...]) -> float:
    """Seconds of user + system CPU one ``threadline ARGS`` process took."""
    env = os.environ | NOTHING_LISTENS | {"PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "adapters.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per command")
    runs = parser.parse_args().runs
    cpu_of(("--help",))  # warm the file cache and the bytecode
    print(f"user+sys CPU per process, {runs} runs each (ms)")
    for args in COMMANDS:
        took = sorted(cpu_of(args) * 1000 for _ in range(runs))
        label = "threadline " + " ".join(args)
        print(
            f"{label:<30} median {statistics.median(took):7.1f}"
            f"   min {took[0]:7.1f}   max {took[-1]:7.1f}"
        )


if __name__ == "__main__":
    main()
