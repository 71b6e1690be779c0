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
FEATURES = {
    "channels:history": "replies and edits in threads of public channels",
    "groups:history": "replies and edits in threads of private channels",
    "im:history": "direct messages and their edits",
    "mpim:history": "group direct messages and their edits",
}
"""What goes without a required scope, where a name says more than the scope does (doctor
names it beside a missing scope)."""
GROUP_SCOPE = "usergroups:read"
"""Needed only when the configuration names Slack user groups as approvers
(``slack:group:S…``); the manifests ask for it."""
ASSISTANT_SCOPE = "assistant:write"
"""Slack's assistant threads: suggested prompts and titles (``adapters/slack/assistant.py``)."""
DM_SCOPE = "im:write"
"""Needed only when approvals tell their approvers by direct message (the configuration lists
approvers or an escalation); the manifests ask for it."""
OPTIONAL_SCOPES = {
    "channels:read": "the names of public channels, for the model's note of where it is, and "
    "read_channel naming another public channel",
    "groups:read": "the names of private channels, for the model's note of where it is, and "
    "read_channel naming another private channel",
    ASSISTANT_SCOPE: "suggested prompts and titles in Slack's assistant threads",
}
"""Scopes the manifests ask for that the bot works without (doctor names what is missing)."""
BOT_EVENTS = frozenset(
    {
        "app_mention",
        "message.channels",
        "message.groups",
        "message.im",
        "message.mpim",
        "assistant_thread_started",  # suggested prompts (Agents & AI Apps enabled)
        "app_home_opened",  # the Home tab (App Home → Home Tab enabled); needs no scope
    }
)
APP_TOKEN_SCOPE = "connections:write"
"""The app-level token's scope, for Socket Mode."""
