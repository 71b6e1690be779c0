"""The Slack adapter: Bolt over Socket Mode or HTTP, the Web API client, owned tasks.

``start`` checks the bot token with ``auth.test`` (a refused token stops the program with a
:class:`ConfigError`), then either opens the Socket Mode connection (the URL comes from
``apps.connections.open`` through the same Web API client, so ``SLACK_API_URL`` redirects it
too) or enables ``POST /slack/events``. It also tells the core how to reach this workspace's
threads without an event (an approval that expires, a resumed run). Bolt is told who the bot is
from that ``auth.test`` (no call of its own), and runs each listener before answering Slack
(``process_before_response``): the listeners only start owned tasks, so acknowledgements stay
fast and Bolt starts no task of its own. ``stop`` disconnects, gives running answers
``stop_grace`` seconds, cancels the rest and closes the HTTP session.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.api import (
    Identity,
    SlackApi,
    auth_problem,
    build_client,
    error_code,
    http_session,
)
from adapters.slack.assistant import AssistantThreads
from adapters.slack.config import COMMAND, EVENTS_PATH, SlackConfig, SlackSettings
from adapters.slack.home import HomeTab
from adapters.slack.http_mode import EventsEndpoint
from adapters.slack.listeners import SlackListeners
from adapters.slack.optional import Features
from adapters.slack.parse import split_key
from adapters.slack.people import ChannelNames, DisplayNames, UserGroups, configured_groups
from adapters.slack.socket_mode import SocketLink
from adapters.slack.streams import StreamSettings, StreamSupport
from adapters.slack.surface import SlackSurface, slack_limits
from bot.api.inbound import ThreadKey
from bot.api.kit import Clock, SystemClock, TaskSet
from bot.api.port import CoreApi
from bot.api.shortcuts import CALLBACK_PREFIX
from bot.config import Settings
from bot.errors import ConfigError

log = logging.getLogger(__name__)


class SlackAdapter:
    name = "slack"

    def __init__(
        self,
        core: CoreApi,
        settings: Settings,
        slack_settings: SlackSettings,
        *,
        clock: Clock | None = None,
        stop_grace: float = 5.0,
        ping_interval: float = 10.0,
    ) -> None:
        self.core = core
        self.config = SlackConfig.from_settings(slack_settings)
        self._groups = configured_groups(settings)
        self._history_messages = settings.thread_history_messages
        self._clock = clock or SystemClock()
        self._stop_grace = stop_grace
        self._ping_interval = ping_interval
        secret = self.config.signing_secret
        self._endpoint = (
            EventsEndpoint(secret.get_secret_value())
            if self.config.mode == "http" and secret is not None
            else None
        )
        self._session: aiohttp.ClientSession | None = None
        self._socket: SocketLink | None = None
        self.tasks = TaskSet("the Slack adapter")
        self._stopping = False
        self.listeners: SlackListeners | None = None
        self.identity: Identity | None = None

    def install(self, app: web.Application) -> None:
        if self._endpoint is not None:
            app.router.add_post(EVENTS_PATH, self._endpoint.handle)

    async def start(self) -> None:
        self._session = http_session()
        try:
            await self._start(self._session)
        except BaseException:
            await self._close()
            raise

    async def _start(self, session: aiohttp.ClientSession) -> None:
        config = self.config
        client = build_client(config.bot_token.get_secret_value(), config.api_url, session)
        api = SlackApi(client, self._clock)
        try:
            identity = await api.identity()
        except SlackApiError as exc:
            raise ConfigError("SLACK_BOT_TOKEN", auth_problem(error_code(exc))) from None
        self.identity = identity
        limits = slack_limits(
            identity.team_id,
            config.edits_per_minute,
            config.min_edit_interval,
            config.posts_per_minute,
        )
        names = DisplayNames(api.user, self._clock)
        channels = ChannelNames(api.channel_name, self._clock)

        async def name_of(key: ThreadKey) -> str | None:
            _, channel, _ = split_key(key)
            return None if _direct(key) else await channels.name(channel)

        groups = UserGroups(api.group_members, self._groups, self._clock)
        streams = StreamSupport(
            identity.team_id,
            StreamSettings(
                config.streaming,
                config.stream_starts_per_minute,
                config.stream_appends_per_minute,
                config.stream_max_age,
            ),
        )
        self.listeners = SlackListeners(
            self.core,
            api,
            identity,
            names,
            groups,
            limits,
            self.tasks,
            self._history_messages,
            streams,
            self._clock,
        )
        optional = Features()
        self.listeners.assistant = AssistantThreads(
            api, self.core.abilities, config.suggested_prompts, self.tasks, optional
        )
        home = HomeTab(self.core, api, identity, (names, groups), self.tasks, optional)
        self.core.register_surfaces(
            f"slack:{identity.team_id}:",
            self.listeners.surface,
            channel_of=_channel_of,
            direct=_direct,
            name_of=name_of,
        )
        bolt = _bolt_app(
            build_client(None, config.api_url, session),
            self.listeners,
            identity,
            config.bot_token.get_secret_value(),
            {
                "assistant_thread_started": self.listeners.assistant.on_started,
                "app_home_opened": home.on_opened,
            },
        )
        if self._endpoint is not None:
            self._endpoint.dispatch = bolt.async_dispatch
        elif config.app_token is not None:
            self._socket = SocketLink(
                config.app_token.get_secret_value(),
                client,
                bolt.async_dispatch,
                ping_interval=self._ping_interval,
            )
            await self._socket.open()
        log.info(
            "Slack: @%s in workspace %s (%s), %s",
            identity.user,
            identity.team,
            identity.team_id,
            "Socket Mode" if self._endpoint is None else f"HTTP mode at POST {EVENTS_PATH}",
        )

    async def problem(self) -> str | None:
        if self.listeners is None:
            return "not started"
        if self._socket is not None and not await self._socket.connected():
            return "the Socket Mode link is down (reconnecting)"
        return None

    def surface(self, key: ThreadKey) -> SlackSurface:
        """The surface of one thread (for the bot's own posts outside a run)."""
        if self.listeners is None:
            raise RuntimeError("the Slack adapter has not started")
        return self.listeners.surface(key)

    async def wait_idle(self) -> None:
        """Return once no message or click is being handled (those arriving meanwhile included)."""
        await self.tasks.idle()

    async def stop(self) -> None:
        """Stop taking events, let running answers finish (up to ``stop_grace`` s), clean up."""
        if self._stopping:
            return
        self._stopping = True
        if self._endpoint is not None:
            self._endpoint.dispatch = None
        await self._close_socket()
        await self.tasks.drain(self._stop_grace)
        await self._close()

    async def _close_socket(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close()

    async def _close(self) -> None:
        await self._close_socket()
        session, self._session = self._session, None
        if session is not None:
            await session.close()


EventHandler = Callable[[dict[str, Any]], Awaitable[None]]


def _bolt_app(
    client: AsyncWebClient,
    handlers: SlackListeners,
    identity: Identity,
    token: str,
    events: Mapping[str, EventHandler],
) -> AsyncApp:
    """Bolt, told who the bot is (from our ``auth.test``) instead of asking Slack per process;
    ``events``: the handlers of other events by type (Slack's AI app surfaces)."""

    async def authorize(enterprise_id: str | None) -> AuthorizeResult:
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=identity.team_id,
            team=identity.team,
            bot_user_id=identity.bot_user_id,
            bot_id=identity.bot_id,
            bot_token=token,
        )

    app = AsyncApp(
        client=client,
        authorize=authorize,
        signing_secret="",  # checked in EventsEndpoint, before anything is parsed or logged
        name="threadline",
        process_before_response=True,
        request_verification_enabled=False,
        attaching_function_token_enabled=False,
        attaching_conversation_kwargs_enabled=False,
    )
    app.event("message")(handlers.on_message)
    app.event("app_mention")(handlers.on_message)
    for kind, handler in events.items():
        app.event(kind)(handler)
    app.event(re.compile(".*"))(handlers.on_other_event)
    app.action(re.compile(".*"))(handlers.on_action)
    app.view(re.compile(".*"))(handlers.on_view)
    app.command(COMMAND)(handlers.on_command)
    app.message_shortcut(re.compile(f"^{CALLBACK_PREFIX}"))(handlers.on_shortcut)
    return app


def _direct(key: ThreadKey) -> bool:
    """A direct message's channel id starts with ``D``."""
    _, channel, _ = split_key(key)
    return channel.startswith("D")


def _channel_of(key: ThreadKey) -> str:
    """``slack:{team}:{channel}``: "Always allow here" applies to the whole channel."""
    team, channel, _ = split_key(key)
    return f"slack:{team}:{channel}"
