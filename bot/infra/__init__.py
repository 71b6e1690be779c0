"""The plumbing every package uses: the clock, owned tasks, logs, metrics."""
