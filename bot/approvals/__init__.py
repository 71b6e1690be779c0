"""Approvals: a tool call that waits for a person's decision, kept as data."""
