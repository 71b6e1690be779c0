"""The Slack adapter: Socket Mode or HTTP events in, threaded streamed replies out."""

from adapters.slack.adapter import SlackAdapter

__all__ = ["SlackAdapter"]
