"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned with the
Node.js 22 it needs in ``package.json`` and ``package-lock.json`` beside this file), installed by
``npm ci`` into a cache directory and run against ``threadline mcp try`` (``client.py``).

``python -m tests.mcp_conformance.suite`` installs it (``.ci/run`` does, before the tests); the
test installs it too when it is missing. The directory is ``$MCP_CONFORMANCE_DIR``, else
``$XDG_CACHE_HOME/threadline/mcp-conformance`` (``~/.cache/...``); an installation whose lock
file matches the pins is used as it is.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PINS = ("package.json", "package-lock.json")
CLIENT = HERE / "client.py"
OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "ENETUNREACH")
"""What npm says when it cannot reach its registry."""


class Unreachable(Exception):
    """npm is missing, or its registry cannot be reached: the suite cannot be installed here."""


@dataclass(frozen=True, slots=True)
class Suite:
    node: Path
    cli: Path

    def command(self, *args: str) -> list[str]:
        return [str(self.node), str(self.cli), *args]


def home() -> Path:
    if found := os.environ.get("MCP_CONFORMANCE_DIR"):
        return Path(found)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "threadline" / "mcp-conformance"


def _suite(where: Path) -> Suite:
    modules = where / "node_modules"
    return Suite(
        modules / "node" / "bin" / "node",
        modules / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
    )


def installed(where: Path) -> Suite | None:
    suite = _suite(where)
    pinned = all(
        (where / pin).is_file() and (where / pin).read_bytes() == (HERE / pin).read_bytes()
        for pin in PINS
    )
    return suite if pinned and suite.node.is_file() and suite.cli.is_file() else None


def install(where: Path | None = None) -> Suite:
    """The suite, installed first if it is not (raises :class:`Unreachable` when npm cannot
    reach its registry, RuntimeError for any other failure)."""
    where = where or home()
    if (suite := installed(where)) is not None:
        return suite
    npm = shutil.which("npm")
    if npm is None:
        raise Unreachable("npm is not installed")
    where.mkdir(parents=True, exist_ok=True)
    for pin in PINS:
        shutil.copyfile(HERE / pin, where / pin)
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        (where / "package-lock.json").unlink(missing_ok=True)
        if any(code in said for code in OFFLINE):
            raise Unreachable(f"npm could not reach its registry: {said[-500:]}")
        raise RuntimeError(f"npm ci failed in {where}: {said[-2000:]}")
    if (suite := installed(where)) is None:
        raise RuntimeError(f"npm ci left no node or conformance suite in {where}: {said[-2000:]}")
    return suite


@dataclass(frozen=True, slots=True)
class Outcome:
    scenario: str
    passed: int
    failed: int
    warnings: int
    ok: bool
    """What the suite says of the scenario as a whole (its exit status 0)."""
    output: str


def scenarios(suite: Suite) -> list[str]:
    """The client scenarios the pinned suite has."""
    listed = subprocess.run(
        suite.command("list"), capture_output=True, text=True, timeout=60, check=True
    ).stdout
    part = listed.split("Client scenarios", 1)[1]
    return [
        line.strip().removeprefix("- ").split(" ")[0]
        for line in part.splitlines()
        if line.strip().startswith("- ")
    ]


def run(suite: Suite, scenario: str, out: Path, timeout_s: float = 60.0) -> Outcome:
    """One client scenario against ``threadline mcp try`` (run from ``out``, with no
    configuration and none of the bot's environment)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("THREADLINE_", "OPENAI_", "SLACK_", "DISCORD_", "MCP_CONFORMANCE"))
    } | {"PYTHONPATH": str(ROOT)}
    client = f"{shlex.quote(sys.executable)} {shlex.quote(str(CLIENT))}"
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        suite.command(
            "client",
            "--command",
            client,
            "--scenario",
            scenario,
            "--timeout",
            str(int(timeout_s * 1000)),
            "-o",
            str(out / "results"),
        ),
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s + 60,
    )
    found = sorted((out / "results").glob(f"{scenario}-*/checks.json"))
    checks = json.loads(found[-1].read_text()) if found else []
    count = {
        status: sum(1 for c in checks if c.get("status") == status)
        for status in ("SUCCESS", "FAILURE", "WARNING")
    }
    return Outcome(
        scenario,
        count["SUCCESS"],
        count["FAILURE"],
        count["WARNING"],
        done.returncode == 0,
        done.stdout + done.stderr,
    )


if __name__ == "__main__":
    try:
        print(f"MCP conformance suite: {install().cli}")
    except Unreachable as exc:
        print(f"MCP conformance suite not installed ({exc}): its test will skip")
