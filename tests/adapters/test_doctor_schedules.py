"""``threadline doctor`` on scheduled prompts and memory: the zone times are read in, the limits,
and a zone or a limit that cannot be used refused with the setting named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.test_cli import threadline


def test_doctor_says_which_zone_and_limits_apply(tmp_path: Path) -> None:
    env = {
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_TIMEZONE": "Europe/Paris",
        "THREADLINE_SCHEDULES_PER_THREAD": "3",
        "THREADLINE_MEMORY_NOTE_ITEMS": "4",
    }
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if "scheduled prompts" in x)
    assert line.startswith("[ok  ] scheduled prompts: times in Europe/Paris (now ")
    assert ("CET)" in line or "CEST)" in line) and "at most 3 per thread and 50 per channel" in line
    assert "once every 60 s" in line
    assert (
        "[ok  ] memory: at most 10,000 per channel; the model sees the 4 most recent" in out.stdout
    )


@pytest.mark.parametrize(
    ("env", "named", "said"),
    [
        (
            {"THREADLINE_TIMEZONE": "Mars/Olympus_Mons"},
            "THREADLINE_TIMEZONE",
            "unknown time zone 'Mars/Olympus_Mons'",
        ),
        ({"THREADLINE_TIMEZONE": "../../etc/passwd"}, "THREADLINE_TIMEZONE", "use an IANA name"),
        ({"THREADLINE_SCHEDULE_MIN_INTERVAL_S": "10"}, "THREADLINE_SCHEDULE_MIN_INTERVAL_S", "60"),
        ({"THREADLINE_SCHEDULES_PER_THREAD": "0"}, "THREADLINE_SCHEDULES_PER_THREAD", "1"),
    ],
)
def test_a_zone_or_limit_that_cannot_be_used_is_named(
    tmp_path: Path, env: dict[str, str], named: str, said: str
) -> None:
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert named in out.stderr and said in out.stderr and "Traceback" not in out.stderr
