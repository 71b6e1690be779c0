"""Reaching Slack people outside a thread (``bot.api.people``), for approvals that need someone
else's decision: their names (``users.info``, kept; user groups' handles from
``usergroups.list``), the members of a user group (``usergroups.users.list``), a link to the
card (``chat.getPermalink``, else one built from the workspace's address) and a direct message
(``conversations.open``, scope ``im:write``, then ``chat.postMessage``). Ids of another
platform are not ours: they get no name and no message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from adapters.slack.api import Identity, SlackApi
from adapters.slack.blocks import message_payload
from adapters.slack.people import PREFIX as GROUP
from adapters.slack.people import DisplayNames, UserGroups
from adapters.slack.render import render
from bot.errors import SurfaceError

USER = "slack:"


@dataclass(frozen=True, slots=True)
class SlackPeople:
    api: SlackApi
    identity: Identity
    names_of: DisplayNames
    channel: str
    """The thread's channel, where its messages are."""
    groups: UserGroups | None = None
    """The configured user groups' members, kept a minute (shared with the clicks' checks)."""

    async def names(self, ids: Sequence[str]) -> Mapping[str, str]:
        found: dict[str, str] = {}
        groups = [i for i in ids if i.startswith(GROUP)]
        if groups:
            handles = await self.api.group_names()
            found.update(
                {
                    g: f"@{handles[g.removeprefix(GROUP)]}"
                    for g in groups
                    if g.removeprefix(GROUP) in handles
                }
            )
        for person in ids:
            if person.startswith(USER) and not person.startswith(GROUP):
                user = person.removeprefix(USER)
                name = await self.names_of.name(user)
                if name != user:
                    found[person] = name
        return found

    async def members(self, role: str, limit: int) -> Sequence[str]:
        if not role.startswith(GROUP):
            return []
        group = role.removeprefix(GROUP)
        if self.groups is not None:
            users = await self.groups.members(group)
        else:
            users = await self.api.group_members(group)
        return [f"{USER}{u}" for u in sorted(users)[:limit]]

    async def link(self, message_id: str) -> str | None:
        try:
            return await self.api.permalink(self.channel, message_id)
        except SurfaceError:
            url = self.identity.url
            if not url.startswith("https://"):
                return None
            return f"{url.rstrip('/')}/archives/{self.channel}/p{message_id.replace('.', '')}"

    async def send(self, person: str, markdown: str) -> None:
        if not person.startswith(USER) or person.startswith(GROUP):
            raise SurfaceError(f"{person} is not a Slack user")
        channel = await self.api.open_dm(person.removeprefix(USER))
        await self.api.post(channel, None, message_payload(render(markdown), ()))
