"""A fake Slack for the adapter's tests and benchmark: Web API, Socket Mode, Events API."""

from tests.fakes.slack.server import APP_TOKEN, BOT_TOKEN, MENTION, SIGNING_SECRET, FakeSlack
from tests.fakes.slack.state import BOT_USER, Message

__all__ = [
    "APP_TOKEN",
    "BOT_TOKEN",
    "BOT_USER",
    "MENTION",
    "SIGNING_SECRET",
    "FakeSlack",
    "Message",
]
