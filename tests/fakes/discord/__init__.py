"""A fake Discord (REST over HTTP and the gateway over WebSocket) for the real discord.py."""

from tests.fakes.discord.clock import FastClock
from tests.fakes.discord.model import ApiError, Channel, Guild, Message, User
from tests.fakes.discord.server import FakeDiscord, bot_token
from tests.fakes.discord.world import World

__all__ = [
    "bot_token",
    "ApiError",
    "Channel",
    "FakeDiscord",
    "FastClock",
    "Guild",
    "Message",
    "User",
    "World",
]
