"""Persistence behind the :class:`bot.storage.protocol.Store` protocol."""
