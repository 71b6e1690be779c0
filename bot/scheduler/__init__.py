"""Scheduled jobs: kept in our own table, run by the scheduler service, woken by a timer."""
