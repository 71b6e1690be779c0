""":class:`Policy`: may this person do this here? Built once from the settings; pure.

- talk: send the bot a message in a thread or a direct message (``[access]``)
- command: give a ``/threadline`` command in a thread — the right to talk there
- stop: stop a run (its Stop button, ``/threadline stop``) — the right to talk there
- decide: approve or deny a request, given its approvers and who asked
- read_elsewhere: have ``read_channel`` read another channel than the thread's
- use_tool: have the bot use a tool for a requester (``[tools.NAME]`` and the channel's)
- scheduled: run a prompt someone scheduled earlier

Deny lists (``[access] deny_users``, ``deny_roles``, ``deny_channels``) are read first and
win on every path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.api.inbound import Author
from bot.approvals.models import Approvers
from bot.config import AccessSettings, ChannelSettings, PeopleSettings, Settings, ToolSettings
from bot.policy import keys

SOMEONE = Author(id="", display_name="someone")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision of the policy: allowed, or refused with the reason (for logs and the
    operator; the person is told in the caller's words)."""

    reason: str | None = None
    """Why not; None when allowed."""

    @property
    def allowed(self) -> bool:
        return self.reason is None


ALLOWED = Verdict()


def refused(reason: str) -> Verdict:
    return Verdict(reason)


# --- allow and deny lists over a person, by user id and by role: a deny list wins; an empty
# allow list allows everyone, a non-empty one the people it names ---


def denied(people: PeopleSettings, author: Author) -> bool:
    return author.id in people.deny_users or bool(author.roles & set(people.deny_roles))


def named(people: PeopleSettings, author: Author) -> bool:
    return author.id in people.users or bool(author.roles & set(people.roles))


def open_to_all(people: PeopleSettings) -> bool:
    return not people.users and not people.roles


def _no_direct_messages(_key: str) -> bool:
    return False


class Policy:
    def __init__(
        self, settings: Settings, direct: Callable[[str], bool] = _no_direct_messages
    ) -> None:
        """``direct``: whether a thread is a direct message with the bot, as the adapters say
        (:meth:`bot.thread.reach.Surfaces.direct`)."""
        self._settings = settings
        self._access: AccessSettings = settings.access
        self._direct = direct

    # --- where ---

    def section(self, key: str) -> tuple[str | None, ChannelSettings | None]:
        """The most specific ``[channels."…"]`` section covering ``key``, with its name."""
        return channel_section(self._settings, key)

    # --- who may do what ---

    def talk(self, author: Author, key: str) -> Verdict:
        """Whether ``author`` may talk to the bot in the thread ``key``."""
        barred = self._barred(author, key)
        if not barred.allowed:
            return barred
        admin = author.id in self._access.admins
        if self._direct(key):
            return self._dm(author, admin=admin)
        if self._access.channels and not keys.any_covers(self._access.channels, key):
            return refused("the channel is not on the allow list")
        if admin or open_to_all(self._access) or named(self._access, author):
            return ALLOWED
        return refused("the person is not on the allow list")

    def command(self, author: Author, key: str) -> Verdict:
        """Whether ``author`` may give a ``/threadline`` command about the thread ``key``."""
        return self.talk(author, key)

    def stop(self, author: Author, key: str) -> Verdict:
        """Whether ``author`` may stop the run in the thread ``key`` (button or command)."""
        return self.talk(author, key)

    def scheduled(self, author: Author, key: str) -> Verdict:
        """Whether a prompt ``author`` scheduled may run now in the thread ``key``: the deny
        lists, the channels and closed direct messages are read again at every run; the allow
        lists of people were read when it was scheduled (the roles that passed them are not
        kept)."""
        barred = self._barred(author, key)
        if not barred.allowed:
            return barred
        if self._direct(key):
            dms_closed = self._access.dms == "closed"
            return refused("direct messages are closed") if dms_closed else ALLOWED
        if self._access.channels and not keys.any_covers(self._access.channels, key):
            return refused("the channel is not on the allow list")
        return ALLOWED

    def decide(
        self,
        actor: Author,
        key: str,
        approvers: Approvers,
        requester_id: str,
        *,
        escalated: bool = False,
    ) -> Verdict:
        """Whether ``actor`` may approve or deny a request in the thread ``key``: not on a deny
        list, and one of its approvers (``anyone``: anyone who may talk to the bot there), or,
        once the request has ``escalated``, one of the people it escalates to."""
        barred = self._barred(actor, key)
        if not barred.allowed:
            return barred
        if approvers.anyone:
            return self.talk(actor, key)
        if approvers.requester and actor.id == requester_id:
            return ALLOWED
        if actor.id in approvers.users or approvers.roles & actor.roles:
            return ALLOWED
        if escalated and (
            actor.id in approvers.escalate_users or approvers.escalate_roles & actor.roles
        ):
            return ALLOWED
        if actor.id in approvers.escalate_users or approvers.escalate_roles & actor.roles:
            return refused("the request has not escalated yet")
        return refused("the person is not among the approvers")

    def read_elsewhere(self, author: Author, channel: str) -> Verdict:
        """Whether the bot may read another ``channel`` (its key's first parts) for ``author``
        (``read_channel`` naming a channel): neither on a deny list, and the channel on the
        allow list when there is one. Whether ``author`` is a member is the platform's to say."""
        barred = self._barred(author, channel)
        if not barred.allowed:
            return barred
        if self._access.channels and not keys.any_covers(self._access.channels, channel):
            return refused("the channel is not on the allow list")
        return ALLOWED

    def use_tool(self, requester: Author | None, key: str, tool: str) -> Verdict:
        """Whether calls of ``tool`` made for ``requester`` may run at all in the thread ``key``
        (the most specific channel section's tool settings first, then the global ones)."""
        sections = self._tool_sections(key, tool)
        who = requester or SOMEONE
        if any(denied(s, who) for s in sections):
            return refused(f"the person is on {tool}'s deny list")
        listed = [s for s in sections if not open_to_all(s)]
        if not listed or named(listed[0], who) or who.id in self._access.admins:
            return ALLOWED
        return refused(f"the person is not on {tool}'s allow list")

    # --- parts ---

    def _barred(self, author: Author, key: str) -> Verdict:
        """The deny lists: they win over everything else."""
        if denied(self._access, author):
            return refused("the person is on a deny list")
        if keys.any_covers(self._access.deny_channels, key) and not self._direct(key):
            return refused("the channel is on the deny list")
        return ALLOWED

    def _dm(self, author: Author, *, admin: bool) -> Verdict:
        dms = self._access.dms
        if dms == "closed":
            return refused("direct messages are closed")
        listed = admin or named(self._access, author)
        if dms == "allowlist" and not listed:
            return refused("direct messages are open only to listed people")
        if listed or open_to_all(self._access):
            return ALLOWED
        return refused("the person is not on the allow list")

    def _tool_sections(self, key: str, tool: str) -> list[ToolSettings]:
        return tool_sections(self._settings, key, tool)


def channel_section(settings: Settings, key: str) -> tuple[str | None, ChannelSettings | None]:
    """The most specific ``[channels."…"]`` section of ``settings`` covering ``key``."""
    name = keys.most_specific(settings.channels, key)
    return name, (settings.channels[name] if name is not None else None)


def tool_sections(settings: Settings, key: str, tool: str) -> list[ToolSettings]:
    """``tool``'s settings that apply in the thread ``key``: the most specific channel
    section's first, then the global ones."""
    _, channel = channel_section(settings, key)
    found = (channel.tools.get(tool) if channel else None, settings.tools.get(tool))
    return [s for s in found if s is not None]
