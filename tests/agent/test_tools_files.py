"""read, write and edit against real files under tmp_path."""

from __future__ import annotations

from pathlib import Path

from pi_compact.agent.tools import EditTool, ReadTool, ToolContext, WriteTool, run_tool


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path)


def _numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


def test_read_shows_requested_window_with_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(_numbered(20))
    out = run_tool(ReadTool(), {"path": "a.txt", "offset": 5, "limit": 3}, _ctx(tmp_path))
    assert not out.is_error
    body, notice = out.text.split("\n\n")
    assert body.split("\n") == ["     5\tline 5", "     6\tline 6", "     7\tline 7"]
    assert notice == "[Showing lines 5-7 of 20. Use offset=8 to continue.]"


def test_read_whole_short_file_has_no_notice(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\ny\n")
    out = run_tool(ReadTool(), {"path": "a.txt"}, _ctx(tmp_path))
    assert out.text == "     1\tx\n     2\ty"


def test_read_caps_at_2000_lines_and_says_how_to_continue(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(_numbered(5400))
    out = run_tool(ReadTool(), {"path": "big.txt"}, _ctx(tmp_path))
    lines = out.text.split("\n")
    assert lines[1999] == "  2000\tline 2000"
    assert lines[-1] == "[Showing lines 1-2000 of 5400. Use offset=2001 to continue.]"


def test_read_caps_output_at_50_kb(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("y" * 1000 + "\n") * 200)
    out = run_tool(ReadTool(), {"path": "wide.txt"}, _ctx(tmp_path))
    body, notice = out.text.split("\n\n")
    assert len(body.encode()) <= 50 * 1024
    shown = len(body.split("\n"))
    assert 40 < shown < 60
    assert notice == f"[Showing lines 1-{shown} of 200. Use offset={shown + 1} to continue.]"


def test_read_cuts_over_long_lines_with_marker(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("z" * 2500 + "\n")
    out = run_tool(ReadTool(), {"path": "long.txt"}, _ctx(tmp_path))
    assert out.text == "     1\t" + "z" * 2000 + " [... line cut, 500 more characters]"


def test_read_missing_file_is_error(tmp_path: Path) -> None:
    out = run_tool(ReadTool(), {"path": "nope.txt"}, _ctx(tmp_path))
    assert out.is_error
    assert out.text == "File not found: nope.txt"


def test_read_binary_file_is_error(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"abc\x00\x01\x02")
    out = run_tool(ReadTool(), {"path": "blob.bin"}, _ctx(tmp_path))
    assert out.is_error
    assert "blob.bin is a binary file" in out.text


def test_read_offset_past_end_is_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    out = run_tool(ReadTool(), {"path": "a.txt", "offset": 9}, _ctx(tmp_path))
    assert out.is_error
    assert out.text == "offset 9 is past the end of a.txt, which has 1 lines."


def test_read_path_with_spaces_and_non_ascii(tmp_path: Path) -> None:
    folder = tmp_path / "dir with space"
    folder.mkdir()
    (folder / "文件.txt").write_text("héllo wörld\n", encoding="utf-8")
    out = run_tool(ReadTool(), {"path": "dir with space/文件.txt"}, _ctx(tmp_path))
    assert out.text == "     1\théllo wörld"


def test_read_accepts_absolute_and_home_paths(tmp_path: Path) -> None:
    (tmp_path / "abs.txt").write_text("abs\n")
    out = run_tool(ReadTool(), {"path": str(tmp_path / "abs.txt")}, ToolContext(cwd=Path("/")))
    assert out.text == "     1\tabs"
    home_out = run_tool(ReadTool(), {"path": "~/surely-not-here-pi-compact.txt"}, _ctx(tmp_path))
    assert home_out.text == "File not found: ~/surely-not-here-pi-compact.txt"


def test_write_creates_parent_directories(tmp_path: Path) -> None:
    out = run_tool(WriteTool(), {"path": "a/b/c/new.txt", "content": "ünï\n"}, _ctx(tmp_path))
    assert not out.is_error
    assert (tmp_path / "a/b/c/new.txt").read_bytes() == "ünï\n".encode()
    assert out.text == "Created a/b/c/new.txt: wrote 6 bytes."


def test_write_overwrites_existing_file(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old contents")
    out = run_tool(WriteTool(), {"path": "f.txt", "content": "new"}, _ctx(tmp_path))
    assert (tmp_path / "f.txt").read_text() == "new"
    assert out.text == "Overwrote f.txt: wrote 3 bytes."


def test_write_path_with_spaces_and_non_ascii(tmp_path: Path) -> None:
    run_tool(WriteTool(), {"path": "dir with space/文件.txt", "content": "数据"}, _ctx(tmp_path))
    assert (tmp_path / "dir with space" / "文件.txt").read_text(encoding="utf-8") == "数据"


def test_edit_replaces_unique_text_and_returns_diff(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    out = run_tool(EditTool(), {"path": "m.py", "oldText": "b = 2", "newText": "b = 20"}, _ctx(tmp_path))
    assert not out.is_error
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 20\nc = 3\n"
    assert out.text == "Edited m.py: replaced 1 line with 1 line at line 2."
    assert out.details is not None
    diff = out.details["diff"]
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "-b = 2\n+b = 20\n" in diff


def test_edit_fails_when_old_text_not_found(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\n")
    out = run_tool(EditTool(), {"path": "m.py", "oldText": "zzz", "newText": "y"}, _ctx(tmp_path))
    assert out.is_error
    assert out.text.startswith("oldText not found in m.py")
    assert (tmp_path / "m.py").read_text() == "a = 1\n"


def test_edit_fails_when_old_text_not_unique(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\nx = 1\nx = 1\n")
    out = run_tool(EditTool(), {"path": "m.py", "oldText": "x = 1", "newText": "x = 2"}, _ctx(tmp_path))
    assert out.is_error
    assert out.text == "oldText occurs 3 times in m.py; add surrounding lines to make it unique."
    assert (tmp_path / "m.py").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_keeps_crlf_line_endings(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = run_tool(EditTool(), {"path": "w.txt", "oldText": "one\ntwo", "newText": "1\n2"}, _ctx(tmp_path))
    assert not out.is_error
    assert (tmp_path / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_of_non_utf8_file_is_error_and_file_untouched(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    out = run_tool(EditTool(), {"path": "latin.txt", "oldText": "caf", "newText": "tea"}, _ctx(tmp_path))
    assert out.is_error
    assert out.text == "edit failed: the file is not valid utf-8 text (bad byte at offset 3)"
    assert (tmp_path / "latin.txt").read_bytes() == b"caf\xe9\n"
