"""The effective access and approval policy in plain words (``threadline doctor`` prints it)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.approvals.rules import ToolRules
from bot.config import AccessSettings, PeopleSettings, Settings
from bot.policy.who import channel_section
from bot.tools.base import Tool

MODES = {
    "always": "asks every time",
    "ask": 'asks unless someone chose "Always allow" for the person in that channel',
    "never": "runs without asking",
}


def _people(people: PeopleSettings, everyone: str) -> str:
    named = [*people.users, *people.roles]
    text = everyone if not named else "only " + ", ".join(named)
    denied = [*people.deny_users, *people.deny_roles]
    return f"{text}, except {', '.join(denied)}" if denied else text


def access_lines(access: AccessSettings) -> list[str]:
    where = "in every channel" if not access.channels else "in " + ", ".join(access.channels)
    if access.deny_channels:
        where += f" (never in {', '.join(access.deny_channels)})"
    dms = {
        "open": "open to whoever may talk to the bot",
        "allowlist": "only from people listed by id, role or as admins",
        "closed": "closed",
    }[access.dms]
    lines = [
        f"who can talk to the bot: {_people(access, 'everyone')}, {where}",
        f"direct messages: {dms}",
    ]
    if access.admins:
        lines.append(f"admins: {', '.join(access.admins)}")
    return lines


def tool_lines(settings: Settings, tools: Sequence[Tool]) -> list[str]:
    """For each tool that can change something: when it asks, who may have it used, who decides
    — globally, then where a channel section says otherwise."""
    rules = ToolRules(settings)  # the same resolution the gate uses
    lines: list[str] = []
    for tool in tools:
        if not tool.side_effects and tool.name not in settings.tools:
            continue
        overall = _tool_line(settings, rules, "", tool)
        lines.append(f"{tool.name}: {overall}")
        for where in settings.channels:
            if (here := _tool_line(settings, rules, where, tool)) != overall:
                lines.append(f"{tool.name} in {where}: {here}")
    return lines


def _tool_line(settings: Settings, rules: ToolRules, where: str, tool: Tool) -> str:
    mode = rules.mode(where, tool)
    if mode == "ask" and not rules.offer_always(where, tool, mode):
        mode = "always"  # no "Always allow" is offered: it asks every time
    text = f"{MODES[mode]}; who can have it used: {_tool_people(settings, where, tool.name)}"
    if mode != "never":
        approvers = rules.approvers(where, tool.name)
        text += f"; who can approve: {approvers.describe()}"
        if approvers.escalates and approvers.escalate_after is not None:
            after = approvers.escalate_after
            if after >= settings.approval_ttl_s:
                text += (
                    f"; it never escalates (escalate_after {after:g} s is not before the "
                    f"request expires, approval_ttl_s {settings.approval_ttl_s:g} s)"
                )
            else:
                text += f"; after {after:g} s undecided also {approvers.describe_escalation()}"
    return text


def _tool_people(settings: Settings, where: str, tool: str) -> str:
    _, channel = channel_section(settings, where)
    section = (channel.tools.get(tool) if channel else None) or settings.tools.get(tool)
    if section is None:
        return "whoever may talk to the bot"
    return _people(section, "whoever may talk to the bot")
