"""Plain ``compact`` calls skip typer, with exactly typer's arguments, output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from builders import assistant, header, msg, user

from pi_compact.cli.argv import fast_compact_args

# The typer app driven directly, so the fast path in main() is not taken.
TYPER = "import sys; sys.argv[0] = 'pi-compact'; from pi_compact.cli.typer_app import build_app; build_app()()"


def _session(tmp_path: Path) -> Path:
    entries = [msg(user("hello " * 50), id="a", parent=None), msg(assistant("hi " * 50), id="b", parent="a")]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in [header(), *entries]) + "\n", encoding="utf-8")
    return path


def test_fast_path_parses_a_plain_dry_run_call() -> None:
    argv = ["compact", "s.jsonl", "--dry-run", "--json", "--keep-recent-tokens", "0", "--context-window=8000",
            "--token-estimator", "auto", "--reserve-tokens", "5", "--reserve-tokens", "7"]
    assert fast_compact_args(argv) == {
        "session": Path("s.jsonl"), "dry_run": True, "as_json": True, "keep_recent_tokens": 0,
        "context_window": 8000, "token_estimator": "auto", "reserve_tokens": 7,
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["compact"],
        ["compact", "a.jsonl", "b.jsonl"],
        ["compact", "a.jsonl", "--help"],
        ["compact", "a.jsonl", "--keep-recent-tokens", "-5"],
        ["compact", "a.jsonl", "--keep-recent-tokens", "05"],
        ["compact", "a.jsonl", "--keep-recent-tokens", "1e3"],
        ["compact", "a.jsonl", "--keep-recent-tokens"],
        ["compact", "a.jsonl", "--dry-run=yes"],
        ["compact", "a.jsonl", "--model", ""],
        ["compact", "a.jsonl", "--unknown"],
        ["compact", "--", "a.jsonl"],
        ["--model", "m", "compact", "a.jsonl"],
        ["--version"],
        [],
    ],
)
def test_fast_path_leaves_anything_unusual_to_typer(argv: list[str]) -> None:
    assert fast_compact_args(argv) is None


@pytest.mark.parametrize(
    "flags",
    [
        ["--dry-run", "--json", "--context-window", "8000", "--token-estimator", "chars4"],
        ["--dry-run", "--json", "--context-window=8000", "--keep-recent-tokens", "10", "--reserve-tokens", "7900"],
        ["--dry-run", "--context-window", "8000"],
        ["--dry-run", "--json"],
        ["--dry-run", "--json", "--context-window", "8000", "--token-estimator", "bogus"],
        ["--dry-run", "--json", "--context-window", "0"],
    ],
    ids=["json", "json-budget", "human", "no-window", "bad-estimator", "zero-window"],
)
def test_fast_path_and_typer_give_the_same_output_and_exit_code(tmp_path: Path, flags: list[str]) -> None:
    args = ["compact", str(_session(tmp_path)), *flags]
    assert fast_compact_args(args) is not None
    fast = subprocess.run([sys.executable, "-m", "pi_compact", *args], capture_output=True, text=True, cwd=tmp_path)
    slow = subprocess.run([sys.executable, "-c", TYPER, *args], capture_output=True, text=True, cwd=tmp_path)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)


def test_missing_session_file_reads_the_same_on_both_paths(tmp_path: Path) -> None:
    args = ["compact", str(tmp_path / "missing.jsonl"), "--dry-run", "--context-window", "10"]
    fast = subprocess.run([sys.executable, "-m", "pi_compact", *args], capture_output=True, text=True)
    slow = subprocess.run([sys.executable, "-c", TYPER, *args], capture_output=True, text=True)
    assert fast.returncode == slow.returncode == 2
    assert fast.stderr == slow.stderr == f"pi-compact: Session file {tmp_path / 'missing.jsonl'} does not exist.\n"


def test_a_json_dry_run_imports_neither_typer_nor_pydantic_nor_rich(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        f"sys.argv = ['pi-compact', 'compact', {str(_session(tmp_path))!r}, '--dry-run', '--json',"
        " '--context-window', '8000']\n"
        "from pi_compact.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('typer', 'pydantic', 'rich', 'litellm', 'prompt_toolkit')\n"
        "sys.stderr.write(repr(sorted(m for m in heavy if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stderr == "[]"
    assert json.loads(out.stdout)["context_roles"] == ["user", "assistant"]
