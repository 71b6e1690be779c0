"""The real ``threadline run`` on the fake Slack (with Slack's tiers) and an MCP server that
floods progress and log notifications (``bench/mcp_progress.py --serve``, 500 of each a
second for 3 s): the thread's status shows about one progress line a second, Slack never
answers 429, the tool's answer reaches the model exactly, the thread shows the final answer,
and another thread asked meanwhile is answered at once."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.mcp_progress import measure
from tests.adapters.test_cli import ROOT


async def test_a_progress_flood_is_shown_within_the_budget_and_loses_nothing(
    tmp_path: Path,
) -> None:
    here = str(ROOT / "bench" / "mcp_progress.py")
    figures = await measure(
        argparse.Namespace(rate=500, seconds=3.0, here=here, text=True, streaming="edit"), tmp_path
    )
    assert figures.exact and figures.final_shown
    assert figures.rejected == 0 and figures.violations == 0
    assert 1 <= figures.status_lines + figures.reply_lines <= figures.flood_s + 2
    assert figures.other_s < 5.0
