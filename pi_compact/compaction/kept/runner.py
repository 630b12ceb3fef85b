"""A test run: a command that starts a test runner, and the tally its output ends with (pure).

A run is recognised by two things together: the command line starts a test runner (``pytest``,
``python -m pytest``, ``cargo test``, ``go test``, ``npm test``, ``npx jest``, ``make test``... or a
script named for tests, ``./run_tests.sh``), and its output holds a runner's tally line (cargo, pytest,
go test / gotestsum, jest, vitest, rspec, dotnet test, Gradle, TAP, mocha). Output alone proves nothing:
``cat old-report.txt`` may print a file shaped like a failed run. ``run_report`` gives the last tally
word for word and the test names the runner marks as failed, as printed.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from pi_compact.compaction.kept.shell_lex import Unreadable, simple_commands

# Programs that are test runners whatever follows them.
_RUNNERS = frozenset({
    "pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "rspec", "prove", "ctest", "phpunit",
    "gotestsum", "karma", "playwright", "cypress", "nextest", "trial", "busted",
})
# Programs whose next word (after options) says a test run: ``cargo test``, ``npm run test:unit``.
_SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "cargo": ("test", "nextest"), "go": ("test",), "npm": ("test", "t", "run"), "yarn": ("test", "run"),
    "pnpm": ("test", "run"), "bun": ("test", "run"), "deno": ("test",), "dotnet": ("test",),
    "mvn": ("test", "verify"), "gradle": ("test", "check"), "gradlew": ("test", "check"), "make": ("test", "check"),
    "swift": ("test",), "mix": ("test",), "rake": ("test", "spec"), "zig": ("build", "test"), "sbt": ("test",),
}
# Words that only start another program: ``uv run pytest``, ``python -m pytest``, ``npx jest``.
_LAUNCHERS = frozenset({"sudo", "time", "nohup", "env", "command", "npx", "bunx", "exec", "run", "uv", "poetry",
                        "pipenv", "hatch", "pdm", "rye", "bundle", "timeout", "xvfb-run"})
_PYTHON = re.compile(r"^python(?:\d(?:\.\d+)?)?$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")

# A tally line, and whether it says something failed (group ``failed`` holds the failed count, or the
# word, where the runner prints one).
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
    re.compile(r"^(?:ok|FAIL)\s+\S+\s+[\d.]+s$"),  # go test's per-package line
)
_LINE_MAX = 2_000
_NAME_MAX = 160
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


def _starts_runner(words: list[str]) -> bool:
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _LAUNCHERS or words[0].startswith("-")
                     or (words[0].isdigit())):  # ``timeout 60 pytest``
        words = words[1:]
    if not words:
        return False
    name = posixpath.basename(words[0])
    if _PYTHON.match(name):
        module = words[words.index("-m") + 1] if "-m" in words[:-1] else ""
        return module in ("pytest", "unittest", "nose2", "tox", "nox") or "test" in posixpath.basename(
            next((w for w in words[1:] if not w.startswith("-")), ""))
    if name in _RUNNERS:
        return True
    rest = [w for w in words[1:] if not w.startswith("-")]
    if name in _SUBCOMMANDS and rest and rest[0] in _SUBCOMMANDS[name]:
        return rest[0] not in ("run", "build") or (len(rest) > 1 and "test" in rest[1])
    return "test" in name.lower() or "spec" in name.lower()  # ./run_tests.sh, bin/rspec-all


# Every runner's command line holds one of these words: most lines (ls, cat, git...) are ruled out unparsed.
_MAYBE = re.compile("|".join(sorted({"test", "spec", "check", "verify", *_RUNNERS}, key=len, reverse=True)),
                    re.IGNORECASE)


def is_test_command(command: str) -> bool:
    """Does ``command`` start a test runner (in any of its simple commands)?"""
    if not _MAYBE.search(command):
        return False
    try:
        commands = [list(simple.words) for simple in simple_commands(command)]
    except Unreadable:
        commands = [line.split() for line in re.split(r"&&|\|\||;|\n", command)]
    return any(_starts_runner(words) for words in commands if words)


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
                count = match.groupdict().get("failed")
                failed = bool(count and count != "0") or stripped.startswith(("Failed!", "test result: FAILED",
                                                                              "FAIL"))
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


__all__ = ["RunReport", "is_test_command", "run_report"]
