"""The Surface of one Slack thread: Web API calls, nothing decided here.

Limits: a ``markdown`` block holds at most 12,000 characters per message; replies are split at
10,000 to keep a margin (Slack counts some characters as two and may count escaped entities),
and a ``msg_too_long`` still raises :class:`MessageTooLong` so the presenter splits tighter.
``chat.update`` is Tier 3, about 50 a minute for the whole workspace: every stream in a
workspace shares one budget (``budget_key`` is the team), with at least a second between two
interim edits of one message. When that budget would hold a final text back, it is posted as
a new message instead and the draft deleted (``chat.delete``, Tier 3 too) at low priority.

Status: ``assistant.threads.setStatus`` shows "is thinking…" under the thread. Where Slack
refuses it (``not_allowed``, ``missing_scope``, an old workspace…) the channel is remembered and
nothing is shown there instead — the reply itself appears with the first words anyway, and a
reaction would cost two more rate-limited calls per answer and one more scope.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

from adapters.slack.api import Identity, SlackApi
from adapters.slack.blocks import message_payload
from adapters.slack.channel import SlackChannelHistory, SlackChannels
from adapters.slack.direct import SlackPeople
from adapters.slack.files import SlackFileTransfer
from adapters.slack.parse import split_key
from adapters.slack.people import DisplayNames, UserGroups
from adapters.slack.render import render
from adapters.slack.streams import SlackStreams, StreamSupport
from bot.api.inbound import ThreadKey
from bot.api.surface import Button, SurfaceLimits
from bot.errors import MessageTooLong, SurfaceError

log = logging.getLogger(__name__)

MARKDOWN_LIMIT = 12_000
MAX_CHARS = 10_000
REMEMBERED_CHANNELS = 10_000
FINAL_RESERVE = 1
"""One ``chat.update`` of the budget is kept for a final text."""
POST_WINDOW = 4
"""Slack allows about one post a second in a channel "with short bursts" (five in any five
seconds, as the fake counts them): at most four in any four intervals of the post budget
(5.3 s at the default 45 a minute) leaves room for the network's jitter."""
DELETE_BURST = 20
"""Drafts deleted at once, right beside their finals; ``chat.delete`` (Tier 3) allows 50 in any
minute, so the steady pace after a burst is ``DELETE_SHARE`` of the edit budget's."""
DELETE_SHARE = 0.6
"""20 at once and 0.6 × 48 ≈ 29 a minute after that stay within Tier 3's 50."""


def slack_limits(
    team_id: str,
    edits_per_minute: float,
    min_edit_interval: float,
    posts_per_minute: float | None = None,
) -> SurfaceLimits:
    """A final text that the workspace's ``chat.update`` budget would hold back for longer than
    one edit's turn (or the interval between edits of a message) is posted anew
    (``chat.postMessage`` is limited per channel, not per workspace) and the draft deleted at
    once (``chat.delete`` is Tier 3 like ``chat.update``, with a budget of its own that allows
    a burst). Posts are paced per channel (``posts_per_minute``; the surface names the
    channel): a reply waiting for its first post shows its newest text when its turn comes."""
    return SurfaceLimits(
        max_chars=MAX_CHARS,
        min_edit_interval=min_edit_interval,
        edits_per_minute=edits_per_minute,
        budget_key=f"slack:{team_id}",
        can_pin=True,
        final_reserve=FINAL_RESERVE,
        fresh_final_after=max(min_edit_interval, 60.0 / edits_per_minute),
        deletes_per_minute=edits_per_minute * DELETE_SHARE,
        delete_burst=DELETE_BURST,
        posts_per_minute=posts_per_minute,
        post_window=POST_WINDOW,
    )


