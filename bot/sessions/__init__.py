"""One session per thread: its transcript, todo list, usage and presence on the platform."""
