"""Mistakes in the configuration file, as `threadline doctor` and `threadline run` name them:
a configured file that is not there, and values of the file named by file, line and key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.adapters.test_cli import threadline


def doctor(tmp_path: Path, **env: str):  # type: ignore[no-untyped-def]
    return threadline(
        "doctor", env={"THREADLINE_DATA_DIR": str(tmp_path / "data"), **env}, cwd=tmp_path
    )


def refused(out) -> str:  # type: ignore[no-untyped-def]
    """The one line a refused configuration prints."""
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "all checks passed" not in out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


# -- the file THREADLINE_CONFIG names ---------------------------------------------------


def test_a_configured_file_that_does_not_exist_stops_doctor_and_run(tmp_path: Path) -> None:
    missing = tmp_path / "threadlin.toml"
    expected = f"threadline: invalid configuration: THREADLINE_CONFIG: {missing} does not exist"
    assert refused(doctor(tmp_path, THREADLINE_CONFIG=str(missing))) == expected
    assert refused(threadline("run", env={"THREADLINE_CONFIG": str(missing)}, cwd=tmp_path)) == (
        expected
    )


def test_a_configured_directory_is_not_a_configuration_file(tmp_path: Path) -> None:
    line = refused(doctor(tmp_path, THREADLINE_CONFIG=str(tmp_path)))
    assert line == (
        f"threadline: invalid configuration: THREADLINE_CONFIG: {tmp_path} is a directory, "
        "not a file"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_configuration_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "threadline.toml"
    path.write_text('model = "gpt-4o"\n')
    path.chmod(0)
    line = refused(doctor(tmp_path, THREADLINE_CONFIG=str(path)))
    assert line.startswith(f"threadline: invalid configuration: THREADLINE_CONFIG: {path} cannot")


def test_without_threadline_config_a_missing_default_file_is_fine(tmp_path: Path) -> None:
    out = doctor(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "all checks passed" in out.stdout


# -- values of the file ---------------------------------------------------------------------

POLICY = """model = "gpt-4o"

[tools.web_search]
approval = "never"

[tools.run_command]
# commands ask first
approval = 5
"""


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            POLICY,
            "threadline.toml, line 8: tools.run_command.approval: "
            "must be one of always, ask, never (not 5)",
        ),
        (
            '[access]\ndms = "closed"\nadmin = ["slack:U1"]\n',
            "threadline.toml, line 3: access.admin: unknown key 'admin' (did you mean 'admins'?)",
        ),
        (
            "[tools.fetch_url]\nallow_privat = true\n",
            "threadline.toml, line 2: tools.fetch_url.allow_privat: "
            "unknown key 'allow_privat' (did you mean 'allow_private'?)",
        ),
        (
            "[tools]\nrun_command = { approvers = { requester = true, admin = true } }\n",
            "threadline.toml, line 2: tools.run_command.approvers.admin: "
            "unknown key 'admin' (did you mean 'admins'?)",
        ),
        (
            '[channels."slack:T1:C1"]\nsystem_prompt_mode = "append"\n',
            'threadline.toml, line 2: channels."slack:T1:C1".system_prompt_mode: '
            "must be one of add, replace (not 'append')",
        ),
        (
            'model = "gpt-4o"\nlog_level = "loud"\n',
            "threadline.toml, line 2: log_level: must be one of DEBUG, INFO, WARNING, ERROR",
        ),
        (
            'model = "gpt-4o"\n\n[access\ndms = "closed"\n',
            "threadline.toml, line 3: not valid TOML: Expected ']' at the end of a table "
            "declaration",
        ),
    ],
    ids=[
        "choice",
        "unknown-key",
        "unknown-key-in-tool-section",
        "unknown-key-inline",
        "channel-choice",
        "validator",
        "syntax",
    ],
)
def test_a_mistake_in_the_file_names_the_file_the_line_and_the_key(
    tmp_path: Path, text: str, said: str
) -> None:
    (tmp_path / "threadline.toml").write_text(text)
    line = refused(doctor(tmp_path))
    assert line == f"threadline: invalid configuration: {said}"
    assert "THREADLINE_" not in line and "Value error" not in line and "Input should" not in line


def test_run_names_the_file_line_and_key_too(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "bot.toml"
    path.parent.mkdir()
    path.write_text(POLICY)
    line = refused(threadline("run", env={"THREADLINE_CONFIG": str(path)}, cwd=tmp_path))
    assert line == (
        f"threadline: invalid configuration: {path}, line 8: tools.run_command.approval: "
        "must be one of always, ask, never (not 5)"
    )


def test_a_mistake_in_an_environment_variable_still_names_the_variable(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text('[tools.run_command]\napproval = "ask"\n')
    line = refused(doctor(tmp_path, THREADLINE_TOOLS='{"run_command": {"approval": 5}}'))
    assert line == (
        "threadline: invalid configuration: THREADLINE_TOOLS: run_command.approval: "
        "must be one of always, ask, never (not 5)"
    )
    line = refused(doctor(tmp_path, THREADLINE_LOG_LEVEL="loud"))
    assert line == (
        "threadline: invalid configuration: THREADLINE_LOG_LEVEL: "
        "must be one of DEBUG, INFO, WARNING, ERROR"
    )
