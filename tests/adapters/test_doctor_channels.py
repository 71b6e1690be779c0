"""``threadline doctor`` prints the effective settings of each channel section."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.test_cli import threadline

CONFIG = """
models = ["gpt-4o", "gpt-4o-mini"]
[channels."slack:T1:COPS"]
model = "gpt-4o"
system_prompt = "You help the on-call engineers."
hide_tools = ["run_command"]
max_turns = 5
during_run = "queue"
[channels."slack:T1:CQUIET"]
thread_replies = "mentions"
"""


def test_doctor_prints_each_channels_effective_settings(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(CONFIG)
    out = threadline("doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "/threadline model may choose gpt-4o, gpt-4o-mini" in out.stdout
    line = next(x for x in out.stdout.splitlines() if 'channel "slack:T1:COPS"' in x)
    assert "model: gpt-4o (this section)" in line
    assert "system prompt: 31 characters, added to the global one" in line
    assert "hidden: run_command" in line and "max_turns 5, context_window 128000 (global)" in line
    assert "during a run: queue" in line
    assert "thread replies: every message of a thread the bot is in (global)" in line
    line = next(x for x in out.stdout.splitlines() if 'channel "slack:T1:CQUIET"' in x)
    assert "thread replies: only messages that mention the bot" in line
    assert (
        "thread replies: every message of a thread the bot is in (THREADLINE_THREAD_REPLIES=all"
        in out.stdout
    )


def test_doctor_states_the_thread_replies_mode_from_the_environment(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data"), "THREADLINE_THREAD_REPLIES": "mentions"}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "(THREADLINE_THREAD_REPLIES=mentions;" in out.stdout
    bad = threadline("doctor", env={**env, "THREADLINE_THREAD_REPLIES": "some"}, cwd=tmp_path)
    assert bad.returncode == 2 and "THREADLINE_THREAD_REPLIES" in bad.stderr, bad.stderr


def test_a_mistaken_channel_setting_is_named(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(
        '[channels."slack:T1:C1"]\nsystem_prompt_mode = "append"\n'
    )
    out = threadline("doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert (
        'threadline.toml, line 2: channels."slack:T1:C1".system_prompt_mode: '
        "must be one of add, replace (not 'append')"
        in out.stderr
        and "Traceback" not in out.stderr
    )
