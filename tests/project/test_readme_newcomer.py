"""What the README tells a newcomer holds (issue 44, item 7): how the tmux tests are found (it said "one
test drives the real CLI in tmux" when 58 did), a recipe to see compaction early, and the machine and load
behind its prompt-reading figure (17-27 tokens/s were seen under load where it said 60-67)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(start: str, end: str) -> str:
    at = README.index(start)
    return " ".join(README[at : README.index(end, at)].split())


def test_the_tmux_tests_are_those_marked_terminal_as_the_readme_says() -> None:
    assert "one test drives the real CLI in tmux" not in README
    assert "the tests marked `terminal` (every module under `tests/terminal/`; `-m terminal` runs only them) " \
           "drive the real CLI in tmux" in " ".join(README.split())
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider",
                           "-m", "terminal", "tests/terminal"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    marked = [line for line in done.stdout.splitlines() if "::" in line]
    everything = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider",
                                 "tests/terminal"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert len(marked) > 50 and marked == [line for line in everything.stdout.splitlines() if "::" in line]


def test_the_recipe_for_seeing_compaction_early_is_valid_settings_with_the_threshold_it_names() -> None:
    recipe = _section("**Seeing compaction early.**", "## Set up")
    command = re.search(r"echo '([^']+)' > \.pi/settings\.json", README)
    assert command is not None
    budgets = json.loads(command.group(1))["compaction"]
    assert budgets == {"reserveTokens": 3000, "keepRecentTokens": 2000}
    assert f"16,384 − 3,000 = {16_384 - 3_000:,} tokens" in " ".join(README.split())
    assert "/uncompact" in recipe


def test_the_prompt_reading_rate_names_the_machine_and_its_load() -> None:
    text = " ".join(README.split())
    sentence = text[text.index("prompts are read at ~60-67 tokens/s"):][:400]
    assert "2-core machine with nothing else running, load average 0.5-1.9" in sentence
    assert "at load average 4-6 on the same 2-core machine, saw 17-27 tokens/s" in text
