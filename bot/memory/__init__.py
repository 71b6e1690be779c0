"""Memory: notes the model keeps for a thread or for its channel, found again by full-text search."""
