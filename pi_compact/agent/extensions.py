"""Python extensions hooking into compaction and tree moves (pi's session_before_compact / session_compact /
session_before_tree; the README's "Extensions" shows what each handler receives and may answer).

A project's extension loads only with the content the user trusted (``load_extensions``' ``expected``).
Handlers run in load order (global, project, ``--extension``); the last non-None answer wins and a cancel
stops at once, as in pi. A handler that raises is reported and skipped, so the default behaviour goes on.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypeVar

from pi_compact.agent.hooks import BeforeCompactEvent, BeforeTreeEvent, HookDecision, TreeDecision
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.project_files import content_hash, read_file
from pi_compact.session.entries import Entry

Report = Callable[[str], None]


@dataclass
class Extension:
    """One loaded extension file."""

    path: Path
    module: ModuleType


def discover(agent_dir: Path, cwd: Path, explicit: Iterable[Path] = ()) -> list[Path]:
    """Extension files in load order: global, project, then the ones named on the command line."""
    found: list[Path] = []
    for folder in (agent_dir / "extensions", cwd / ".pi" / "extensions"):
        if folder.is_dir():
            found.extend(sorted(p for p in folder.glob("*.py") if p.is_file()))
    found.extend(Path(p) for p in explicit)
    return found


def load_extensions(
    paths: Iterable[Path], report: Report, expected: Mapping[Path, str] | None = None
) -> list[Extension]:
    """Import each file; a file that fails to import is reported and left out.

    A path in ``expected`` loads only when its content has that SHA-256 (what the user trusted); the bytes
    checked are the bytes run, read once, so the file cannot change between the check and the import.
    """
    loaded: list[Extension] = []
    for index, path in enumerate(paths):
        outcome = read_file(path)
        if outcome.data is None:
            report(f"Extension {path} is skipped: {outcome.reason or 'it does not exist'}.")
            continue
        if expected is not None and path in expected and content_hash(outcome.data) != expected[path]:
            report(f"Extension {path} changed since you trusted this project; it is skipped. Start again to be "
                   "asked about the new content.")
            continue
        try:
            spec = importlib.util.spec_from_file_location(f"pi_compact_extension_{index}_{path.stem}", path)
            if spec is None:
                raise ImportError("not a Python file")
            module = importlib.util.module_from_spec(spec)
            exec(compile(outcome.data, str(path), "exec"), module.__dict__)  # noqa: S102 - the user's trusted code
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported, never fatal
            report(f"Extension {path} failed to load and is skipped: {type(exc).__name__}: {exc}")
            continue
        loaded.append(Extension(path, module))
    return loaded


def _decision(answer: Any, event: BeforeCompactEvent) -> HookDecision | None:
    if answer is None or isinstance(answer, HookDecision):
        return answer
    if not isinstance(answer, Mapping):
        raise TypeError(f"expected None, a dict or HookDecision, got {type(answer).__name__}")
    if answer.get("cancel"):
        return HookDecision(cancel=True)
    compaction = answer.get("compaction")
    if compaction is None:
        return None
    if isinstance(compaction, CompactionResult):
        return HookDecision(result=compaction)
    summary = compaction.get("summary")
    if not isinstance(summary, str) or not summary:
        raise ValueError("compaction.summary must be a non-empty string")
    details = compaction.get("details")
    return HookDecision(result=CompactionResult(
        summary=summary,
        first_kept_entry_id=str(compaction.get("firstKeptEntryId") or event.plan.first_kept_entry_id),
        tokens_before=int(compaction.get("tokensBefore") or event.plan.tokens_before),
        details=dict(details) if isinstance(details, Mapping) else {},
        source="extension",
    ))


def _tree_decision(answer: Any) -> TreeDecision | None:
    if answer is None or isinstance(answer, TreeDecision):
        return answer
    if not isinstance(answer, Mapping):
        raise TypeError(f"expected None, a dict or TreeDecision, got {type(answer).__name__}")
    if answer.get("cancel"):
        return TreeDecision(cancel=True)
    summary = answer.get("summary")
    text: str | None = None
    details: dict[str, Any] | None = None
    if isinstance(summary, Mapping):
        text = summary.get("summary") if isinstance(summary.get("summary"), str) else None
        details = dict(summary["details"]) if isinstance(summary.get("details"), Mapping) else None
    instructions = answer.get("customInstructions")
    replace = answer.get("replaceInstructions")
    return TreeDecision(
        summary=text or None, details=details,
        instructions=instructions if isinstance(instructions, str) else None,
        replace_instructions=replace if isinstance(replace, bool) else None,
    )


class _Decision(Protocol):
    @property
    def cancel(self) -> bool: ...


D = TypeVar("D", bound=_Decision)


def ask_extensions(
    extensions: Iterable[Extension], hook: str, ask: Callable[[Callable[..., Any]], D | None], report: Report,
    on_error: str,
) -> D | None:
    """Ask each extension that defines ``hook``, in load order: the last decision wins and a cancel
    ends the round at once; an extension that raises is reported (``on_error`` says what happens
    instead) and skipped, so a broken extension never breaks the work it hooks into."""
    decision: D | None = None
    for extension in extensions:
        handler = getattr(extension.module, hook, None)
        if handler is None:
            continue
        try:
            answer = ask(handler)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            report(f"Extension {extension.path} raised in {hook} ({type(exc).__name__}: {exc}); {on_error}.")
            continue
        if answer is not None:
            decision = answer
            if answer.cancel:
                return answer
    return decision


@dataclass
class ExtensionHooks:
    """CompactionHooks and TreeHooks backed by loaded extension modules."""

    extensions: list[Extension]
    report: Report
    calls: list[str] = field(default_factory=list)

    def before_compact(self, event: BeforeCompactEvent) -> HookDecision | None:
        return ask_extensions(self.extensions, "session_before_compact",
                              lambda handler: _decision(handler(event), event), self.report, "using default compaction")

    def before_tree(self, event: BeforeTreeEvent) -> TreeDecision | None:
        return ask_extensions(self.extensions, "session_before_tree", lambda handler: _tree_decision(handler(event)),
                              self.report, "moving as asked")

    def after_compact(self, entry: Entry, from_extension: bool) -> None:
        for extension in self.extensions:
            handler = getattr(extension.module, "session_compact", None)
            if handler is None:
                continue
            try:
                handler({"compactionEntry": entry, "fromExtension": from_extension})
            except Exception as exc:  # noqa: BLE001
                self.report(f"Extension {extension.path} raised in session_compact: {type(exc).__name__}: {exc}")
