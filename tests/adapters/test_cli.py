"""The `threadline` command as an operator meets it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def threadline(*args: str, env: dict[str, str] | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("THREADLINE_", "OPENAI_", "SLACK_", "DISCORD_"))}
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", *args],
        capture_output=True,
        text=True,
        env=clean | {"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        cwd=cwd,
        timeout=60,
    )


def test_help_lists_the_commands(tmp_path: Path) -> None:
    out = threadline("--help", cwd=tmp_path)
    assert out.returncode == 0
    assert "run" in out.stdout and "doctor" in out.stdout


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
    assert "demo model (offline)" in out.stdout
    assert "all checks passed" in out.stdout


def test_doctor_says_when_the_model_server_is_unreachable(tmp_path: Path) -> None:
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:9",  # discard port: nothing listens
        "OPENAI_API_KEY": "sk-test-secret-value-123",
        "THREADLINE_MODEL_MAX_RETRIES": "0",
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
    }
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 1
    assert "FAIL" in out.stdout and "model" in out.stdout
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
