"""Threadline on Discord: discord.py 2.7 over the gateway, answers in threads.

Importing this package imports nothing of discord.py: ``adapter.py`` is the entry point,
``config.py`` its settings (readable without the SDK).
"""
