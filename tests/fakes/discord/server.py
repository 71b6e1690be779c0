"""The fake Discord served on 127.0.0.1 (port 0), and what a test does as the people in it.

``FakeDiscord`` serves the REST API under ``/api/v10`` and the gateway at ``/gateway`` (READY
names ``/resume`` as the resume URL). A test posts as a user (:meth:`say`), clicks a button
(:meth:`click`), runs a slash command (:meth:`slash`), drops the connection
(``gateway.drop()``), and waits on :meth:`wait_for`, which wakes on every change.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from typing import Any

from aiohttp import web

from bot.infra.clock import Clock
from tests.fakes.discord import payloads
from tests.fakes.discord.cdn import MAX_UPLOAD
from tests.fakes.discord.gateway import Gateway
from tests.fakes.discord.limits import GLOBAL_PER_SECOND, RateLimits
from tests.fakes.discord.model import Channel, Interaction, Message, User
from tests.fakes.discord.rest import Rest
from tests.fakes.discord.world import World

SECRET_PART = "Gabcde.fake-discord-token-secret-part-0123456789"
COMPONENT, COMMAND, MODAL_SUBMIT = 3, 2, 5
MODAL = 9
"""The interaction callback that answers with a modal."""


def _inputs(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The text inputs of one row of a modal (an action row, or a label around one input)."""
    if row.get("type") == 18:
        return [row["component"]]
    return [c for c in row.get("components", []) if c.get("type") == 4]


def bot_token(bot_id: int) -> str:
    """A token shaped like Discord's: the bot's id in base64, a timestamp, a secret."""
    head = base64.urlsafe_b64encode(str(bot_id).encode()).decode().rstrip("=")
    return f"{head}.{SECRET_PART}"


