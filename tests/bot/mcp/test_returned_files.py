"""Files an MCP tool returns (an embedded resource's bytes, audio): posted in the thread for
people, kept in the thread's workspace and described for the model, by their audience; a file
whose bytes are not base64 is named and dropped. Through the core, with the ``mcp`` SDK's own
server (tests/fakes/mcp_asking_server.py) and a scripted model."""

from __future__ import annotations

from typing import Any

from bot.tools.sandbox import Workspace
from tests.bot.mcp.test_forms import KEY, make_world
from tests.fakes.mcp_asking_server import REPORT_CSV, WAV
from tests.fakes.scripted_model import call, step, text

__all__ = ["make_world"]


async def test_returned_files_are_posted_and_kept_for_the_model(make_world: Any) -> None:
    world = await make_world()
    world.start("report", step(call("asking__report", {})), text("North 12, south 30."))
    await world.approve()
    await world.finish()
    [result] = await world.results()
    assert world.files.sent == [("q3_totals.csv", REPORT_CSV), ("asking__report-file-2.wav", WAV)]
    assert "The quarter's report." in result
    assert "[text/csv file q3_totals.csv: posted in the thread; kept in your workspace as" in result
    assert "region,total\nnorth,12" in result  # its start, read for the model
    # the recording is for the user alone: posted, never read for the model
    assert "[audio/wav file asking__report-file-2.wav: posted in the thread]" in result
    assert "[application/pdf file broken.bin that is not valid base64, dropped]" in result
    workspace = Workspace.for_thread(world.settings.data_dir / "workspaces", str(KEY))
    assert (workspace.root / "q3_totals.csv").read_bytes() == REPORT_CSV
    assert not (workspace.root / "asking__report-file-2.wav").exists()
    assert world.surface.texts()[-1].startswith("North 12, south 30.")


async def test_a_file_over_the_cap_is_posted_but_not_kept(make_world: Any) -> None:
    world = await make_world()
    world.settings.file_max_bytes = 10
    world.start("report", step(call("asking__report", {})), text("Too big to read."))
    await world.approve()
    await world.finish()
    [result] = await world.results()
    assert (
        "[text/csv file q3_totals.csv: posted in the thread; not kept (31 bytes, larger than the"
        " 10 bytes cap)]" in result
    )
    workspace = Workspace.for_thread(world.settings.data_dir / "workspaces", str(KEY))
    assert not (workspace.root / "q3_totals.csv").exists()
