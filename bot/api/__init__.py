"""What an adapter may import: the core's port (:class:`~bot.api.port.CoreApi`), the values it
hands the core (:mod:`bot.api.inbound`), the Surface protocol it implements, button actions and
commands."""
