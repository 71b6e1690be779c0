"""What the Slack app must be granted: the scopes and events in deploy/slack-manifest.*.yaml."""

from __future__ import annotations

BOT_SCOPES = frozenset(
    {
        "app_mentions:read",  # app_mention events
        "channels:history",  # message.channels: thread replies in public channels
        "groups:history",  # message.groups: private channels
        "im:history",  # message.im: direct messages
        "mpim:history",  # message.mpim: group direct messages
        "chat:write",  # post, update, delete, ephemeral notes, assistant.threads.setStatus
        "pins:write",  # the todo panel
        "users:read",  # display names
        "commands",  # /threadline
        "files:read",  # download the files people share (url_private)
        "files:write",  # send_file: upload a workspace file into the thread
    }
)
GROUP_SCOPE = "usergroups:read"
"""Needed only when the configuration names Slack user groups as approvers
(``slack:group:S…``); the manifests ask for it."""
DM_SCOPE = "im:write"
"""Needed only when approvals tell their approvers by direct message (the configuration lists
approvers or an escalation); the manifests ask for it."""
OPTIONAL_SCOPES = {
    "channels:read": "the names of public channels, for the model's note of where it is, and "
    "read_channel naming another public channel",
    "groups:read": "the names of private channels, for the model's note of where it is, and "
    "read_channel naming another private channel",
}
"""Scopes the manifests ask for that the bot works without (doctor names what is missing)."""
BOT_EVENTS = frozenset(
    {"app_mention", "message.channels", "message.groups", "message.im", "message.mpim"}
)
APP_TOKEN_SCOPE = "connections:write"
"""The app-level token's scope, for Socket Mode."""
