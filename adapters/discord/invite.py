"""``threadline discord-invite``: the link that adds the bot to a server, with exactly the
permissions it uses, and the intent to switch on."""

from __future__ import annotations

import asyncio
import base64
import binascii

import discord
from discord.utils import oauth_url

from adapters.discord.config import DiscordSettings
from adapters.discord.endpoints import point_at

SCOPES = ("bot", "applications.commands")
PERMISSIONS: tuple[tuple[str, str], ...] = (
    ("view_channel", "View Channels"),
    ("send_messages", "Send Messages"),
    ("send_messages_in_threads", "Send Messages in Threads"),
    ("create_public_threads", "Create Public Threads"),
    ("read_message_history", "Read Message History"),
    ("pin_messages", "Pin Messages"),
)
"""What the bot does: read its channels, answer in threads it opens, pin the todo panel
(Pin Messages, split from Manage Messages by Discord in 2025: the bot never needs the latter)."""
INTENT_HELP = (
    "Bot → Privileged Gateway Intents → Message Content Intent: switch it on so people can "
    "continue a thread without mentioning the bot, and edit what they asked (without it, only "
    "mentions and DMs are read)."
)


def permissions() -> discord.Permissions:
    return discord.Permissions(**{flag: True for flag, _ in PERMISSIONS})


def client_id_from_token(token: str) -> int | None:
    """The bot's id, which a bot token carries base64-encoded before its first dot."""
    first = token.strip().split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return int(decoded) if decoded.isdigit() else None


def invite_url(client_id: int) -> str:
    return oauth_url(client_id, permissions=permissions(), scopes=SCOPES)


def invite_text(client_id: int) -> str:
    names = ", ".join(name for _, name in PERMISSIONS)
    portal = f"https://discord.com/developers/applications/{client_id}/bot"
    return (
        "Add Threadline to a server you manage:\n\n"
        f"  {invite_url(client_id)}\n\n"
        f"It asks for: {names}.\n\n"
        f"Then, in the Developer Portal ({portal}):\n  {INTENT_HELP}\n"
    )


async def application_id(settings: DiscordSettings) -> int:
    """The application's id, asked of Discord (for tokens that do not carry it)."""
    assert settings.discord_token is not None
    point_at(settings.discord_api_base, settings.discord_gateway_url)
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    try:
        await http.static_login(settings.discord_token.get_secret_value().strip())
        app = await http.application_info()
    finally:
        await http.close()
    return int(app["id"])


async def print_invite(settings: DiscordSettings) -> int:
    """Print the invite; 2 when no token is configured, 1 when Discord refuses it."""
    if settings.discord_token is None:
        print("threadline: set DISCORD_TOKEN to the bot's token first (Developer Portal → Bot).")
        return 2
    client_id = client_id_from_token(settings.discord_token.get_secret_value())
    if client_id is None:
        try:
            client_id = await application_id(settings)
        except discord.LoginFailure:
            print(
                "threadline: Discord refused DISCORD_TOKEN (401): reset it in the Developer Portal."
            )
            return 1
        except (discord.HTTPException, OSError) as exc:
            print(f"threadline: could not ask Discord for the application id: {exc}")
            return 1
    print(invite_text(client_id), end="")
    return 0
