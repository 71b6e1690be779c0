"""``threadline doctor`` says whom approvals tell by direct message, and fails an escalation
that could never happen (after the request has expired)."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.test_cli import threadline

TOML = """
[tools.write_file]
approval = "always"
approvers = { requester = false, users = ["slack:U1"], escalate_to = ["slack:group:S1"], escalate_after = "10m" }
[channels."slack:T1:C1".approvers]
users = ["slack:U2"]
escalate_to = ["slack:U3"]
escalate_after = "2h"
"""


def test_doctor_states_who_is_told_and_an_escalation_that_never_comes(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(TOML)
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    out = threadline("doctor", env=env, cwd=tmp_path)
    assert "approvals: up to 10 approvers told by direct message" in out.stdout, out.stdout
    assert (
        "write_file: asks every time; who can have it used: whoever may talk to the bot; "
        "who can approve: slack:U1; after 600 s undecided also members of slack:group:S1"
    ) in out.stdout
    assert 'approvers of [channels."slack:T1:C1"]: escalate_after (7200 s) is not before' in (
        out.stdout
    )
    assert out.returncode == 1
    quiet = threadline("doctor", env={**env, "THREADLINE_APPROVAL_NOTIFY_MAX": "0"}, cwd=tmp_path)
    assert "nobody is told by direct message (THREADLINE_APPROVAL_NOTIFY_MAX=0)" in quiet.stdout
