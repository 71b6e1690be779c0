"""A fake Slack on 127.0.0.1: the Web API, Socket Mode, the Events API sender, and test hooks.

Tests act as people — ``say`` (a message, with the ``message`` and ``app_mention`` events Slack
sends for it), ``edit``, ``delete``, ``click`` — and as Slack — ``redeliver``, ``deliver_event``
(anything, malformed included), forged or stale signatures in HTTP mode, dropped Socket Mode
links. They read what a channel shows (``thread``, ``replies``, ``pins``, ``ephemerals``) and
wait on it with ``wait_for``, which wakes on every change instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Literal

from aiohttp import web

from tests.fakes.slack import commands, payloads
from tests.fakes.slack.commands import ResponseUrls, SlashCall
from tests.fakes.slack.delivery import Deliverer, Delivery, Kind
from tests.fakes.slack.files import SlackFiles
from tests.fakes.slack.limits import RateLimits
from tests.fakes.slack.socket_mode import SocketMode
from tests.fakes.slack.state import (
    BOT_USER,
    AssistantThread,
    Channel,
    ChannelKind,
    Message,
    User,
    Workspace,
)
from tests.fakes.slack.web_api import MARKDOWN_LIMIT, Tokens, WebApi

BOT_TOKEN = "xoxb-1111-2222-fakebottokenvalue"
APP_TOKEN = "xapp-1-A0FAKE-3333-fakeapptokenvalue"
SIGNING_SECRET = "fake-signing-secret-0123456789abcdef"
ALL_SCOPES = frozenset(
    {
        "app_mentions:read",
        "assistant:write",
        "channels:history",
        "channels:read",
        "groups:history",
        "groups:read",
        "im:history",
        "im:write",
        "mpim:history",
        "chat:write",
        "pins:write",
        "users:read",
        "usergroups:read",
        "commands",
        "files:read",
        "files:write",
    }
)
MENTION = f"<@{BOT_USER}>"


class FakeSlack:
    def __init__(
        self,
        *,
        mode: Literal["socket", "http"] = "socket",
        scopes: frozenset[str] = ALL_SCOPES,
        time_scale: float = 1.0,
        markdown_limit: int = MARKDOWN_LIMIT,
        echo_bot_events: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock``: the time the rate limits go by (``time.monotonic``; a test's own clock)."""
        self._tick = asyncio.Event()
        self.workspace = Workspace(self._changed)
        self.limits = RateLimits(time_scale=time_scale, clock=clock)
        self.socket = SocketMode(lambda: self.base_url, self._changed)
        self.deliverer = Deliverer(self.socket, SIGNING_SECRET)
        self.deliverer.mode = mode
        self.api = WebApi(
            self.workspace,
            self.limits,
            Tokens(BOT_TOKEN, APP_TOKEN, set(scopes)),
            self._echo,
            self.socket.new_url,
            markdown_limit,
        )
        self.files = SlackFiles(lambda: self.base_url, self.api.may_download, self.api.post_upload)
        self.files.changed = self._changed
        self.api.files = self.files
        self.echo_bot_events = echo_bot_events
        self.deliveries: list[Delivery] = []
        self.responses = ResponseUrls(self.workspace, lambda: self.base_url)
        self._background: set[asyncio.Task[Any]] = set()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._people()

    # --- set-up -------------------------------------------------------------------------------
    def _people(self) -> None:
        ws = self.workspace
        ws.add_user(User(BOT_USER, "threadline", "Threadline", is_bot=True, bot_id="BBOT"))
        ws.add_user(User("UADA", "ada", "Ada", "Ada Lovelace"))
        ws.add_user(User("UGRACE", "grace", "Grace", "Grace Hopper"))
        ws.add_user(User("UOTHERBOT", "otherbot", "Other Bot", is_bot=True, bot_id="BOTHER"))
        members = {BOT_USER, "UADA", "UGRACE", "UOTHERBOT"}
        ws.add_channel(Channel("CGENERAL", "general", "channel", set(members)))
        ws.add_channel(Channel("GSECRET", "secret", "group", set(members)))
        ws.add_channel(Channel("DADA", "ada-dm", "im", {BOT_USER, "UADA"}))

    def add_channel(
        self,
        channel_id: str,
        name: str,
        kind: ChannelKind = "channel",
        *,
        status_allowed: bool = True,
    ) -> Channel:
        members = {BOT_USER, "UADA", "UGRACE"}
        return self.workspace.add_channel(Channel(channel_id, name, kind, members, status_allowed))

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self.api.handle)
        app.router.add_get("/link/", self.socket.endpoint)
        app.router.add_post("/respond/{id}", self.responses.endpoint)
        self.files.routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        await self.deliverer.open()

    async def stop(self) -> None:
        self.files.release()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.socket.close()
        await self.deliverer.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def settings(self) -> dict[str, Any]:
        """Settings for an app that talks to this fake in its mode."""
        mode = (
            {"slack_app_token": APP_TOKEN}
            if self.deliverer.mode == "socket"
            else {"slack_signing_secret": SIGNING_SECRET}
        )
        return {"slack_bot_token": BOT_TOKEN, "slack_api_url": self.api_url, **mode}

    @property
    def http_target(self) -> str | None:
        return self.deliverer.target

    @http_target.setter
    def http_target(self, url: str | None) -> None:
        self.deliverer.target = url

    # --- people -------------------------------------------------------------------------------
    async def say(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        files: list[dict[str, Any]] | None = None,
    ) -> Message:
        """``user`` writes in ``channel``; the app gets ``message`` and, if mentioned, ``app_mention``."""
        where = self.workspace.channels[channel]
        message = self.workspace.post(
            channel, user, text, thread_ts=thread_ts, subtype="file_share" if files else None
        )
        event = payloads.message_event(message, where)
        mention = payloads.mention_event(message)
        if files:  # as on Slack, both events of a message carry its files
            event["files"] = mention["files"] = files
        await self.deliver_event(event)
        if MENTION in text and BOT_USER in where.members:
            await self.deliver_event(mention)
        return message

    async def other_bot_says(
        self, channel: str, text: str, *, thread_ts: str | None = None
    ) -> Message:
        where = self.workspace.channels[channel]
        message = self.workspace.post(
            channel, None, text, thread_ts=thread_ts, bot_id="BOTHER", subtype="bot_message"
        )
        await self.deliver_event(payloads.message_event(message, where))
        if MENTION in text:
            await self.deliver_event(payloads.mention_event(message))
        return message

    async def edit(self, message: Message, text: str) -> Delivery:
        """Its author gives ``message`` a new text; the app gets ``message_changed``."""
        previous = message.as_event()
        message.text = text
        message.record()
        self._changed()
        return await self.deliver_event(
            payloads.changed_event(message, previous, self.workspace.channels[message.channel])
        )

    async def delete(self, message: Message) -> None:
        message.deleted = True
        message.deleted_at = time.monotonic()
        self._changed()
        await self.deliver_event(
            payloads.deleted_event(message, self.workspace.channels[message.channel])
        )

    async def click(self, user: str, message: Message, label: str) -> Delivery:
        button = next(b for b in message.buttons if b["text"]["text"] == label)
        payload = payloads.block_actions(
            self.workspace.users[user], self.workspace.channels[message.channel], message, button
        )
        return await self.deliver("interactive", payload)

    async def shortcut(self, user: str, message: Message, callback_id: str) -> Delivery:
        """``user`` uses the message shortcut ``callback_id`` on ``message`` (in a thread or
        not); Slack sends a ``message_action`` payload."""
        payload = payloads.message_action(
            self.workspace.users[user],
            self.workspace.channels[message.channel],
            message,
            callback_id,
        )
        return await self.deliver("interactive", payload)

    async def click_note(self, user: str, label: str) -> Delivery:
        """``user`` clicks ``label`` on the newest ephemeral note they see with that button."""
        note = next(
            e
            for e in reversed(self.workspace.ephemerals)
            if e.user == user and any(b["text"]["text"] == label for b in e.buttons)
        )
        button = next(b for b in note.buttons if b["text"]["text"] == label)
        payload = payloads.ephemeral_actions(
            self.workspace.users[user], self.workspace.channels[note.channel], note, button
        )
        return await self.deliver("interactive", payload)

    async def rate(self, user: str, message: Message, *, good: bool) -> Delivery:
        """``user`` clicks 👍 (``good``) or 👎 under ``message``."""
        element = message.feedback[0]
        payload = payloads.feedback_action(
            self.workspace.users[user],
            self.workspace.channels[message.channel],
            message,
            element,
            good,
        )
        return await self.deliver("interactive", payload)

    async def submit_view(self, user: str, view: dict[str, Any], text: str) -> Delivery:
        """``user`` types ``text`` in the modal's first input and sends it."""
        block = next(b for b in view["blocks"] if b.get("type") == "input")
        values = {
            block["block_id"]: {
                block["element"]["action_id"]: {"type": "plain_text_input", "value": text}
            }
        }
        payload = payloads.view_submission(self.workspace.users[user], view, values)
        return await self.deliver("interactive", payload)

    async def slash(self, user: str, channel: str, text: str) -> SlashCall:
        """``user`` types ``/threadline {text}`` in ``channel`` (Slack runs slash commands in
        channels, never in threads); what comes back to its ``response_url`` is on the call."""
        call, url = self.responses.issue(user, channel, text)
        payload = commands.payload(
            call, self.workspace.users[user], self.workspace.channels[channel], url
        )
        call.delivery = await self.deliver("slash_commands", payload)
        return call

    def dm_of(self, user: str) -> str:
        """The id of ``user``'s direct message with the bot (opened now if there was none)."""
        found = next(
            (
                c.id
                for c in self.workspace.channels.values()
                if c.kind == "im" and c.members == {BOT_USER, user}
            ),
            None,
        )
        if found is None:
            name = self.workspace.users[user].name
            found = self.workspace.add_channel(
                Channel(f"D{user[1:]}", f"{name}-dm", "im", {BOT_USER, user})
            ).id
        return found

    async def start_assistant_thread(
        self, user: str, context_channel: str | None = None
    ) -> Message:
        """``user`` opens the AI app's panel (while viewing ``context_channel``): Slack starts
        a thread in their direct message, rooted in a message of its own (subtype
        ``assistant_app_thread``, no event), and sends ``assistant_thread_started``; the
        thread's root is returned (the person's messages are its replies)."""
        channel = self.dm_of(user)
        root = self.workspace.post(channel, user, "New chat", subtype="assistant_app_thread")
        self.workspace.assistant_threads[(channel, root.ts)] = AssistantThread(
            channel, root.ts, user
        )
        await self.deliver_event(
            payloads.assistant_thread_started(user, channel, root.ts, context_channel)
        )
        return root

    def assistant_thread(self, root: Message) -> AssistantThread:
        return self.workspace.assistant_threads[(root.channel, root.ts)]

    async def open_home(self, user: str, tab: str = "home") -> Delivery:
        """``user`` opens the app's Home (``home``) or Messages (``messages``) tab."""
        return await self.deliver_event(payloads.app_home_opened(user, self.dm_of(user), tab))

    def home_views(self, user: str) -> list[dict[str, Any]]:
        """The Home views published for ``user``, oldest first."""
        return list(self.workspace.home_views.get(user, []))

    # --- Slack's side -------------------------------------------------------------------------
    async def deliver_event(self, event: dict[str, Any], **how: Any) -> Delivery:
        return await self.deliver("events_api", payloads.event_callback(event), **how)

    async def deliver(self, kind: Kind, payload: dict[str, Any], **how: Any) -> Delivery:
        delivery = Delivery(kind, payload)
        self.deliveries.append(delivery)
        return await self.deliverer.deliver(delivery, **how)

    async def redeliver(self, delivery: Delivery, reason: str = "http_timeout") -> Delivery:
        again = Delivery(delivery.kind, delivery.payload, attempt=delivery.attempt + 1)
        self.deliveries.append(again)
        return await self.deliverer.deliver(again, reason=reason)

    def _echo(self, event: dict[str, Any]) -> None:
        """The app hears its own posts and edits, like on Slack; delivered in the background."""
        if not self.echo_bot_events or (self.deliverer.mode == "http" and self.http_target is None):
            return
        task = asyncio.get_running_loop().create_task(self.deliver_event(event))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # --- what the channel shows -----------------------------------------------------------------
    def thread(self, channel: str, root_ts: str) -> list[Message]:
        return self.workspace.thread(channel, root_ts)

    def replies(self, channel: str, root_ts: str) -> list[Message]:
        """The bot's messages in a thread, oldest first."""
        return [m for m in self.thread(channel, root_ts) if m.user == BOT_USER]

    def open_streams(self, channel: str) -> list[Message]:
        """The bot's messages still streaming (started, neither stopped nor replaced): a stream
        nobody stops shows as streaming for good here."""
        return [
            m
            for (c, _), m in self.workspace.messages.items()
            if c == channel and m.streaming and not m.deleted
        ]

    def pins(self, channel: str) -> list[str]:
        return list(self.workspace.channels[channel].pins)

    def ephemerals(self, user: str) -> list[str]:
        return [e.shown for e in self.workspace.ephemerals if e.user == user]

    def status_history(self, channel: str, thread_ts: str) -> list[str]:
        return list(self.workspace.statuses.get((channel, thread_ts), []))

    def count(self, method: str) -> int:
        return self.api.counts[method]

    # --- waiting --------------------------------------------------------------------------------
    def _changed(self) -> None:
        self._tick.set()
        self._tick = asyncio.Event()

    async def wait_for(self, condition: Callable[[], bool], within: float = 5.0) -> None:
        """Return once ``condition()`` holds; it is checked again after every change."""
        async with asyncio.timeout(within):
            while not condition():
                tick = self._tick
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(tick.wait(), 0.5)
