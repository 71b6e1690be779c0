"""The garbage collector as ``threadline run`` sets it once started (in a process of its own,
since the setting is the whole process's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import gc
from bot.infra import collector
before = gc.get_freeze_count()
collector.settle()
print(before, gc.get_freeze_count() > 1000, gc.get_threshold() == collector.THRESHOLDS)
"""


def test_settling_freezes_what_start_up_built_and_raises_the_thresholds() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True", "True"]
