"""ls, grep and find over a small tree under tmp_path."""

from __future__ import annotations

from pathlib import Path

from pi_compact.agent.tools import FindTool, GrepTool, LsTool, ToolContext, run_tool


def _tree(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "core.py").write_text("def alpha():\n    return 1\n\ndef Beta():\n    pass\n")
    (root / "src" / "main.py").write_text("import pkg\nalpha()\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text("def test_core():\n    assert alpha() == 1\n")
    (root / "README.md").write_text("alpha project (v1.0)\n")
    (root / ".hidden").write_text("alpha hidden\n")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "index.py").write_text("alpha()\n")
    (root / ".git").mkdir()
    (root / ".git" / "config.py").write_text("alpha\n")
    (root / "image.bin").write_bytes(b"alpha\x00\x00")
    return root


def test_ls_lists_sorted_entries_with_dir_slash_and_dotfiles(tmp_path: Path) -> None:
    _tree(tmp_path)
    out = run_tool(LsTool(), {}, ToolContext(cwd=tmp_path))
    assert out.text.split("\n") == [
        ".git/",
        ".hidden",
        "image.bin",
        "node_modules/",
        "README.md",
        "src/",
        "tests/",
    ]


def test_ls_truncates_at_limit_with_notice(tmp_path: Path) -> None:
    for n in range(10):
        (tmp_path / f"f{n}.txt").write_text("")
    out = run_tool(LsTool(), {"limit": 3}, ToolContext(cwd=tmp_path))
    assert out.text == "f0.txt\nf1.txt\nf2.txt\n\n[Showing 3 of 10 entries. Use limit=10 to see all.]"


def test_ls_of_missing_directory_is_error(tmp_path: Path) -> None:
    out = run_tool(LsTool(), {"path": "nowhere"}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text == "Path not found: nowhere"


def test_grep_finds_matches_and_skips_ignored_dirs_and_binaries(tmp_path: Path) -> None:
    _tree(tmp_path)
    out = run_tool(GrepTool(), {"pattern": r"alpha\("}, ToolContext(cwd=tmp_path))
    assert out.text.split("\n") == [
        "src/main.py:2: alpha()",
        "src/pkg/core.py:1: def alpha():",
        "tests/test_core.py:2:     assert alpha() == 1",
    ]


def test_grep_glob_ignore_case_and_literal(tmp_path: Path) -> None:
    _tree(tmp_path)
    ctx = ToolContext(cwd=tmp_path)
    beta = run_tool(GrepTool(), {"pattern": "beta", "ignoreCase": True, "glob": "*.py"}, ctx)
    assert beta.text == "src/pkg/core.py:4: def Beta():"
    literal = run_tool(GrepTool(), {"pattern": "(v1.0)", "literal": True}, ctx)
    assert literal.text == "README.md:1: alpha project (v1.0)"


def test_grep_truncates_at_limit_with_notice(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 50)
    out = run_tool(GrepTool(), {"pattern": "hit", "limit": 5}, ToolContext(cwd=tmp_path))
    lines = out.text.split("\n")
    assert lines[:5] == [f"many.txt:{n}: hit" for n in range(1, 6)]
    assert lines[6].startswith("[Showing the first 5 matches; there are more.")


def test_grep_cuts_long_matching_lines(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("needle" + "x" * 994 + "\n")
    out = run_tool(GrepTool(), {"pattern": "needle"}, ToolContext(cwd=tmp_path))
    assert out.text == "wide.txt:1: needle" + "x" * 494 + " [... 500 more characters]"


def test_grep_invalid_regex_is_error_naming_pattern(tmp_path: Path) -> None:
    out = run_tool(GrepTool(), {"pattern": "foo(("}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text.startswith("Invalid regex 'foo(('")


def test_grep_in_non_ascii_path_with_spaces(tmp_path: Path) -> None:
    folder = tmp_path / "dir with space"
    folder.mkdir()
    (folder / "文件.txt").write_text("第一行\n找到我\n", encoding="utf-8")
    out = run_tool(GrepTool(), {"pattern": "找到", "path": "dir with space"}, ToolContext(cwd=tmp_path))
    assert out.text == "文件.txt:2: 找到我"


def test_find_matches_name_glob_at_any_depth(tmp_path: Path) -> None:
    _tree(tmp_path)
    out = run_tool(FindTool(), {"pattern": "*.py"}, ToolContext(cwd=tmp_path))
    assert out.text.split("\n") == ["src/main.py", "src/pkg/core.py", "tests/test_core.py"]


def test_find_double_star_pattern(tmp_path: Path) -> None:
    _tree(tmp_path)
    out = run_tool(FindTool(), {"pattern": "src/**/*.py"}, ToolContext(cwd=tmp_path))
    assert out.text.split("\n") == ["src/main.py", "src/pkg/core.py"]
    tests = run_tool(FindTool(), {"pattern": "**/test_*.py"}, ToolContext(cwd=tmp_path))
    assert tests.text == "tests/test_core.py"


def test_find_truncates_at_limit_with_notice(tmp_path: Path) -> None:
    for n in range(20):
        (tmp_path / f"f{n:02}.txt").write_text("")
    out = run_tool(FindTool(), {"pattern": "*.txt", "limit": 4}, ToolContext(cwd=tmp_path))
    lines = out.text.split("\n")
    assert lines[:4] == ["f00.txt", "f01.txt", "f02.txt", "f03.txt"]
    assert lines[5].startswith("[Showing the first 4 matches; there are more.")


def test_find_non_ascii_names(tmp_path: Path) -> None:
    (tmp_path / "dir with space").mkdir()
    (tmp_path / "dir with space" / "文件.txt").write_text("x")
    out = run_tool(FindTool(), {"pattern": "*.txt"}, ToolContext(cwd=tmp_path))
    assert out.text == "dir with space/文件.txt"
