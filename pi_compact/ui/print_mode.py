"""``-p PROMPT``: one prompt with tools and compaction, the answer (or every event as JSON) on stdout.

``PrintMode.emit`` is the event sink a session is built with; ``run`` then drives that built session
and returns the exit code. Notices, warnings and failures go to stderr in both output modes, without escape
sequences or control characters (as the REPL shows them: a server's words cannot set the clipboard or clear
the screen); so does the answer when stdout is a terminal (piped, it is written exactly as the model wrote it).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pi_compact.agent.compaction.reasons import fallback_text
from pi_compact.agent.events import AgentEnd, CompactionEnd, Notice, SessionEvent, event_to_json
from pi_compact.cancel import CancelToken
from pi_compact.jstext import dumps_json
from pi_compact.settings import Settings
from pi_compact.shown_text import clean
from pi_compact.signals import cancel_on_sigint

# Model replies a printed prompt may take when neither --max-turns nor maxTurns is set: a long task fits,
# a model going round without end (a cycle too long for the loop guard) stops at a bounded cost.
PRINT_MAX_TURNS = 50

if TYPE_CHECKING:
    from pi_compact.agent.approval import Decision
    from pi_compact.agent.session import AgentSession


def final_text(message: dict[str, Any] | None) -> str:
    """The text blocks of the final assistant message."""
    if not message:
        return ""
    return "\n".join(
        str(b.get("text", "")) for b in message.get("content") or () if isinstance(b, dict) and b.get("type") == "text"
    )


def _say(text: str, prefix: str = "pi-compact") -> None:
    sys.stderr.write(f"{prefix}: {clean(text)}\n")


def _answer(message: dict[str, Any]) -> None:
    text = final_text(message)
    sys.stdout.write((clean(text) if sys.stdout.isatty() else text) + "\n")


def warn_against_window(session: AgentSession, sources: Mapping[str, str] | None) -> None:
    """Resolve the model now and say, before any work, which compaction settings cannot fit its window
    (and what every request carries), as the session fits them."""
    for warning in session.window_plan(sources).warnings:
        _say(warning, "warning")


def refuse_unasked(tool_name: str, args: Mapping[str, Any], cancel: CancelToken | None) -> Decision:
    """Print mode's answer to an approval question: no (nobody can be asked); said on stderr."""
    _say(f"declined the {tool_name} call: the approval mode asks first, and -p cannot ask.")
    return "no"


def cancelled_text(end: CompactionEnd | None) -> str:
    """The line print mode ends with when the user cancelled after the model had replied."""
    if end is None:
        return "cancelled."
    from pi_compact.agent.compaction.reasons import words

    return words(end.reason).cancelled


class PrintMode:
    """The output of one printed run: build the session with ``emit``, then ``run`` it."""

    def __init__(self, *, as_json: bool) -> None:
        self.as_json = as_json
        self.failures: list[str] = []
        self.aborted: list[CompactionEnd] = []

    @staticmethod
    def settings_for(settings: Settings) -> Settings:
        """One prompt, then exit: a summary made ahead for the next one would be paid for and thrown away.
        Nobody watches to press Esc, so the tool loop stops after ``PRINT_MAX_TURNS`` replies unless
        ``--max-turns`` or ``maxTurns`` says otherwise."""
        return replace(settings, compaction=replace(settings.compaction, background=False),
                       max_turns=settings.max_turns or PRINT_MAX_TURNS)

    def emit(self, event: SessionEvent) -> None:
        if self.as_json:
            sys.stdout.write(dumps_json(event_to_json(event)) + "\n")
            sys.stdout.flush()
        elif isinstance(event, Notice):
            _say(event.text)
        elif isinstance(event, CompactionEnd) and event.error_message:
            _say(event.error_message)
        elif isinstance(event, CompactionEnd) and fallback_text(event.reason, event.result):
            _say(str(fallback_text(event.reason, event.result)))
        if isinstance(event, AgentEnd) and event.error_message:
            self.failures.append(event.error_message)
        if isinstance(event, CompactionEnd) and event.aborted:
            self.aborted.append(event)

    def run(
        self, session: AgentSession, prompt: str, *, approve: str = "none", sources: Mapping[str, str] | None = None
    ) -> int:
        """Send ``prompt`` to ``session`` (built with ``self.emit``); returns the exit code.

        ``approve`` is the approval mode; ``sources`` says where each setting came from, so a warning can
        name the file to fix.
        """
        if approve != "none":  # no terminal to ask: calls that need a yes are declined, and said so
            from pi_compact.agent.approval import ApprovalGate

            session.approval = ApprovalGate(approve, refuse_unasked)
        warn_against_window(session, sources)
        session.watch_edits = False  # nobody to answer the question: the turn cap (PRINT_MAX_TURNS) bounds it
        token = CancelToken()
        for warning in session.store.warnings:  # stderr in both modes: stdout is the answer or JSON events
            _say(warning, "warning")
        try:
            with cancel_on_sigint(token):
                final = session.prompt(prompt, token)
        except KeyboardInterrupt:
            token.cancel()
            sys.stderr.write("pi-compact: cancelled.\n")
            return 130
        if token.cancelled and (final or {}).get("stopReason") != "aborted":
            # Ctrl-C after the reply came (during a tool or a compaction): the run did not finish.
            if final is not None and final.get("stopReason") == "stop" and not self.as_json:
                _answer(final)  # complete, and saved in the session file
            _say(cancelled_text(self.aborted[-1] if self.aborted else None))
            return 130
        if session.loop_stop is not None:  # the loop limits stopped it: the task may be half done
            if self.as_json:  # text mode said it already, as the notice on stderr
                _say(session.loop_stop.text)
            return 1
        if final is None or final.get("stopReason") in ("error", "aborted"):
            reason = (final or {}).get("errorMessage") or (self.failures[0] if self.failures else
                                                           "the model gave no answer")
            _say(str(reason))
            return 130 if final is not None and final.get("stopReason") == "aborted" else 1
        if not self.as_json:
            _answer(final)
        return 0