class StatusSupport:
    """The channels where Slack refused ``assistant.threads.setStatus`` (bounded)."""

    def __init__(self, capacity: int = REMEMBERED_CHANNELS) -> None:
        self._refused: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def allowed(self, channel: str) -> bool:
        return channel not in self._refused

    def refuse(self, channel: str) -> None:
        self._refused[channel] = None
        while len(self._refused) > self._capacity:
            self._refused.popitem(last=False)


class SlackSurface:
    def __init__(
        self,
        api: SlackApi,
        key: ThreadKey,
        limits: SurfaceLimits,
        status: StatusSupport,
        streams: StreamSupport | None = None,
        reading: tuple[Identity, DisplayNames] | None = None,
        *,
        groups: UserGroups | None = None,
    ) -> None:
        self._api = api
        self._key = key
        self._status = status
        _, self.channel, self.thread_ts = split_key(key)
        self._limits = replace(limits, post_key=f"{limits.budget_key}:{self.channel}:post")
        """``chat.postMessage`` is limited per channel: this channel's posts share a budget."""
        self.files = SlackFileTransfer(api, self.channel, self.thread_ts)
        """Shared files downloaded, workspace files uploaded (``bot.api.transfer``)."""
        self.channel_history = (
            SlackChannelHistory(api, *reading, self.channel) if reading is not None else None
        )
        """The thread's channel, read for ``read_channel`` (``bot.api.channel``)."""
        self.other_channels = SlackChannels(api, *reading) if reading is not None else None
        """Other channels, read for ``read_channel`` naming one (``bot.api.channel``)."""
        self.people = (
            SlackPeople(api, *reading, self.channel, groups) if reading is not None else None
        )
        """Approvers' names, links to cards and direct messages (``bot.api.people``)."""
        self.streams: SlackStreams | None = None
        """Slack's native streaming in this thread (``THREADLINE_SLACK_STREAMING``)."""
        if streams is not None and streams.enabled:
            self.streams = SlackStreams(
                api, streams, self.channel, self.thread_ts, key, direct=self.channel.startswith("D")
            )

    @property
    def thread_key(self) -> ThreadKey:
        return self._key

    @property
    def limits(self) -> SurfaceLimits:
        return self._limits

    def render(self, markdown: str) -> str:
        return render(markdown)

    async def post(self, text: str, buttons: Sequence[Button] = ()) -> str:
        _check_length(text)
        return await self._api.post(self.channel, self.thread_ts, message_payload(text, buttons))

    async def edit(
        self, message_id: str, text: str, buttons: Sequence[Button] = (), *, final: bool = False
    ) -> None:
        _check_length(text)
        await self._api.update(self.channel, message_id, message_payload(text, buttons))

    async def drop_buttons(self, message_id: str) -> None:
        await self._api.drop_buttons(self.channel, self.thread_ts, message_id)

    async def tell(self, person_id: str, text: str) -> bool:
        """An ephemeral note in the thread, seen by ``person_id`` alone."""
        payload = message_payload(self.render(text), ())
        try:
            await self._api.ephemeral(
                self.channel, person_id.removeprefix("slack:"), self.thread_ts, payload
            )
        except SurfaceError as exc:
            log.warning("could not show a private note in %s: %s", self.channel, exc)
            return False
        return True

    async def delete(self, message_id: str) -> None:
        await self._api.delete(self.channel, message_id)

    async def pin(self, message_id: str) -> None:
        await self._api.pin(self.channel, message_id)

    async def unpin(self, message_id: str) -> None:
        await self._api.unpin(self.channel, message_id)

    async def set_status(self, text: str | None) -> None:
        if not self._status.allowed(self.channel):
            return
        if not await self._api.set_status(self.channel, self.thread_ts, text or ""):
            log.info("Slack offers no thread status in %s; showing none there", self.channel)
            self._status.refuse(self.channel)


def _check_length(text: str) -> None:
    if len(text) > MARKDOWN_LIMIT:
        raise MessageTooLong(
            f"{len(text):,} characters; a Slack markdown block holds {MARKDOWN_LIMIT:,}"
        )
