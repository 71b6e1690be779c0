"""``threadline doctor`` on sub-agents: the limits one ``delegate_task`` sub-agent works within,
and a limit that cannot be used refused with the setting named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.test_cli import threadline


def test_doctor_says_what_a_sub_agent_may_do(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data"), "THREADLINE_DELEGATE_MAX_TURNS": "5"}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (
        "[ok  ] sub-agents (delegate_task): each makes up to 5 model calls and uses up to 60,000 "
        "tokens; 4 run at once per thread"
    ) in out.stdout
    env |= {"THREADLINE_RUN_MAX_TOKENS": "20000"}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert "uses up to 20,000 tokens (THREADLINE_RUN_MAX_TOKENS)" in out.stdout


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"THREADLINE_DELEGATE_MAX_TURNS": "0"}, "THREADLINE_DELEGATE_MAX_TURNS"),
        ({"THREADLINE_DELEGATE_MAX_TOKENS": "lots"}, "THREADLINE_DELEGATE_MAX_TOKENS"),
        ({"THREADLINE_DELEGATE_MAX_CONCURRENT": "500"}, "THREADLINE_DELEGATE_MAX_CONCURRENT"),
    ],
)
def test_a_sub_agent_limit_that_cannot_be_used_is_named(
    tmp_path: Path, env: dict[str, str], named: str
) -> None:
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert named in out.stderr and "Traceback" not in out.stderr
