"""What a "Sign in…" click on a sign-in's card shows the clicker, privately: the link, to the
person the wait is for while it is open; to anyone else, why not (the link signs in whoever
opens it, as that person: opened by another, their account would be kept as the person's
sign-in). Any worker answers the click: the link is read from the wait's row, where it is
sealed (:mod:`bot.mcp.sign_in_waits`). The link is never logged."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.api.inbound import Author
from bot.infra.clock import Clock
from bot.infra.sealed import Sealer
from bot.mcp.sign_in_waits import SignInWait, SignInWaitStore, link_of

log = logging.getLogger(__name__)

GONE = "This sign-in is no longer waited for: nothing to open. Ask the bot again if you need it."
UNREADABLE = "This sign-in's link can no longer be read here: ask the bot again for a new one."


@dataclass(frozen=True, slots=True)
class SignInLinks:
    waits: SignInWaitStore
    sealer: Sealer
    clock: Clock

    async def note(self, wait_id: str, actor: Author) -> str:
        """The private note for ``actor``'s click on the card of the wait ``wait_id``."""
        wait = await self.waits.get_sign_in_wait(wait_id)
        if wait is None:
            return GONE
        if actor.id != wait.person_id:
            log.info(
                "[%s] %s asked for %s's sign-in link: refused",
                wait.server,
                actor.id,
                wait.person_id,
            )
            return only(wait)
        if wait.used_at is not None:
            return (
                f"This sign-in to {wait.server} is over ({wait.person_name} signed in, or its"
                " wait ended): nothing to open."
            )
        if wait.expires_at <= self.clock.now():
            return (
                f"This sign-in link to {wait.server} has expired: ask the bot again for a new one."
            )
        link = link_of(self.sealer, wait)
        if link is None:
            return UNREADABLE
        log.info("[%s] %s was shown their sign-in link", wait.server, actor.id)
        return f"[Sign in to {wait.server}]({link}) — this link is for you alone"


def only(wait: SignInWait) -> str:
    name = wait.person_name
    return f"Only {name} can sign in here: the link signs in whoever opens it, as {name}."
