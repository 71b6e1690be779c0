"""Who may do what: every entry point of :class:`bot.policy.who.Policy`, for each person,
under each configuration — allowed, or refused with the reason."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from bot.api.inbound import Author
from bot.approvals.models import Approvers
from bot.config import Settings
from bot.policy.who import Policy, Verdict

ALICE = Author("slack:UALICE", "Alice")
MALLORY = Author("slack:UMALLORY", "Mallory", frozenset({"slack:group:SOPS"}))
OPS = Author("slack:UOPS", "Ops", frozenset({"slack:group:SOPS"}))
ADMIN = Author("slack:UADMIN", "Admin")
GENERAL = "slack:T1:C0GENERAL:1.0"
GENERALX = "slack:T1:C0GENERALX:1.0"
DM = "slack:T1:D0DM:1.0"
GUILD = "discord:42:7"
GUILDX = "discord:420:7"
DISCORD_DM = "discord:dm:9"
DIRECT = frozenset({DM, DISCORD_DM})
"""The direct messages, as their adapters say (:meth:`bot.thread.reach.Surfaces.direct`)."""

ANYONE = Approvers(requester=False, anyone=True)
REQUESTER = Approvers()
OPS_ONLY = Approvers(requester=False, roles=frozenset({"slack:group:SOPS"}))
ADMIN_THEN_OPS = Approvers(
    requester=False,
    users=frozenset({ADMIN.id}),
    escalate_roles=frozenset({"slack:group:SOPS"}),
    escalate_after=600.0,
)
ADMIN_THEN_ALICE = Approvers(
    requester=False,
    users=frozenset({ADMIN.id}),
    escalate_users=frozenset({ALICE.id}),
    escalate_after=600.0,
)

CONFIGS: dict[str, dict[str, Any]] = {
    "open": {},
    "mallory denied": {"access": {"deny_users": ["slack:UMALLORY"]}},
    "SOPS denied": {"access": {"deny_roles": ["slack:group:SOPS"]}},
    "alice only": {"access": {"users": ["slack:UALICE"], "admins": ["slack:UADMIN"]}},
    "general only": {"access": {"channels": ["slack:T1:C0GENERAL"]}},
    "general only:": {"access": {"channels": ["slack:T1:C0GENERAL:"]}},
    "general denied": {"access": {"deny_channels": ["slack:T1:C0GENERAL"]}},
    "guild 42 only": {"access": {"channels": ["discord:42"]}},
    "dms closed": {"access": {"dms": "closed"}},
    "dms allowlist": {"access": {"dms": "allowlist", "users": ["slack:UALICE"]}},
    "admin denied": {"access": {"admins": ["slack:UADMIN"], "deny_users": ["slack:UADMIN"]}},
    "tool for SOPS": {
        "tools": {"run_command": {"roles": ["slack:group:SOPS"]}},
        "access": {"admins": ["slack:UADMIN"]},
    },
    "tool denies mallory": {"tools": {"run_command": {"deny_users": ["slack:UMALLORY"]}}},
    "tool for alice in general": {
        "channels": {"slack:T1:C0GENERAL": {"tools": {"run_command": {"users": ["slack:UALICE"]}}}}
    },
}


@dataclass(frozen=True)
class Ask:
    """One question to the policy, by entry point."""

    name: str
    ask: Callable[[Policy, Author, str], Verdict]


TALK = Ask("talk", lambda p, who, key: p.talk(who, key))
COMMAND = Ask("command", lambda p, who, key: p.command(who, key))
STOP = Ask("stop", lambda p, who, key: p.stop(who, key))
SCHEDULED = Ask("scheduled", lambda p, who, key: p.scheduled(who, key))
TOOL = Ask("use_tool", lambda p, who, key: p.use_tool(who, key, "run_command"))
READ = Ask("read_elsewhere", lambda p, who, key: p.read_elsewhere(who, key.rsplit(":", 1)[0]))


def deciding(approvers: Approvers) -> Ask:
    return Ask(
        f"decide({approvers.describe()})",
        lambda p, who, key: p.decide(who, key, approvers, ALICE.id),
    )


def escalated(approvers: Approvers) -> Ask:
    return Ask(
        f"decide escalated({approvers.describe()})",
        lambda p, who, key: p.decide(who, key, approvers, "slack:UNOBODY", escalated=True),
    )


ALLOWED, REFUSED = None, "refused"
CASES: list[tuple[Ask, Author, str, str, str | None]] = [
    # talking, and the same right for commands and Stop
    *(
        (ask, who, config, key, ALLOWED)
        for ask in (TALK, COMMAND, STOP)
        for who, config, key in [
            (MALLORY, "open", GENERAL),
            (ALICE, "mallory denied", GENERAL),
            (ALICE, "alice only", GENERAL),
            (ADMIN, "alice only", GENERAL),
            (ALICE, "general only", GENERAL),
            (ALICE, "general only:", GENERAL),
            (ALICE, "general denied", GENERALX),
            (ALICE, "general denied", DM),
            (ALICE, "guild 42 only", GUILD),
            (ALICE, "dms allowlist", DM),
            (ALICE, "general only", DISCORD_DM),
        ]
    ),
    *(
        (ask, who, config, key, reason)
        for ask in (TALK, COMMAND, STOP)
        for who, config, key, reason in [
            (MALLORY, "mallory denied", GENERAL, "deny list"),
            (MALLORY, "mallory denied", DM, "deny list"),
            (MALLORY, "SOPS denied", GENERAL, "deny list"),
            (MALLORY, "alice only", GENERAL, "not on the allow list"),
            (ALICE, "general only", GENERALX, "channel is not on the allow list"),
            (ALICE, "general only:", GENERALX, "channel is not on the allow list"),
            (ALICE, "general denied", GENERAL, "channel is on the deny list"),
            (ALICE, "guild 42 only", GUILDX, "channel is not on the allow list"),
            (ALICE, "dms closed", DM, "direct messages are closed"),
            (ALICE, "dms closed", DISCORD_DM, "direct messages are closed"),
            (OPS, "dms allowlist", DM, "only to listed people"),
            (ADMIN, "admin denied", GENERAL, "deny list"),
        ]
    ),
    # deciding an approval: deny lists beat every kind of approver, ``anyone`` included
    (deciding(ANYONE), MALLORY, "open", GENERAL, ALLOWED),
    (deciding(ANYONE), MALLORY, "mallory denied", GENERAL, "deny list"),
    (deciding(ANYONE), MALLORY, "SOPS denied", GENERAL, "deny list"),
    (deciding(ANYONE), MALLORY, "alice only", GENERAL, "not on the allow list"),
    (deciding(ANYONE), ALICE, "general denied", GENERAL, "channel is on the deny list"),
    (deciding(REQUESTER), ALICE, "open", GENERAL, ALLOWED),
    (deciding(REQUESTER), MALLORY, "open", GENERAL, "not among the approvers"),
    (deciding(OPS_ONLY), OPS, "alice only", GENERAL, ALLOWED),
    (deciding(OPS_ONLY), MALLORY, "open", GENERAL, ALLOWED),
    (deciding(OPS_ONLY), MALLORY, "mallory denied", GENERAL, "deny list"),
    (deciding(OPS_ONLY), ALICE, "open", GENERAL, "not among the approvers"),
    (deciding(REQUESTER), ALICE, "admin denied", GENERAL, ALLOWED),
    # an escalation: its people may decide once it has escalated, not before; deny lists win
    (deciding(ADMIN_THEN_OPS), OPS, "open", GENERAL, "has not escalated yet"),
    (escalated(ADMIN_THEN_OPS), OPS, "open", GENERAL, ALLOWED),
    (escalated(ADMIN_THEN_OPS), ADMIN, "open", GENERAL, ALLOWED),
    (escalated(ADMIN_THEN_OPS), MALLORY, "SOPS denied", GENERAL, "deny list"),
    (escalated(ADMIN_THEN_OPS), ALICE, "open", GENERAL, "not among the approvers"),
    (deciding(ADMIN_THEN_ALICE), ALICE, "open", GENERAL, "has not escalated yet"),
    (escalated(ADMIN_THEN_ALICE), ALICE, "open", GENERAL, ALLOWED),
    (escalated(ADMIN_THEN_ALICE), ALICE, "general denied", GENERAL, "channel is on the deny list"),
    (escalated(ADMIN_THEN_ALICE), OPS, "open", GENERAL, "not among the approvers"),
    # read_channel naming another channel (membership is the platform's to check)
    (READ, ALICE, "open", GENERAL, ALLOWED),
    (READ, MALLORY, "mallory denied", GENERAL, "deny list"),
    (READ, ALICE, "general denied", GENERAL, "channel is on the deny list"),
    (READ, ALICE, "general only", GENERALX, "channel is not on the allow list"),
    (READ, ALICE, "general only", GENERAL, ALLOWED),
    # having the bot use a tool
    (TOOL, ALICE, "open", GENERAL, ALLOWED),
    (TOOL, OPS, "tool for SOPS", GENERAL, ALLOWED),
    (TOOL, ALICE, "tool for SOPS", GENERAL, "not on run_command's allow list"),
    (TOOL, ADMIN, "tool for SOPS", GENERAL, ALLOWED),
    (TOOL, MALLORY, "tool denies mallory", GENERAL, "on run_command's deny list"),
    (TOOL, ALICE, "tool for alice in general", GENERAL, ALLOWED),
    (TOOL, OPS, "tool for alice in general", GENERAL, "not on run_command's allow list"),
    (TOOL, OPS, "tool for alice in general", GENERALX, ALLOWED),  # not C0GENERAL's section
    # a scheduled prompt's run: deny lists and channels read again; people's allow lists not
    (SCHEDULED, MALLORY, "alice only", GENERAL, ALLOWED),
    (SCHEDULED, MALLORY, "mallory denied", GENERAL, "deny list"),
    (SCHEDULED, ALICE, "general only", GENERALX, "channel is not on the allow list"),
    (SCHEDULED, ALICE, "general denied", GENERAL, "channel is on the deny list"),
    (SCHEDULED, ALICE, "dms closed", DM, "direct messages are closed"),
]


@pytest.mark.parametrize(
    ("ask", "who", "config", "key", "refused"),
    CASES,
    ids=[f"{a.name}-{w.display_name}-{c}-{k}" for a, w, c, k, _ in CASES],
)
def test_who_may_do_what(ask: Ask, who: Author, config: str, key: str, refused: str | None) -> None:
    policy = Policy(Settings(_env_file=None, **CONFIGS[config]), direct=DIRECT.__contains__)
    verdict = ask.ask(policy, who, key)
    if refused is None:
        assert verdict.allowed, verdict.reason
    else:
        assert not verdict.allowed and refused in (verdict.reason or "")


def test_a_tool_with_an_allow_list_is_not_used_for_nobody() -> None:
    policy = Policy(
        Settings(_env_file=None, **CONFIGS["tool for SOPS"]), direct=DIRECT.__contains__
    )
    assert not policy.use_tool(None, GENERAL, "run_command").allowed
    assert policy.use_tool(None, GENERAL, "read_file").allowed
