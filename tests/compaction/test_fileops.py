"""File operations carried through compactions: collection, seeding, the two lists and their block."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builders import assistant, tool_call, tool_result, user

from pi_compact.compaction.fileops import FileOps, file_lists, format_file_lists


def _ops(*messages: Mapping[str, Any]) -> FileOps:
    ops = FileOps()
    for message in messages:
        ops.add_from(message)
    return ops


def test_read_write_edit_calls_fill_their_sets() -> None:
    ops = _ops(
        assistant(
            tool_calls=[
                tool_call("read", {"path": "r.py"}),
                tool_call("write", {"path": "w.py", "content": "x"}),
                tool_call("edit", {"path": "e.py", "oldText": "a", "newText": "b"}),
            ]
        )
    )
    assert (ops.read, ops.written, ops.edited) == ({"r.py"}, {"w.py"}, {"e.py"})


def test_other_tools_and_non_string_paths_are_ignored() -> None:
    ops = _ops(
        assistant(
            tool_calls=[
                tool_call("bash", {"command": "cat x.py", "path": "x.py"}),
                tool_call("grep", {"pattern": "p", "path": "src"}),
                tool_call("ls", {"path": "."}),
                tool_call("read", {"path": 3}),
                tool_call("read", {"file": "y.py"}),
            ]
        )
    )
    assert (ops.read, ops.written, ops.edited) == (set(), set(), set())


def test_only_assistant_messages_contribute() -> None:
    fake = {"role": "user", "content": [tool_call("read", {"path": "u.py"})]}
    ops = _ops(fake, user("read p.py"), tool_result("contents", tool_name="read"))
    assert ops.read == set()


def test_seed_reads_previous_details_into_read_and_edited() -> None:
    ops = FileOps()
    ops.seed({"readFiles": ["a.py", 5], "modifiedFiles": ["b.py"]})
    assert (ops.read, ops.written, ops.edited) == ({"a.py"}, set(), {"b.py"})


def test_seed_ignores_missing_or_malformed_details() -> None:
    ops = FileOps()
    ops.seed(None)
    ops.seed({"readFiles": "a.py"})
    ops.seed(["a.py"])
    assert (ops.read, ops.edited) == (set(), set())


def test_read_only_list_excludes_modified_files() -> None:
    ops = FileOps(read={"a.py", "b.py", "c.py"}, written={"b.py"}, edited={"c.py", "d.py"})
    assert file_lists(ops) == (["a.py"], ["b.py", "c.py", "d.py"])


def test_lists_sort_by_utf16_code_units_like_javascript() -> None:
    # uppercase before lowercase; an emoji (surrogates 0xD83D...) sorts before U+FF01, unlike
    # Python's code-point order
    ops = FileOps(read={"b.py", "Z.py", "\uff01.txt", "\U0001f600.txt", "a.py"})
    read, modified = file_lists(ops)
    assert read == ["Z.py", "a.py", "b.py", "\U0001f600.txt", "\uff01.txt"]
    assert modified == []


def test_format_has_both_sections_separated_by_blank_line() -> None:
    assert format_file_lists(["a.py", "b.py"], ["c.py"]) == (
        "\n\n<read-files>\na.py\nb.py\n</read-files>\n\n<modified-files>\nc.py\n</modified-files>"
    )


def test_format_with_only_modified_files() -> None:
    assert format_file_lists([], ["c.py"]) == "\n\n<modified-files>\nc.py\n</modified-files>"


def test_format_with_only_read_files() -> None:
    assert format_file_lists(["a.py"], []) == "\n\n<read-files>\na.py\n</read-files>"


def test_format_is_empty_without_files() -> None:
    assert format_file_lists([], []) == ""
