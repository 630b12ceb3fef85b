"""Edit churn: a model changing one file again and again without a passing test, or changing a test
when the user asked for a fix to the code (pure).

The loop limits (``agent.loop``) catch a model that repeats itself; a model that edits ``test_calc.py``
eleven times, one number each time, repeats nothing and ran for ten minutes. ``EditChurn`` watches one
prompt's calls and results: more than ``EDIT_RUN_LIMIT`` edits of one file with no successful test run
between them, or an edit of an existing test file when the prompt asked for a fix and did not ask
for the test to change, stops the loop before the call runs. What the user reads then is a question:
whether to go on, and how (a prompt that names the test, or says to go on, lets it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

# Six edits of one file may be one careful change made in steps; the seventh with no test passing since
# is a model guessing (the embedded model changed one expected value eleven times).
EDIT_RUN_LIMIT = 6
EDIT_TOOLS = ("edit", "write")
# A shell command that runs a test suite.
_TEST_COMMAND = re.compile(
    r"\b(?:pytest|py\.test|unittest|nose2|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest)\b"
    r"|\b(?:npm|pnpm|yarn|bun|deno|go|cargo|mix|dotnet|swift|make|gradle|mvn|bundle\s+exec\s+rake)\s+(?:run\s+)?test\b")
# A prompt asking for something broken to be fixed.
_ASKS_FIX = re.compile(r"\b(?:fix\w*|bugs?|broken|repair\w*|failing|fails?|make\b[^.?!]*\bpass)\b", re.IGNORECASE)
# A prompt that lets the tests change: it asks to write, change or correct a test, or says a test is wrong.
_LETS_TESTS_CHANGE = re.compile(
    r"\b(?:add|write|update|change|edit|adjust|correct|rewrite|extend|modify)\w*\s+(?:\w+\s+){0,2}(?:tests?|specs?)\b"
    r"|\b(?:tests?|specs?|expectations?|assertions?)\s+(?:\w+\s+){0,2}(?:is|are|was|were)\s+(?:\w+\s+)?wrong\b",
    re.IGNORECASE)


def is_test_path(path: str) -> bool:
    """A test file by the usual naming: ``test_*.py``, ``*_test.go``, ``*.test.ts``, ``*.spec.js`` or a
    file under ``tests/``, ``test/``, ``__tests__/`` or ``spec/``."""
    pure = PurePosixPath(path.replace("\\", "/"))
    name = pure.name.lower()
    if name.startswith("test_") or re.search(r"(?:_test|\.test|\.spec|_spec)\.\w+$", name):
        return True
    return any(part.lower() in ("tests", "test", "__tests__", "spec") for part in pure.parts[:-1])


def is_test_command(command: str) -> bool:
    return _TEST_COMMAND.search(command) is not None


@dataclass(frozen=True)
class ChurnStop:
    """Why the loop stopped: ``text`` asks the user, ``for_model`` tells the model; ``path`` is the file."""

    text: str
    for_model: str
    path: str


class EditChurn:
    """The edits of one prompt's tool loop (a new one per prompt)."""

    def __init__(self, prompt: str) -> None:
        self._guard_tests = bool(_ASKS_FIX.search(prompt)) and not _LETS_TESTS_CHANGE.search(prompt)
        self._named = prompt.lower()
        self._edits: dict[str, int] = {}
        self._commands: dict[str, str] = {}  # tool call id -> test command

    def check(self, calls: Sequence[Mapping[str, Any]]) -> ChurnStop | None:
        """Count the calls of one reply (before they run); a stop when one of them must not run."""
        for call in calls:
            name, args = str(call.get("name")), _arguments(call)
            if name == "bash" and is_test_command(str(args.get("command", ""))):
                self._commands[str(call.get("id", ""))] = str(args["command"])
            path = args.get("path")
            if name not in EDIT_TOOLS or not isinstance(path, str) or not path:
                continue
            key = path.lstrip("./") or path
            if (name == "edit" and self._guard_tests and is_test_path(key)
                    and PurePosixPath(key).name.lower() not in self._named):
                return ChurnStop(
                    f"Stopped before the model changed the test {path}: you asked for a fix, and changing a test "
                    "can make it pass without fixing anything. Is the test wrong? Say so (e.g. \"the test is wrong, "
                    "change it\") and it goes on; otherwise say what to look at in the code.",
                    f"the user asked for a fix to the code, not to the test {path}; this edit was not run. Fix "
                    "the code under test, or tell the user why you think the test itself is wrong and ask.", path)
            self._edits[key] = self._edits.get(key, 0) + 1
            if self._edits[key] > EDIT_RUN_LIMIT:
                count = self._edits[key] - 1
                self._edits[key] = 0  # a prompt that says to go on starts a new count anyway
                return ChurnStop(
                    f"Stopped: the model edited {path} {count} times with no passing test run between; the next "
                    "edit was not run. Should it go on? Say \"go on\", or what to do differently.",
                    f"{path} was edited {count} times in this turn with no successful test run between, so the "
                    "loop was stopped before this edit. Tell the user what you tried and what still fails.", path)
        return None

    def saw(self, result: Mapping[str, Any]) -> None:
        """A tool result: a test run that passed starts every count afresh."""
        if result.get("toolCallId") in self._commands and result.get("isError") is not True:
            self._edits.clear()


def _arguments(call: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = call.get("arguments")
    return raw if isinstance(raw, Mapping) else {}


__all__ = ["EDIT_RUN_LIMIT", "ChurnStop", "EditChurn", "is_test_command", "is_test_path"]
