"""The Slack adapter: Socket Mode or HTTP events in, threaded streamed replies out.

Importing this package imports nothing of the Slack SDK: ``adapter.py`` is the entry point,
``config.py`` its settings (readable without the SDK).
"""
