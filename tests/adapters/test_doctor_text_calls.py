"""``threadline doctor`` says whether tool calls written as text are read, and a value that is
not on or off stops the program naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.test_cli import threadline


@pytest.mark.parametrize(("value", "said"), [(None, "off"), ("on", "on"), ("off", "off")])
def test_doctor_says_whether_text_tool_calls_are_read(
    tmp_path: Path, value: str | None, said: str
) -> None:
    env = {} if value is None else {"THREADLINE_TEXT_TOOL_CALLS": value}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert f"[--  ] text tool calls: {said} (THREADLINE_TEXT_TOOL_CALLS)" in out.stdout.splitlines()


def test_a_value_neither_on_nor_off_is_refused_by_name(tmp_path: Path) -> None:
    out = threadline("doctor", env={"THREADLINE_TEXT_TOOL_CALLS": "sometimes"}, cwd=tmp_path)
    assert out.returncode == 2
    assert "THREADLINE_TEXT_TOOL_CALLS" in out.stderr and "boolean" in out.stderr
