"""Allow and deny lists over a person, by user id and by role.

A deny list wins. An allow list that is empty allows everyone; a non-empty one allows the
people it names by id or by role.
"""

from __future__ import annotations

from bot.api.inbound import Author
from bot.config import PeopleSettings


def denied(people: PeopleSettings, author: Author) -> bool:
    return author.id in people.deny_users or bool(author.roles & set(people.deny_roles))


def named(people: PeopleSettings, author: Author) -> bool:
    return author.id in people.users or bool(author.roles & set(people.roles))


def open_to_all(people: PeopleSettings) -> bool:
    return not people.users and not people.roles


def allowed(people: PeopleSettings, author: Author) -> bool:
    """Not denied, and on the allow list (or there is none)."""
    return not denied(people, author) and (open_to_all(people) or named(people, author))
