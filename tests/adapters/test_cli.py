"""The `threadline` command as an operator meets it."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def threadline(
    *args: str, env: dict[str, str] | None = None, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return threadline_code(None, *args, env=env, cwd=cwd)


def threadline_code(
    code: str | None, *args: str, env: dict[str, str] | None = None, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``threadline ARGS``, or (``code``) ``python -c CODE ARGS`` where the command runs."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("THREADLINE_", "OPENAI_", "SLACK_", "DISCORD_"))
    }
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, *(("-c", code) if code else ("-m", "adapters.cli")), *args],
        capture_output=True,
        text=True,
        env=clean | {"PYTHONPATH": str(ROOT)},
        cwd=cwd,
        timeout=60,
    )


def test_help_lists_the_commands(tmp_path: Path) -> None:
    out = threadline("--help", cwd=tmp_path)
    assert out.returncode == 0
    assert "run" in out.stdout and "doctor" in out.stdout


HEAVY = ("openai", "mcp", "slack_bolt", "slack_sdk", "discord", "asyncpg", "aiosqlite", "aiohttp")
LOADED = f"""
import sys
from adapters.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & {set(HEAVY)!r})
print("LOADED", ",".join(heavy), code)
"""
"""Runs the command's ``main`` in the process, then names the heavy libraries it imported."""


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("healthcheck", "--help"),
        ("audit", "--help"),
        ("mcp", "try", "--help"),
        ("--version",),
    ],
)
def test_help_and_version_import_none_of_the_heavy_libraries(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    out = threadline_code(LOADED, *args, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] in ("LOADED  0", "LOADED  None")


def test_the_healthcheck_imports_none_of_the_heavy_libraries(tmp_path: Path) -> None:
    # nothing listens on the discard port: the check runs to its end and says unhealthy
    env = {"THREADLINE_HTTP_HOST": "127.0.0.1", "THREADLINE_HTTP_PORT": "9"}
    out = threadline_code(LOADED, "healthcheck", env=env, cwd=tmp_path)
    assert out.stdout.startswith("unhealthy: http://127.0.0.1:9/healthz"), out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "LOADED  1"


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    out = threadline("--version", cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout == f"threadline {importlib.metadata.version('threadline')}\n"


def test_version_falls_back_to_pyproject_when_not_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from adapters import cli

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cli.package_version() == project["version"]


def test_every_command_and_option_has_help() -> None:
    from adapters.cli import _parser

    def walk(
        parser: argparse.ArgumentParser, path: str
    ) -> Iterator[tuple[str, argparse.Action | None, str | None]]:
        for action in parser._actions:
            yield path, action, action.help
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    yield f"{path} {name}", None, helps.get(name)
                    yield from walk(sub, f"{path} {name}")

    walked = list(walk(_parser(), "threadline"))
    # the command, its eight subcommands, and mcp's four
    assert len({path for path, _, _ in walked}) == 13
    missing = [
        f"{path} {'/'.join(action.option_strings) or action.dest if action else ''}"
        for path, action, help in walked
        if not (help or "").strip() or help == argparse.SUPPRESS
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"THREADLINE_HTTP_PORT": "eighty"}, "THREADLINE_HTTP_PORT"),
        ({"OPENAI_BASE_URL": "localhost:11434"}, "OPENAI_BASE_URL"),
        ({"THREADLINE_MAX_TURNS": "0"}, "THREADLINE_MAX_TURNS"),
    ],
)
def test_invalid_configuration_names_the_setting_and_exits_2(
    tmp_path: Path, env: dict[str, str], named: str
) -> None:
    out = threadline("run", env=env, cwd=tmp_path)
    assert out.returncode == 2
    assert named in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_platform_misconfiguration_stops_the_program_cleanly(tmp_path: Path) -> None:
    # Slack in HTTP mode without a signing secret: found after the core was built; the
    # program must still exit (nothing left running) with the one-line message and code 2
    out = threadline("run", env={"SLACK_BOT_TOKEN": "xoxb-1-2-3"}, cwd=tmp_path)
    assert out.returncode == 2
    assert "SLACK_SIGNING_SECRET" in out.stderr and "Traceback" not in out.stderr
    assert "xoxb-1-2-3" not in out.stderr + out.stdout


