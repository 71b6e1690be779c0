"""Turning engine events into platform calls through the Surface protocol (pure logic)."""
