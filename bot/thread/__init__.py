"""One thread's life in one process: its line of messages, the answer of each, its runs and
their recovery after a restart, deliveries, history, the thread's commands and settings."""
