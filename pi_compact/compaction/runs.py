"""The newest failed test run, and putting it back when a summary left it out (pure).

"Which test failed, and with what numbers?" is answered by one line of the test runner's output that
a small summarizer paraphrases away ("one test failed"). The results of command tools (``bash``) are
read for a test runner's tally line (cargo, pytest, go test / gotestsum, jest, vitest, rspec, dotnet
test, Gradle, TAP, mocha) and for the names it marks as failed. The newest run that failed goes on one
line under Critical Context, its failed names as the runner printed them and its tally word for word,
saying so when a later run passed (the failure was met, and fixed: a regression looks the same).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pi_compact.compaction.listed import add_line
from pi_compact.compaction.tool_errors import COMMAND_TOOLS
from pi_compact.messages import Message, text_of

TEST_RUN_PREFIX = "- Newest failed test run: "
AFTER_PASSED = "; a later run passed"
NAMES_SHOWN = 5
_NAME_MAX = 160

# A tally line, and whether it says something failed (group ``failed`` holds the failed count, or
# the word, where the runner prints one).
_TALLIES = (
    re.compile(r"^test result: (?:ok|FAILED)\. \d+ passed; (?P<failed>\d+) failed.*$"),  # cargo
    re.compile(r"^=*\s*(?:(?P<failed>\d+) failed, )?\d+ passed(?:, \d+ \w+)* in [\d.]+m?s\b.*$"),  # pytest
    re.compile(r"^=*\s*(?P<failed>\d+) failed(?:, \d+ \w+)* in [\d.]+m?s\b.*$"),  # pytest, nothing passed
    re.compile(r"^DONE \d+ tests?(?:, (?P<failed>\d+) failures?)?.*$"),  # gotestsum
    re.compile(r"^\s*Tests:?\s+(?:(?P<failed>\d+) failed\s*[,|]\s*)?(?:\d+ \w+\s*[,|]\s*)*\d+ (?:passed|total)\b.*$"),
    re.compile(r"^\d+ examples?, (?P<failed>\d+) failures?.*$"),  # rspec
    re.compile(r"^(?:Passed|Failed)!\s+-\s+Failed:\s+(?P<failed>\d+), Passed:\s+\d+.*$"),  # dotnet test
    re.compile(r"^\d+ tests? completed, (?P<failed>\d+) failed.*$"),  # Gradle
    re.compile(r"^# Looks like you failed (?P<failed>\d+) tests? of \d+.*$"),  # TAP
    re.compile(r"^\s*(?P<failed>\d+) failing\s*$"),  # mocha
)
_LINE_MAX = 2_000
# A test the runner marks as failed: group 1 is its name as printed.
_FAILED_NAMES = (
    re.compile(r"^test (\S+) \.\.\. FAILED$"),  # cargo
    re.compile(r"^FAILED (\S+::\S+)"),  # pytest's short summary
    re.compile(r"^(\S+::\S+) FAILED\b"),  # pytest -v
    re.compile(r"^\s*--- FAIL: (\S+)"),  # go test
    re.compile(r"^FAIL (\S+) \([\d.]+s\)$"),  # gotestsum
    re.compile(r"^\s*Failed (\S+) \[[\d.]+ ?m?s\]$"),  # dotnet test
    re.compile(r"^(\S.* > .+?) FAILED$"),  # Gradle
    re.compile(r"^rspec \S+ # (.+)$"),  # rspec
    re.compile(r"^not ok \d+ - (.+)$"),  # TAP
    re.compile(r"^\s*[×✕✗] (.+?)(?: \(\d+ ?m?s\))?$"),  # jest, vitest
)


@dataclass(frozen=True)
class RunReport:
    """One test run as its output tells it: the tally line, whether it failed, the failed names."""

    tally: str
    failed: bool
    names: tuple[str, ...]


def run_report(output: str) -> RunReport | None:
    """The test run ``output`` reports (its last tally line), or None when no runner's tally is there."""
    tally: tuple[str, bool] | None = None
    names: dict[str, None] = {}
    for line in output.splitlines():
        stripped = line.rstrip()
        if len(stripped) > _LINE_MAX:  # no runner prints its tally or a name that long; some patterns are
            continue  # quadratic on a long line of " > " (Gradle's), and output lines are not cut
        for pattern in _TALLIES:
            match = pattern.match(stripped)
            if match:
                count = match.group("failed")
                failed = bool(count and count != "0") or stripped.startswith(("Failed!", "test result: FAILED"))
                tally = (" ".join(stripped.split()).strip("= "), failed)
                break
        for pattern in _FAILED_NAMES:
            match = pattern.match(stripped)
            if match and len(match.group(1)) <= _NAME_MAX:
                names.setdefault(match.group(1).strip(), None)
                break
    if tally is None:
        return None
    return RunReport(tally[0], tally[1] or bool(names), tuple(names))


def newest_failed_run(messages: Iterable[Message]) -> tuple[RunReport | None, bool]:
    """The newest failed test run among the command tools' results in ``messages``, and whether a run
    after it passed."""
    failed: RunReport | None = None
    passed_after = False
    for message in messages:
        if message.get("role") == "toolResult" and message.get("toolName") in COMMAND_TOOLS:
            run = run_report(text_of(message.get("content")))
            if run is not None and run.failed:
                failed, passed_after = run, False
            elif run is not None and failed is not None:
                passed_after = True
    return failed, passed_after


def add_failed_run(summary: str, run: RunReport | None, passed_after: bool = False) -> tuple[str, list[str]]:
    """``summary`` with the failed run on one line under Critical Context unless the summary holds both
    its tally and its first failed name; also what was added."""
    if run is None:
        return summary, []
    if run.tally in summary and all(name in summary for name in run.names[:1]):
        return summary, []
    names = list(run.names[:NAMES_SHOWN]) + ([f"{len(run.names) - NAMES_SHOWN} more"]
                                              if len(run.names) > NAMES_SHOWN else [])
    added: Sequence[str] = [*names, f"({run.tally}{AFTER_PASSED if passed_after else ''})"]
    return add_line(summary, TEST_RUN_PREFIX, added), list(added)


__all__ = ["RunReport", "add_failed_run", "newest_failed_run", "run_report"]
