"""The SQLite store: one file in the data directory, numbered migrations beside it."""
