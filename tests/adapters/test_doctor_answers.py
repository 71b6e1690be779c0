"""``threadline doctor`` on answers: where a long one continues in a file, how long a model
server may ask the bot to wait, and a value that cannot be used refused with the setting named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.test_cli import threadline


def test_doctor_says_how_long_answers_and_waits_may_be(tmp_path: Path) -> None:
    env = {
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_ANSWER_FILE_AFTER": "20000",
        "THREADLINE_MODEL_RETRY_AFTER_MAX_S": "90",
    }
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (
        "[ok  ] answers: past 20,000 characters the rest goes to a file, answer.md "
        "(THREADLINE_ANSWER_FILE_AFTER); a wait the model server asks for is waited out up to "
        "90 s (THREADLINE_MODEL_RETRY_AFTER_MAX_S), the thread told, within 4 retries"
    ) in out.stdout


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"THREADLINE_ANSWER_FILE_AFTER": "100"}, "THREADLINE_ANSWER_FILE_AFTER"),
        ({"THREADLINE_ANSWER_FILE_AFTER": "long"}, "THREADLINE_ANSWER_FILE_AFTER"),
        ({"THREADLINE_MODEL_RETRY_AFTER_MAX_S": "-1"}, "THREADLINE_MODEL_RETRY_AFTER_MAX_S"),
        ({"THREADLINE_MODEL_RETRY_AFTER_MAX_S": "7200"}, "THREADLINE_MODEL_RETRY_AFTER_MAX_S"),
    ],
)
def test_a_value_that_cannot_be_used_is_named(
    tmp_path: Path, env: dict[str, str], named: str
) -> None:
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert named in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("value", "said"), [("on", "feedback: on: 👍 / 👎"), ("", "feedback: off")]
)
def test_doctor_says_whether_answers_carry_feedback_buttons(
    tmp_path: Path, value: str, said: str
) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    if value:
        env["THREADLINE_FEEDBACK"] = value
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"[--  ] {said}" in out.stdout


def test_a_feedback_setting_that_is_not_on_or_off_is_named(tmp_path: Path) -> None:
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data"), "THREADLINE_FEEDBACK": "maybe"}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 2 and "THREADLINE_FEEDBACK" in out.stderr
