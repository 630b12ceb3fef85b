"""The approval question's preview of an ``edit``: the file's own line numbers, and a no-op said as one."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from pi_compact.ui.approval_prompt import preview


def _shown(args: dict[str, str], cwd: Path) -> str:
    console = Console(record=True, width=120)
    console.print(preview("edit", args, cwd))
    return console.export_text()


def test_an_edit_preview_numbers_its_hunk_by_the_lines_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 9)) + "return a - b\n", encoding="utf-8")
    text = _shown({"path": "app.py", "oldText": "return a - b", "newText": "return a + b"}, tmp_path)
    assert "@@ -6,4 +6,4 @@" in text
    assert "-return a - b" in text and "+return a + b" in text


def test_an_edit_that_changes_nothing_says_so(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n", encoding="utf-8")
    text = _shown({"path": "app.py", "oldText": "x = 1", "newText": "x = 1"}, tmp_path)
    assert "edit app.py: no change (oldText and newText are the same)" in text
