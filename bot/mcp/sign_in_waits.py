"""Sign-ins waited for in threads, as the store keeps them: one row per sign-in link, written
before the link shows, so that a restart while a person signs in loses nothing.

A row names the link's wait (a hash of its ``state``, never the state itself), the server,
the person, the thread and the tool call that waits, when the link expires and when it was
used; what the code's exchange needs after a restart (the PKCE verifier, the redirect URI, the
client and the authorization server's token endpoint) and the link itself are sealed with the
key the sign-ins are (:mod:`bot.infra.sealed`). The link is kept so that a "Sign in…" click on
any worker can show it to its person (:mod:`bot.mcp.sign_in_links`); it is never kept or
shown unsealed anywhere else. A row is used once: the callback that claims it (or the wait in
this process that ends) marks it, and no other callback changes anything.

With several workers, a row also names the worker whose call waits (its ``owner``): a callback
that reaches another worker is handed to the row (``handed``, sealed) and taken by the owner
(``taken_at``), which wakes its call (:mod:`bot.mcp.sign_in_desk`).

After a restart, a run whose open call waits for a sign-in is paused like a run waiting for
an approval (:meth:`bot.approvals.decisions.Decisions.batch` counts it as waiting); the
callback exchanges the code and resumes the run, which makes the call it paused on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import Any, Protocol

from bot.infra.sealed import Sealer, Unreadable

COLUMNS = (
    "wait_id, server, person_id, person_name, key, call_id, sealed, created_at, expires_at,"
    " used_at, owner, handed, taken_at"
)
"""The columns of ``mcp_sign_in_waits``: :class:`SignInWait`'s fields, in their order."""
LINK = "link"
"""The key of the link in what a row seals (beside the exchange's details)."""
KEPT_S = 86_400.0
"""A wait expired this long before a new one is made goes."""


@dataclass(frozen=True, slots=True)
class SignInWait:
    wait_id: str
    """The hash of the link's ``state`` (:func:`wait_id`)."""
    server: str
    person_id: str
    person_name: str
    key: str
    """The thread whose run waits."""
    call_id: str
    """The tool call that waits (empty: none, e.g. a connection opened outside a call)."""
    sealed: str
    """What the code's exchange needs after a restart, and the link under :data:`LINK`
    (:func:`seal`)."""
    created_at: float
    expires_at: float
    used_at: float | None = None
    owner: str = ""
    """The worker whose call waits in its process ('': none known, e.g. one process alone)."""
    handed: str | None = None
    """A callback another worker got, sealed (:func:`seal`), for the owner to take."""
    taken_at: float | None = None
    """When the owner took the handed callback (its call goes on there)."""

    def values(self) -> tuple[Any, ...]:
        """The row's values, in the order of :data:`COLUMNS`."""
        return astuple(self)

    @classmethod
    def read(cls, values: Sequence[Any]) -> SignInWait:
        """The row a store read, its values in the order of :data:`COLUMNS`."""
        wait_id, server, person_id, person_name, key, call_id, sealed = map(str, values[:7])
        made, ends, used, owner, handed, taken = values[7:]
        return cls(
            wait_id,
            server,
            person_id,
            person_name,
            key,
            call_id,
            sealed,
            float(made),
            float(ends),
            None if used is None else float(used),
            str(owner),
            None if handed is None else str(handed),
            None if taken is None else float(taken),
        )

    @property
    def timeout_s(self) -> float:
        return self.expires_at - self.created_at

    def open_at(self, now: float) -> bool:
        """Not used and not expired at ``now``."""
        return self.used_at is None and self.expires_at > now


class SignInWaitStore(Protocol):
    async def add_sign_in_wait(self, wait: SignInWait) -> None:
        """Keep ``wait`` (rows that expired a day before it was made go)."""
        ...

    async def get_sign_in_wait(self, wait_id: str) -> SignInWait | None: ...

    async def use_sign_in_wait(self, wait_id: str, now: float) -> bool:
        """Mark the wait used, if it is neither used nor expired at ``now``; True when this
        call did (exactly one caller ever does)."""
        ...

    async def end_sign_in_wait(self, wait_id: str, now: float) -> bool:
        """Mark the wait used, if it is not, expired or not (its call ended without it, or its
        expiry ends the paused run's call); True when this call did."""
        ...

    async def hand_sign_in_wait(self, wait_id: str, handed: str, now: float) -> bool:
        """Keep a callback's result (sealed) for the wait's owner, if the wait is open at
        ``now`` and nothing was handed yet; True when this call did."""
        ...

    async def take_sign_in_wait(self, wait_id: str, owner: str, now: float) -> str | None:
        """The owner takes the callback handed to its wait: the wait is marked used and taken,
        and the handed result returned (None: nothing handed, used already, or not
        ``owner``'s; exactly one caller ever gets it)."""
        ...

    async def release_sign_in_wait(self, wait_id: str, owner: str) -> None:
        """``owner`` no longer waits for it (its call was stopped, or it does not know the
        wait): the worker that got the callback finishes it itself."""
        ...

    async def sign_in_waits_for(self, key: str, call_ids: Sequence[str]) -> list[SignInWait]:
        """The waits of the thread ``key``'s calls ``call_ids``, used or not, oldest first."""
        ...


def not_signed_in(person: str, server: str, timeout_s: float) -> str:
    """What a call that waited for a person's sign-in in vain says."""
    return f"not signed in: {person} did not sign in to {server} within {timeout_s:g} s"


def wait_id(state: str) -> str:
    """How the store names a link's wait: the link's ``state`` is never kept as it is."""
    return hashlib.sha256(state.encode()).hexdigest()


def seal(sealer: Sealer, details: dict[str, Any]) -> str:
    return sealer.seal(json.dumps(details).encode()).decode()


def unseal(sealer: Sealer, sealed: str) -> dict[str, Any] | None:
    """The details sealed, or None when another key sealed them (or they are damaged)."""
    try:
        found = json.loads(sealer.unseal(sealed.encode()))
    except (Unreadable, ValueError):
        return None
    return found if isinstance(found, dict) else None


def link_of(sealer: Sealer, wait: SignInWait) -> str | None:
    """The wait's sign-in link, or None when it cannot be read (another key, or none kept)."""
    found = unseal(sealer, wait.sealed)
    link = found.get(LINK) if found is not None else None
    return link if isinstance(link, str) and link else None
