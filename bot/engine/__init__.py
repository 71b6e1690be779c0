"""The agent loop: a typed state machine over a streamed model and tools."""
