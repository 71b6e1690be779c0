"""The local playground: a web page that behaves like a chat thread, served by the runtime."""

from adapters.playground.server import PlaygroundAdapter

__all__ = ["PlaygroundAdapter"]
