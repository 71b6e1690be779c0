"""Model access: our own message types, the model protocol, the OpenAI-compatible client,
and the offline demo model."""
