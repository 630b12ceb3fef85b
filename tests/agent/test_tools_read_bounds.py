"""read holds only what it shows: bounded memory on huge files, and no blocking on FIFOs or devices."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from deadline import run_within

from pi_compact.agent.tools import ReadTool, ToolContext, ToolOutput, run_tool
from pi_compact.agent.tools import read as read_module


def _peak_bytes(call: Callable[[], ToolOutput]) -> tuple[ToolOutput, int]:
    tracemalloc.start()
    try:
        out = call()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_read_of_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    out = run_within(ReadTool(), {"path": "pipe"}, ToolContext(cwd=tmp_path), seconds=10)
    assert out.is_error
    assert out.text == "pipe is a FIFO (named pipe), not a regular file; read only reads regular files."


def test_read_of_character_device_is_refused(tmp_path: Path) -> None:
    out = run_within(ReadTool(), {"path": "/dev/null"}, ToolContext(cwd=tmp_path), seconds=10)
    assert out.is_error
    assert out.text == "/dev/null is a character device, not a regular file; read only reads regular files."


def test_binary_check_of_huge_file_reads_only_its_start(tmp_path: Path) -> None:
    blob = tmp_path / "disk.img"
    with blob.open("wb") as handle:
        handle.truncate(256 * 1024 * 1024)  # sparse: all NUL bytes, no disk space used
    out, peak = _peak_bytes(lambda: run_tool(ReadTool(), {"path": "disk.img"}, ToolContext(cwd=tmp_path)))
    assert out.is_error
    assert out.text == "disk.img is a binary file (256.0 MB); only text files can be read."
    assert peak < 1024 * 1024


def test_window_of_large_text_file_holds_little_memory(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("".join(f"entry {n}\n" for n in range(1, 1_500_001)))
    args = {"path": "big.log", "offset": 1_000_000, "limit": 2}
    out, peak = _peak_bytes(lambda: run_tool(ReadTool(), args, ToolContext(cwd=tmp_path)))
    assert out.text == (
        "1000000\tentry 1000000\n1000001\tentry 1000001\n\n"
        "[Showing lines 1000000-1000001 of 1500000. Use offset=1000002 to continue.]"
    )
    assert peak < 4 * 1024 * 1024


def test_huge_single_line_is_cut_without_holding_it(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_bytes(b"q" * (32 * 1024 * 1024) + b"\nend\n")
    out, peak = _peak_bytes(lambda: run_tool(ReadTool(), {"path": "min.js"}, ToolContext(cwd=tmp_path)))
    assert out.text == (
        "     1\t" + "q" * 2000 + f" [... line cut, {32 * 1024 * 1024 - 2000} more characters]\n     2\tend"
    )
    assert peak < 4 * 1024 * 1024


def test_long_multibyte_line_counts_dropped_characters(tmp_path: Path) -> None:
    (tmp_path / "accents.txt").write_text("é" * 5000 + "\n", encoding="utf-8")
    out = run_tool(ReadTool(), {"path": "accents.txt"}, ToolContext(cwd=tmp_path))
    assert out.text == "     1\t" + "é" * 2000 + " [... line cut, 3000 more characters]"


def test_past_count_limit_notice_gives_size_instead_of_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_module, "COUNT_LIMIT_BYTES", 1000, raising=False)
    (tmp_path / "long.txt").write_text("".join(f"row {n:04}\n" for n in range(1, 3001)))
    out = run_tool(ReadTool(), {"path": "long.txt", "limit": 3}, ToolContext(cwd=tmp_path))
    assert out.text == (
        "     1\trow 0001\n     2\trow 0002\n     3\trow 0003\n\n"
        "[Showing lines 1-3 of a 26.4 KB file (more than 114 lines). Use offset=4 to continue.]"
    )
    assert out.details == {"firstLine": 1, "lastLine": 3}


def test_offset_reaches_last_line_without_final_newline(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\nthree")
    ctx = ToolContext(cwd=tmp_path)
    assert run_tool(ReadTool(), {"path": "a.txt", "offset": 3}, ctx).text == "     3\tthree"
    past = run_tool(ReadTool(), {"path": "a.txt", "offset": 4}, ctx)
    assert past.text == "offset 4 is past the end of a.txt, which has 3 lines."


def test_offset_at_chunk_boundary_starts_on_the_right_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_module, "_CHUNK", 7, raising=False)
    (tmp_path / "a.txt").write_text("".join(f"l{n}\n" for n in range(1, 30)))
    out = run_tool(ReadTool(), {"path": "a.txt", "offset": 12, "limit": 2}, ToolContext(cwd=tmp_path))
    assert out.text == "    12\tl12\n    13\tl13\n\n[Showing lines 12-13 of 29. Use offset=14 to continue.]"
