"""``threadline doctor`` states what ``read_channel`` gives the model, and names a bad bound."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.test_cli import threadline


def test_doctor_states_the_read_channel_bounds(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (
        "read_channel reads the thread's own channel: up to 50 messages (12,000 characters)"
        in out.stdout
    )
    off = threadline("doctor", env={**env, "THREADLINE_READ_CHANNEL_MESSAGES": "0"}, cwd=tmp_path)
    assert "read_channel: off (THREADLINE_READ_CHANNEL_MESSAGES=0)" in off.stdout
    bad = threadline("doctor", env={**env, "THREADLINE_READ_CHANNEL_CHARS": "lots"}, cwd=tmp_path)
    assert bad.returncode == 2 and "THREADLINE_READ_CHANNEL_CHARS" in bad.stderr, bad.stderr
