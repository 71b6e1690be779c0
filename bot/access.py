"""Who may use the bot: pure rules over ``[access]`` and each tool's people lists.

Deny lists always win. An allow list that is empty allows everyone; a non-empty one allows the
people it names by id or by role. Admins may always talk to the bot (but a deny list still
stops them). Direct messages follow ``dms``: ``open`` (whoever may talk), ``allowlist`` (only
people named by id, role or as admins) or ``closed``.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.config import AccessSettings, PeopleSettings, Settings
from bot.conversation import Author


def _denied(people: PeopleSettings, author: Author) -> bool:
    return author.id in people.deny_users or bool(author.roles & set(people.deny_roles))


def _named(people: PeopleSettings, author: Author) -> bool:
    return author.id in people.users or bool(author.roles & set(people.roles))


def _open_to(people: PeopleSettings) -> bool:
    return not people.users and not people.roles


def _under(key: str, prefixes: Iterable[str]) -> bool:
    return any(key.startswith(p) for p in prefixes)


def refusal(access: AccessSettings, author: Author, key: str, *, dm: bool) -> str | None:
    """Why ``author`` may not talk to the bot in the thread ``key``; None when they may."""
    if _denied(access, author):
        return "the person is on a deny list"
    admin = author.id in access.admins
    if dm:
        if access.dms == "closed":
            return "direct messages are closed"
        if access.dms == "allowlist" and not (admin or _named(access, author)):
            return "direct messages are open only to listed people"
    elif _under(key, access.deny_channels):
        return "the channel is on the deny list"
    elif access.channels and not _under(key, access.channels):
        return "the channel is not on the allow list"
    if admin or _open_to(access) or _named(access, author):
        return None
    return "the person is not on the allow list"


def may_use_tool(settings: Settings, key: str, tool: str, requester: Author | None) -> bool:
    """Whether calls of ``tool`` made for ``requester`` may run at all in the thread ``key``
    (the most specific channel section's tool settings first, then the global ones)."""
    channel = settings.channel(key)
    sections = [
        s for s in (channel.tools.get(tool) if channel else None, settings.tools.get(tool)) if s
    ]
    if not sections:
        return True
    who = requester or Author(id="", display_name="someone")
    if any(_denied(s, who) for s in sections):
        return False
    listed = [s for s in sections if not _open_to(s)]
    return not listed or _named(listed[0], who) or who.id in settings.access.admins