def test_invalid_toml_is_named(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text("model = [unclosed\n")
    out = threadline("doctor", cwd=tmp_path)
    assert out.returncode == 2
    assert "threadline.toml" in out.stderr and "Traceback" not in out.stderr


def test_doctor_passes_on_the_demo_model(tmp_path: Path) -> None:
    out = threadline("doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[ok  ] model: the offline demo model" in out.stdout
    assert "all checks passed" in out.stdout


@pytest.mark.parametrize(
    ("url", "said"),
    [
        # the discard port: nothing listens
        (
            "http://127.0.0.1:9/v1",
            "could not reach the model server at http://127.0.0.1:9/v1: the connection was refused",
        ),
        (
            "http://nonexistent.invalid/v1",
            "could not reach the model server at "
            "http://nonexistent.invalid/v1: the name nonexistent.invalid could not be resolved",
        ),
    ],
)
def test_doctor_says_why_the_model_server_is_unreachable(
    tmp_path: Path, url: str, said: str
) -> None:
    env = {
        "OPENAI_BASE_URL": url,
        "OPENAI_API_KEY": "sk-test-secret-value-123",
        "THREADLINE_MODEL_MAX_RETRIES": "1",
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
    }
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 1
    failed = [line for line in out.stdout.splitlines() if line.startswith("[FAIL]")]
    assert len(failed) == 1 and "model" in failed[0] and said in failed[0], out.stdout
    assert "did not answer" not in out.stdout
    assert "sk-test-secret-value-123" not in out.stdout + out.stderr


def test_toml_settings_are_read(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text('max_turns = 7\nmodel = "my-model"\n')
    from bot.config import load_settings

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        settings = load_settings()
    finally:
        os.chdir(cwd)
    assert settings.max_turns == 7 and settings.model == "my-model"


def test_doctor_checks_the_playground_token_beyond_loopback(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data"), "THREADLINE_HTTP_HOST": "0.0.0.0"}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 1
    (failed,) = [line for line in out.stdout.splitlines() if line.startswith("[FAIL]")]
    assert "playground on http://0.0.0.0:8765" in failed and "THREADLINE_PLAYGROUND_TOKEN" in failed

    token = "doctor-token-0123456789"
    out = threadline("doctor", env=env | {"THREADLINE_PLAYGROUND_TOKEN": token}, cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    assert (
        "[ok  ] playground will be served on http://0.0.0.0:8765, to those who open it once"
        in out.stdout
    )
    assert token not in out.stdout + out.stderr


def test_doctor_names_the_playground_file_caps(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data"), "THREADLINE_FILE_MAX_BYTES": "2097152"}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    assert (
        f"[--  ] playground files: kept in {tmp_path / 'data' / 'playground_files'}, up to 2.0 MB "
        "each (a larger one is named, not kept; more than 64.0 MB in one message is refused)"
    ) in out.stdout


def test_doctor_names_the_download_time_limit_and_the_pdf_bounds(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data"), "THREADLINE_FILE_DOWNLOAD_SECONDS": "45"}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    assert (
        "a download may take 45 s; a PDF is read in its own process, at most 50 pages" in out.stdout
    )
    bad = threadline("doctor", env=env | {"THREADLINE_FILE_DOWNLOAD_SECONDS": "0"}, cwd=tmp_path)
    assert bad.returncode != 0 and "file_download_seconds" in (bad.stdout + bad.stderr).lower()


def test_doctor_says_who_can_read_the_metrics(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert (
        "[--  ] metrics: http://127.0.0.1:8765/metrics, readable from this machine only"
        in out.stdout
    )
    out = threadline(
        "doctor",
        env=env | {"THREADLINE_HTTP_HOST": "0.0.0.0", "THREADLINE_PLAYGROUND": "false"},
        cwd=tmp_path,
    )
    assert "metrics: http://0.0.0.0:8765/metrics answers anyone who reaches the port" in out.stdout
    token = "scrape-token-0123456789"
    out = threadline("doctor", env=env | {"THREADLINE_METRICS_TOKEN": token}, cwd=tmp_path)
    assert (
        "[ok  ] metrics: http://127.0.0.1:8765/metrics, for requests with the bearer token"
        in out.stdout
    )
    assert token not in out.stdout + out.stderr


def test_doctor_says_commands_run_in_the_sandbox(tmp_path: Path) -> None:
    from tests.sandboxing import sandbox_runner

    sandbox_runner()
    out = threadline("doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert "[ok  ] sandbox: commands run in bubblewrap" in out.stdout, out.stdout


def test_doctor_says_what_to_do_without_bubblewrap(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data"), "PATH": str(tmp_path / "bin")}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 1
    line = next(line for line in out.stdout.splitlines() if "sandbox:" in line)
    assert line.startswith("[FAIL] sandbox: bubblewrap is not installed")
    assert "run_command is not offered" in line and "apt-get install bubblewrap" in line
    assert "THREADLINE_SANDBOX=none" in line


def test_a_required_sandbox_that_cannot_work_stops_the_program(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    env = {
        "THREADLINE_SANDBOX": "bwrap",
        "PATH": str(tmp_path / "bin"),
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
    }
    out = threadline("run", env=env, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("threadline: invalid configuration: THREADLINE_SANDBOX: ")
    assert "bubblewrap is not installed" in out.stderr and "Traceback" not in out.stderr
    assert "apt-get install bubblewrap" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_misspelled_key_in_threadline_toml_is_named_with_the_likely_one(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text('modle = "gpt-4o"\n[access]\ndms = "closed"\n')
    out = threadline("doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert out.returncode == 2
    assert "unknown setting 'modle' (did you mean 'model'?)" in out.stderr
    (tmp_path / "threadline.toml").write_text('model = "gpt-4o"\nslack_edits_per_minute = 20\n')
    out = threadline("doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert "unknown setting" not in out.stderr and "configuration is valid" in out.stdout
