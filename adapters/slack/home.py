"""The App Home tab: what the bot can do, the person's recent threads, the approvals waiting
for them.

Slack sends ``app_home_opened`` each time a person opens the app's Home (``tab: home``) or
Messages tab; for Home the core is asked what this person is shown in this workspace
(:meth:`bot.api.port.CoreApi.home`) and it is published with ``views.publish``, fresh at every
opening. Threads and cards are links to their messages. The Home tab must be enabled in the
app's settings (App Home → Home Tab); without it Slack sends no such event, and a refused
``views.publish`` turns the tab off (:mod:`adapters.slack.optional`). Nothing else changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from adapters.slack.api import Identity, SlackApi
from adapters.slack.optional import Features
from adapters.slack.parse import split_key
from adapters.slack.people import DisplayNames, UserGroups
from bot.api.home import Home, RecentThread, Waiting
from bot.api.inbound import Author
from bot.api.kit import TaskSet
from bot.api.port import CoreApi
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

SECTION_CHARS = 3000
"""The most characters of a section's text."""
MAX_SECTIONS = 20
"""The most sections one list takes (a Home view holds at most 100 blocks)."""
INTRO = (
    "Mention me in a channel, or write to me under *Messages*: I answer in a thread, and the"
    " thread is ours from then on. `/threadline` and the message shortcuts work in any thread."
)
NO_THREADS = "None yet: mention me in a channel, or write to me under *Messages*."
NOTHING_WAITS = "Nothing is waiting for your decision."


class HomeTab:
    def __init__(
        self,
        core: CoreApi,
        api: SlackApi,
        identity: Identity,
        people: tuple[DisplayNames, UserGroups],
        tasks: TaskSet,
        optional: Features,
    ) -> None:
        self._core = core
        self._api = api
        self._identity = identity
        self._names, self._groups = people
        self._tasks = tasks
        self._optional = optional

    async def on_opened(self, event: dict[str, Any]) -> None:
        """``app_home_opened``: acknowledged at once; the Home tab published in an owned task."""
        user = event.get("user")
        if event.get("tab") != "home" or not isinstance(user, str) or not user:
            return
        if self._optional.on("the Home tab"):
            self._tasks.spawn(self._publish(user))

    async def _publish(self, user: str) -> None:
        name, roles = await asyncio.gather(self._names.name(user), self._groups.roles_of(user))
        home = await self._core.home(
            Author(f"slack:{user}", name, roles), f"slack:{self._identity.team_id}"
        )
        try:
            refused = await self._api.publish_home(user, home_view(home, self._identity))
        except SurfaceError:
            log.warning("could not publish the Home tab of %s", user, exc_info=True)
            return
        if refused is not None:
            self._optional.refused("the Home tab", "views.publish", refused)


def home_view(home: Home, identity: Identity) -> dict[str, Any]:
    """The Home tab's view: Block Kit, within Slack's limits."""
    blocks: list[dict[str, Any]] = [
        _header(f"{identity.user} — what I can do"),
        _section(INTRO),
        *_sections(f"• `{a.name}` — {_escape(a.summary)}" for a in home.abilities),
        {"type": "divider"},
        _header("Your recent threads"),
        *(_sections(_thread(t, identity) for t in home.threads) or [_section(NO_THREADS)]),
        {"type": "divider"},
        _header("Waiting for your decision"),
        *(_sections(_waiting(w, identity) for w in home.waiting) or [_section(NOTHING_WAITS)]),
    ]
    return {"type": "home", "blocks": blocks}


def _thread(thread: RecentThread, identity: Identity) -> str:
    _, channel, ts = split_key(thread.key)
    title = _escape(thread.title) or "(files only)"
    shown = _link(identity, channel, ts, title)
    return f"• {shown} — {_where(channel)}, {_when(thread.at)}"


def _waiting(waiting: Waiting, identity: Identity) -> str:
    _, channel, thread_ts = split_key(waiting.key)
    asked = f"`{waiting.tool}` for {_escape(waiting.requester_name)} in {_where(channel)}"
    card = (
        _link(identity, channel, waiting.card_id, "open the card", thread_ts)
        if waiting.card_id
        else _link(identity, channel, thread_ts, "open the thread")
    )
    return f"• {asked} — {card}; it expires {_when(waiting.expires_at)}"


def _link(
    identity: Identity, channel: str, ts: str, label: str, thread_ts: str | None = None
) -> str:
    """A link to a message (in its thread when ``thread_ts`` is given); the label alone when
    the workspace's address is unknown."""
    if not identity.url:
        return label
    url = f"{identity.url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
    if thread_ts is not None and thread_ts != ts:
        url += f"?thread_ts={thread_ts}&cid={channel}"
    return f"<{url}|{label.replace('|', '¦')}>"


def _where(channel: str) -> str:
    return "our direct messages" if channel.startswith("D") else f"<#{channel}>"


def _when(at: float) -> str:
    """A time each reader sees in their own time zone (UTC where Slack cannot say it)."""
    fallback = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(at)}^{{date_short_pretty}} at {{time}}|{fallback}>"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text[:150]}}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _sections(lines: Iterable[str]) -> list[dict[str, Any]]:
    """``lines`` in as few sections as fit, each within Slack's limit; what does not fit in
    ``MAX_SECTIONS`` is counted in a last line."""
    chunks: list[str] = []
    left = 0
    for line in lines:
        line = line if len(line) <= SECTION_CHARS else line[: SECTION_CHARS - 1] + "…"
        if chunks and len(chunks[-1]) + 1 + len(line) <= SECTION_CHARS:
            chunks[-1] += "\n" + line
        elif len(chunks) < MAX_SECTIONS:
            chunks.append(line)
        else:
            left += 1
    if left:
        chunks.append(f"…and {left} more")
    return [_section(c) for c in chunks]
