"""Threadline on Discord: discord.py 2.7 over the gateway, answers in threads."""

from adapters.discord.adapter import DiscordAdapter

__all__ = ["DiscordAdapter"]
