"""A thread's workspace: paths stay inside it, and so do the files the tools open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.tools.base import ToolError
from bot.tools.sandbox import Workspace, directory_name


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.for_thread(tmp_path / "root", "slack:T1:C1:1700000000.0001")


# -- directory names and paths -------------------------------------------------------------


def test_directory_names_are_readable_safe_and_distinct() -> None:
    name = directory_name("slack:T1:C1:1700000000.0001")
    assert name.startswith("slack_T1_C1_1700000000.0001-")
    odd = ["a:b", "a_b", "a/b", "../..", "", ".", "playground:ä ö", "x" * 1000, "a\x00b"]
    names = [directory_name(key) for key in odd]
    assert len(set(names)) == len(odd)
    for item in names:
        assert item not in ("", ".", "..")
        assert "/" not in item and "\x00" not in item and not item.startswith(".")
        assert len(item.encode()) <= 100


def test_workspace_is_created_inside_the_root(tmp_path: Path) -> None:
    made = Workspace.for_thread(tmp_path / "a" / "b", "../../../etc")
    assert made.root.is_dir()
    assert made.root.parent == (tmp_path / "a" / "b").resolve()


def test_paths_resolve_inside_the_workspace(ws: Workspace) -> None:
    (ws.root / "src").mkdir()
    assert ws.resolve("src/a.py") == ws.root / "src" / "a.py"
    assert ws.resolve("src/../b.txt") == ws.root / "b.txt"
    assert ws.resolve(".") == ws.root
    assert ws.resolve("") == ws.root
    assert ws.resolve_for_write("new/deep/file.txt") == ws.root / "new" / "deep" / "file.txt"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../x", "outside the workspace"),
        ("a/../../x", "outside the workspace"),
        ("/etc/passwd", "absolute"),
        ("etc/passwd", "outside the workspace"),
        ("passwd", "outside the workspace"),
        ("etc/../../x", "outside the workspace"),
        ("nul\x00byte", "NUL"),
    ],
)
def test_escapes_are_refused(ws: Workspace, path: str, reason: str) -> None:
    (ws.root / "etc").symlink_to("/etc")
    (ws.root / "passwd").symlink_to("/etc/passwd")
    for resolve in (ws.resolve, ws.resolve_for_write):
        with pytest.raises(ToolError, match=reason) as caught:
            resolve(path)
        assert repr(path) in str(caught.value)


def test_writes_are_refused_through_symlinks_and_dangling_links(ws: Workspace) -> None:
    (ws.root / "inside.txt").write_text("x")
    (ws.root / "link.txt").symlink_to("inside.txt")
    (ws.root / "dangling").symlink_to("/nonexistent-dir/file")
    (ws.root / "loop").symlink_to("loop")
    with pytest.raises(ToolError, match="symlink"):
        ws.resolve_for_write("link.txt")
    assert ws.resolve("link.txt") == ws.root / "inside.txt"
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.resolve_for_write("dangling")
    with pytest.raises(ToolError, match="cannot be resolved"):
        ws.resolve("loop")
    with pytest.raises(ToolError, match="does not name a file"):
        ws.resolve_for_write("src/..")


# -- what an open file really is ------------------------------------------------------------


def test_hard_links_are_refused_for_reading_and_writing(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    os.link(outside, ws.root / "linked.txt")
    target = ws.resolve("linked.txt")
    for write in (False, True):
        with pytest.raises(ToolError, match="'linked.txt' has 2 hard links"):
            ws.open_file("linked.txt", target, write=write)
    assert outside.read_text() == "secret\n"


def test_files_open_when_they_are_what_they_seem(ws: Workspace) -> None:
    fd = ws.open_file("new.txt", ws.resolve_for_write("new.txt"), write=True)
    os.write(fd, b"hello")
    os.close(fd)
    fd = ws.open_file("new.txt", ws.resolve("new.txt"))
    try:
        assert os.read(fd, 100) == b"hello"
    finally:
        os.close(fd)


def test_special_files_and_the_workspace_itself_are_refused(ws: Workspace) -> None:
    os.mkfifo(ws.root / "pipe")
    (ws.root / "dir").mkdir()
    with pytest.raises(ToolError, match="'pipe' is not a regular file"):
        ws.open_file("pipe", ws.resolve("pipe"))
    with pytest.raises(ToolError, match="'dir' is a directory"):
        ws.open_file("dir", ws.resolve("dir"))
    with pytest.raises(ToolError, match="'.' is a directory"):
        ws.open_file(".", ws.resolve("."))
    with pytest.raises(ToolError, match="'gone.txt' does not exist"):
        ws.open_file("gone.txt", ws.resolve("gone.txt"))


def test_a_file_on_another_device_is_outside(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("x")
    elsewhere = Workspace(ws.root, ws.device + 1)
    with pytest.raises(ToolError, match="'a.txt' is outside the workspace"):
        elsewhere.open_file("a.txt", ws.resolve("a.txt"))


def test_a_directory_swapped_for_a_link_after_the_check_is_caught(
    ws: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside")
    (ws.root / "sub").mkdir()
    (ws.root / "sub" / "f.txt").write_text("inside")
    target = ws.resolve("sub/f.txt")  # checked while sub was a directory
    (ws.root / "sub" / "f.txt").unlink()
    (ws.root / "sub").rmdir()
    (ws.root / "sub").symlink_to(outside)  # then swapped, as a racing command could
    for write in (False, True):
        with pytest.raises(ToolError, match="'sub/f.txt' is outside the workspace"):
            ws.open_file("sub/f.txt", target, write=write)
    assert (outside / "f.txt").read_text() == "outside"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_an_owned_workspace_gives_what_the_tools_create_to_its_owner(tmp_path: Path) -> None:
    ws = Workspace.for_thread(tmp_path / "root", "t", owner=(65534, 65534))
    assert (ws.root.stat().st_uid, ws.root.stat().st_gid) == (65534, 65534)
    target = ws.resolve_for_write("deep/er/new.txt")
    ws.make_parents(target)
    os.close(ws.open_file("deep/er/new.txt", target, write=True))
    for made in (ws.root / "deep", ws.root / "deep" / "er", target):
        assert made.stat().st_uid == 65534