class FakeDiscord:
    def __init__(
        self,
        clock: Clock,
        *,
        token: str | None = None,
        app_flags: int = 1 << 18,
        global_per_second: int = GLOBAL_PER_SECOND,
    ) -> None:
        self.world = World(clock, app_flags=app_flags)
        self.token = token or bot_token(self.world.bot.id)
        self.limits = RateLimits(clock, global_per_second=global_per_second)
        self.rest = Rest(self.world, self.limits, self.token, lambda: self.gateway_url)
        self.cdn = self.rest.cdn
        self.cdn.base_url = lambda: f"http://127.0.0.1:{self.port}"
        self.gateway = Gateway(self.world, self.token)
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application(
            client_max_size=4 * MAX_UPLOAD
        )  # the 413 of an upload is Discord's own
        self.rest.routes(app)
        self.cdn.routes(app)
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_get("/resume", self.gateway.handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]
        self.gateway.resume_url = f"ws://127.0.0.1:{self.port}/resume"

    async def close(self) -> None:
        self.cdn.release()
        await self.gateway.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # --- what people do -----------------------------------------------------------------------
    def say(
        self,
        channel: Channel,
        author: User,
        content: str,
        *,
        webhook: bool = False,
        files: dict[str, bytes] | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> Message:
        """``author`` posts ``content`` (``<@id>`` mentions work) in ``channel``, with ``files``
        (name → bytes) as attachments, and ``attachments`` as given (a URL anywhere)."""
        webhook_id = self.world.snowflake() if webhook else None
        attached = [
            self.cdn.attachment(channel.id, name, data, "application/octet-stream")
            for name, data in (files or {}).items()
        ]
        return self.world.create_message(
            channel.id,
            author,
            content,
            webhook_id=webhook_id,
            attachments=[*(attachments or []), *attached],
        )

    def edit(self, message: Message, content: str) -> Message:
        """Its author gives ``message`` a new text (``<@id>`` mentions work); the gateway sends
        ``MESSAGE_UPDATE``."""
        return self.world.edit_message(
            message.channel_id, message.id, message.author, content=content
        )

    def click(self, message: Message, custom_id: str, user: User) -> Interaction:
        """``user`` clicks the button ``custom_id`` on ``message``."""
        data = {"custom_id": custom_id, "component_type": 2}
        return self._interaction(COMPONENT, message.channel_id, user, data, message.id)

    def submit_modal(
        self, opened_by: Interaction, user: User, text: str | dict[str, str]
    ) -> Interaction:
        """``user`` types ``text`` in every field of the modal ``opened_by`` answered with
        (a ``MODAL`` callback), or each field's own text (``text`` by custom id), and sends
        it: a ``MODAL_SUBMIT`` interaction."""
        modal = next(c["data"] for c in opened_by.callbacks if c.get("type") == MODAL)

        def typed(custom_id: str) -> str:
            return text if isinstance(text, str) else text.get(custom_id, "")

        fields = [
            {
                "type": 1,
                "components": [
                    {"type": 4, "custom_id": f["custom_id"], "value": typed(f["custom_id"])}
                ],
            }
            for row in modal["components"]
            for f in _inputs(row)
        ]
        data = {"custom_id": modal["custom_id"], "components": fields}
        return self._interaction(MODAL_SUBMIT, opened_by.channel_id, user, data, None)

    def slash(
        self, channel: Channel, user: User, name: str, sub: str, /, **values: str
    ) -> Interaction:
        """``user`` runs ``/name sub`` in ``channel``, with string options ``values``."""
        command = next((c for c in self.world.commands if c["name"] == name), None)
        options = [{"name": k, "type": 3, "value": v} for k, v in values.items()]
        data: dict[str, Any] = {
            "id": command["id"] if command else str(self.world.snowflake()),
            "name": name,
            "type": 1,
            "options": [{"name": sub, "type": 1, "options": options}],
        }
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
        return self._interaction(COMMAND, channel.id, user, data, None)

    def click_note(self, used: Interaction, label: str, user: User) -> Interaction:
        """``user`` clicks ``label`` on the private note ``used`` brought (an ephemeral
        follow-up: Discord sends the message with the click, it is in no channel's history)."""
        note = next(
            n
            for n in reversed(used.notes)
            for row in n["components"]
            for b in row["components"]
            if b.get("label") == label
        )
        button = next(
            b for row in note["components"] for b in row["components"] if b.get("label") == label
        )
        data = {"custom_id": button["custom_id"], "component_type": 2}
        clicked = self._interaction(COMPONENT, used.channel_id, user, data, None, emit=False)
        clicked.note = note
        self.world.emit("INTERACTION_CREATE", {"token": clicked.token})
        return clicked

    def message_command(self, message: Message, name: str, user: User) -> Interaction:
        """``user`` picks the message command ``name`` in ``message``'s Apps menu (an
        application command of type 3, with the message resolved)."""
        command = next((c for c in self.world.commands if c["name"] == name), None)
        data: dict[str, Any] = {
            "id": command["id"] if command else str(self.world.snowflake()),
            "name": name,
            "type": 3,
            "target_id": str(message.id),
            "resolved": {"messages": {str(message.id): payloads.message(message, self.world)}},
        }
        channel = self.world.channel(message.channel_id)
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
        return self._interaction(COMMAND, channel.id, user, data, None)

    def _interaction(
        self,
        kind: int,
        channel_id: int,
        user: User,
        data: dict[str, Any],
        message_id: int | None,
        *,
        emit: bool = True,
    ) -> Interaction:
        channel = self.world.channel(channel_id)
        interaction = Interaction(
            self.world.snowflake(),
            secrets.token_urlsafe(24),
            kind,
            channel.id,
            channel.guild_id,
            user,
            data,
            message_id,
            self.world.clock.monotonic(),
        )
        self.world.interactions[interaction.token] = interaction
        if emit:
            self.world.emit("INTERACTION_CREATE", {"token": interaction.token})
        return interaction

    # --- what a test reads --------------------------------------------------------------------
    async def wait_for(self, predicate: Callable[[], object], within: float = 5.0) -> None:
        await self.world.wait_for(predicate, within)

    def requests(self, route: str = "", channel_id: int | None = None) -> list[Any]:
        """The bot's requests whose route contains ``route`` (in ``channel_id``, if given)."""
        return [
            c
            for c in self.rest.calls
            if route in c.route and (channel_id is None or c.channel_id == channel_id)
        ]
