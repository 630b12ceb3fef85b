"""``recall``: the model searches the messages compaction took out of its context, or reads one back.

Contract:
- Reads the session as the store holds it (nothing is written, no file is opened). By default it
  searches the current branch behind the latest compaction's kept boundary, and the tool results the
  requests carry as stubs (``compaction.clearing``) (``scope`` "compacted");
  "branch" searches the whole current branch and "session" every branch of the file. Messages of
  other branches are never returned unless "session" is asked for, by query or by id.
- Output never exceeds ``max_tokens`` (``compaction.recallMaxTokens``, estimated with the session's
  estimator) and ends by saying what was left out and how to get it.
- A bad call (no query and no id, an unknown id, a bad regular expression), a regular expression that
  runs past the time limit and an empty result are error texts for the model, never exceptions; a
  cancelled call (Esc) stops within the limit.
``with_recall_hint`` adds the one sentence that tells the model, next to a compaction summary, that
the summarized messages can be recalled; the stored summary itself is untouched (pi reads it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error
from pi_compact.compaction.clearing import cleared_on_path
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.messages import PROVIDER_COMPACTION_KEY, Message, to_llm_message
from pi_compact.session.entries import Entry, message_of_entry
from pi_compact.session.history import (
    RECALL_TOOL,
    BranchWalker,
    Query,
    SearchResult,
    TextIndex,
    hidden_end,
    search,
    searchable_text,
)
from pi_compact.session.timed_regex import PatternTimeout, run_cancellable
from pi_compact.settings import CompactionSettings, TokenEstimator

DEFAULT_LIMIT = 5
MAX_LIMIT = 50
SCOPES = ("compacted", "branch", "session")
SEARCH_BUDGET_S = 0.8  # the most a search may take, in seconds (the 100 MB benchmark target is 1 s)
# The most any one regular-expression call may run, counted from the start of the search; past it the
# search ends with an error text. Under a second, so Esc during a runaway pattern answers within one.
REGEX_LIMIT_S = 0.9
RECALL_HINT = (
    "The original messages behind this summary are still in the session: the recall tool finds them "
    "by words or by entry id when you need an exact detail. Answer questions about this earlier work from "
    "the summary and what recall returns; do not edit files or rerun commands to answer them."
)
_SCOPE_WORDS = {
    "compacted": "the compacted part of this conversation",
    "branch": "this conversation",
    "session": "any branch of this session",
}


class HistorySource(Protocol):
    """What recall reads of a ``SessionStore``."""

    leaf_id: str | None

    # Properties: a resumed store reads its older entries on first use (session/lazy.py).
    @property
    def entries(self) -> list[Entry]: ...

    @property
    def by_id(self) -> dict[str, Entry]: ...


_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to find (any may match; messages with more of "
                  "them come first; ids, paths, numbers and \"quoted phrases\" match whole and must be there) "
                  "or a regular expression; case-insensitive."},
        "entry_id": {"type": "string", "description": "Return this message in full (ids come from recall "
                     "results)."},
        "limit": {"type": "integer", "description": f"Most matches to return (default {DEFAULT_LIMIT}, at most "
                  f"{MAX_LIMIT})."},
        "scope": {"type": "string", "enum": list(SCOPES), "description": "compacted (default): what compaction "
                  "summarized; branch: this whole conversation; session: every branch of the session."},
        "offset": {"type": "integer", "description": "With entry_id: start at this character of a long message "
                   "(the previous result says where to go on)."},
    },
    "required": [],
}


class RecallTool:
    """The ``recall`` tool over one session store (the store the agent appends to)."""

    name = RECALL_TOOL
    description = (
        "Find messages of this session that were compacted out of your context (you only see their "
        "summary). Search by words or a regular expression (query), or read one message in full by "
        "its entry_id. Results show each message's entry id, role, tool name and time."
    )
    parameters = _SCHEMA

    def __init__(self, store: HistorySource, max_tokens: int = 4000, estimator: TokenEstimator = "auto") -> None:
        self.store = store
        self.max_tokens = max_tokens
        self.estimator: TokenEstimator = estimator
        self.index = TextIndex()  # built on the first search, then extended as the session grows
        self.walker = BranchWalker()

    @classmethod
    def for_settings(cls, store: HistorySource, settings: CompactionSettings) -> RecallTool:
        """Capped by ``compaction.recallMaxTokens``, counted with ``compaction.tokenEstimator``."""
        return cls(store, settings.recall_max_tokens, settings.token_estimator)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        scope = args.get("scope") or "compacted"
        if scope not in SCOPES:
            return error(f"recall scope must be one of {', '.join(SCOPES)}, got {scope!r}.")
        query, entry_id = (args.get("query") or "").strip(), (args.get("entry_id") or "").strip()
        if not query and not entry_id:
            return error("recall needs a query (words or a regular expression) or an entry_id.")
        if entry_id:
            return self._read(entry_id, scope, max(0, int(args.get("offset") or 0)))
        limit = min(MAX_LIMIT, max(1, int(args.get("limit") or DEFAULT_LIMIT)))
        return self._search(query, scope, limit, lambda: ctx.cancelled)

    # ---- scope -------------------------------------------------------------------------------

    def _branch(self) -> list[Entry]:
        return self.walker.path(self.store.by_id, self.store.leaf_id)

    def _entries(self, scope: str) -> list[Entry]:
        if scope == "session":
            return list(self.store.entries)
        branch = self._branch()
        if scope != "compacted":
            return branch
        # What the model cannot see: the compacted part, and the tool results its requests carry as stubs.
        end, cleared = hidden_end(branch), cleared_on_path(branch)
        return branch[:end] + [e for e in branch[end:] if e.get("id") in cleared]

    # ---- by id -------------------------------------------------------------------------------

    def _read(self, entry_id: str, scope: str, offset: int) -> ToolOutput:
        entry = self.store.by_id.get(entry_id)
        if entry is None:
            return error(f"No entry {entry_id!r} in this session; use an id from a recall result.")
        if scope != "session" and all(e is not entry for e in self._branch()):
            return error(f"Entry {entry_id} is on another branch of this session, not in this conversation; "
                         'pass scope "session" to read it anyway.')
        message = message_of_entry(entry)
        if message is None:
            return error(f"Entry {entry_id} is a {entry.get('type')} entry and holds no message.")
        text = searchable_text(message)
        head = _heading(entry, message)
        if offset >= len(text) and text:
            return error(f"Entry {entry_id} has only {len(text):,} characters; offset {offset:,} is past its end.")
        room = self.max_tokens - self._tokens(head) - 60  # the closing note
        shown = _fit(text[offset:], room, self._tokens)
        end = offset + len(shown)
        body = f"{head}\n{shown}" if shown else f"{head}\n(no text)"
        if end < len(text) or offset:
            body += (f"\n[Characters {offset:,}–{end:,} of {len(text):,} shown (recall output is capped at "
                     f"{self.max_tokens:,} tokens)." + (f" Call recall with entry_id {entry_id} and offset {end} "
                                                        "for the rest.]" if end < len(text) else "]"))
        return ToolOutput(body, details={"entryId": entry_id, "offset": offset, "end": end, "length": len(text)})

    # ---- by query ----------------------------------------------------------------------------

    def _search(self, text: str, scope: str, limit: int, cancelled: Callable[[], bool] = lambda: False) -> ToolOutput:
        # A call the loop guard refused holds only why it was not run (naming the call's own words): found
        # first in issue 44's walk, it was never an answer.
        entries = [e for e in self._entries(scope) if not _refused_call(message_of_entry(e))]
        if scope == "compacted" and not entries:
            return error("Nothing in this conversation has been compacted yet, so all of it is in your context"
                         + self._where_live(text) + '; pass scope "branch" or "session" to search anyway.')
        started = time.monotonic()
        # The answer is due within about a second whatever the session's size: the first call builds
        # the index, and the scan gets what is left of the budget (never less than a fifth of it).
        # A regular expression gets the same deadline, call by call (plus time to place the excerpts):
        # one that backtracks without end is stopped, and Esc is never more than that away. Esc also
        # ends the scan itself at the next message, so a cancelled search stops working too.

        self.index.update(self.store.entries)  # here: a search left running after Esc only reads the index

        def run() -> tuple[Query, SearchResult]:
            query = Query.parse(text)  # in the worker: compiling is work Esc must be able to leave
            deadline = max(started + SEARCH_BUDGET_S, time.monotonic() + SEARCH_BUDGET_S / 5)
            until = max(deadline, started + REGEX_LIMIT_S)
            return query, search(entries, query, limit, self.index, until=until,
                                 out_of_time=lambda: time.monotonic() > deadline, cancelled=cancelled)

        try:
            answer = run_cancellable(run, cancelled)
        except ValueError as exc:
            return error(f"recall: {exc}.")
        except PatternTimeout:
            return error(f"recall: the regular expression {text!r} took too long and was stopped (the limit is "
                         f"about {REGEX_LIMIT_S:g} s); it probably backtracks without end (nested repeats "
                         "such as (a+)+). Search for plain words or a simpler pattern.")
        if answer is None or cancelled():
            return error("recall was cancelled.")
        query, result = answer
        partial = _partial_note(entries, result)
        live = self._in_context(query) if scope == "compacted" else []
        if not result.hits:
            if live:
                return error(f"No compacted message matches {text!r}{partial}, but it is in your current context "
                             f"({_entry_list(live)}): read it there.")
            return error(f"No message in {_SCOPE_WORDS[scope]} matches {text!r}{partial}. Try other words"
                         + (', or scope "branch"' if scope == "compacted" else "") + ".")
        output = self._report(text, scope, limit, result, partial)
        if not live:
            return output
        note = (f"[{text!r} is also in your current context ({_entry_list(live)}), which is newer than these "
                "compacted messages.]\n")
        return ToolOutput(note + output.text, details={**(output.details or {}), "inContext": live})

    def _where_live(self, text: str) -> str:
        """Where in the context ``text`` is, said so a model answers from it (issue 44's walk: told only that
        nothing was compacted, the embedded model recalled the codename it had just read, again and again)."""
        self.index.update(self.store.entries)
        try:
            live = self._in_context(Query.parse(text))
        except ValueError:
            return ""
        return f" ({text!r} is in {_entry_list(live)}: answer from it there)" if live else ""

    def _in_context(self, query: Query) -> list[str]:
        """Ids of the messages in the model's context (behind no compaction) that ``query`` matches, newest first."""
        branch = self._branch()
        cleared = cleared_on_path(branch)
        live = [e for e in branch[hidden_end(branch):] if e.get("id") not in cleared]
        # The user's newest message is usually the question that led to this call, not its answer.
        asked = next((e.get("id") for e in reversed(live) if (message_of_entry(e) or {}).get("role") == "user"), None)
        result = search([e for e in live if e.get("id") != asked], query, 3, self.index)
        return [hit.entry_id for hit in result.hits]

    def _report(self, text: str, scope: str, limit: int, result: SearchResult, partial: str = "") -> ToolOutput:
        more = "at least " if not result.complete else ""
        intro = (f"{more}{result.total} message{'' if result.total == 1 else 's'} in {_SCOPE_WORDS[scope]} "
                 f"match {text!r}{partial}; best first:")
        parts = [intro]
        shown: list[str] = []
        footer_room = 80
        used = self._tokens(intro)
        for hit in result.hits:
            block = f"\n{_heading(hit.entry, hit.message)}\n{hit.excerpt}"
            cost = self._tokens(block)
            if used + cost + footer_room > self.max_tokens:
                if not shown:  # even the first excerpt is too big for a small cap: cut it to fit
                    block = _fit(block, self.max_tokens - used - footer_room, self._tokens)
                    parts.append(block)
                    shown.append(hit.entry_id)
                break
            parts.append(block)
            shown.append(hit.entry_id)
            used += cost
        left_out = len(result.hits) - len(shown)
        notes = []
        if left_out:
            notes.append(f"{left_out} more match{'' if left_out == 1 else 'es'} not shown: recall output is "
                         f"capped at {self.max_tokens:,} tokens (compaction.recallMaxTokens)")
        beyond = result.total - len(result.hits)
        if beyond > 0 or (not result.complete and result.stopped_at is None):
            notes.append(f"{more}{beyond} more beyond limit {limit}")
        if notes:
            parts.append("\n[" + "; ".join(notes) + ". Narrow the query, or read one message with entry_id.]")
        # Said last: a small model does what the last sentence offers (issue 44's walks recalled the same
        # codename four times in a turn, each answer holding its line).
        parts.append(ANSWER_NOW)
        return ToolOutput("\n".join(parts), details={"entryIds": shown, "total": result.total,
                                                     "complete": result.complete})

    def _tokens(self, text: str) -> int:
        return estimate_text_tokens(text, self.estimator)


ANSWER_NOW = "\n[If these lines hold what was asked, answer from them now: the same recall gives the same lines.]"


def _refused_call(message: Message | None) -> bool:
    details = message.get("details") if message is not None and message.get("role") == "toolResult" else None
    return isinstance(details, Mapping) and details.get("loopStop") is True


def _entry_list(ids: Sequence[str]) -> str:
    return ("entry " if len(ids) == 1 else "entries ") + ", ".join(ids)


def _partial_note(entries: Sequence[Entry], result: SearchResult) -> str:
    """Empty for a full scan; else how far back a scan cut short by the time budget looked."""
    if result.stopped_at is None:
        return ""
    oldest = entries[min(result.stopped_at + 1, len(entries) - 1)]
    when = oldest.get("timestamp")
    since = f" since {when}" if isinstance(when, str) else ""
    return (f" among the newest {len(entries) - result.stopped_at - 1:,} of {len(entries):,} entries{since} "
            f"(the search stopped after {SEARCH_BUDGET_S:g} s; a query with a literal word searches further)")


def _heading(entry: Entry, message: Message) -> str:
    role = str(message.get("role", "?"))
    if role == "toolResult":
        role = f"toolResult of {message.get('toolName', '?')}"
    elif role == "custom":
        role = f"custom message ({message.get('customType', '?')})"
    return f"--- entry {entry.get('id')} · {role} · {entry.get('timestamp', '?')} ---"


def _fit(text: str, room: int, tokens: Any) -> str:
    """The longest prefix of ``text`` within ``room`` tokens (found by halving, then growing back)."""
    if room <= 0:
        return ""
    if tokens(text) <= room:
        return text
    low, high = 0, len(text)
    while low < high:  # binary search on the prefix length: estimates grow with the text
        middle = (low + high + 1) // 2
        if tokens(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def with_recall_hint(messages: Sequence[Message], recall: bool = True) -> list[Message]:
    """The agent's messages as the model receives them (pi's convertToLlm), with ``RECALL_HINT`` after
    the compaction summary when the recall tool is offered. A summary carrying a provider's compaction keeps
    it (``PROVIDER_COMPACTION_KEY``) on its user message, so the adapter of that model sends the block instead."""
    out: list[Message] = []
    for message in messages:
        converted = to_llm_message(message)
        if converted is None:
            continue
        if recall and message.get("role") == "compactionSummary":
            content = list(converted.get("content") or [])
            content.append({"type": "text", "text": "\n\n" + RECALL_HINT})
            converted = {**converted, "content": content}
        carried = message.get(PROVIDER_COMPACTION_KEY)
        if message.get("role") == "compactionSummary" and isinstance(carried, Mapping):
            if recall:  # the model that is sent the block reads the hint after it
                after = carried.get("after")
                carried = {**carried, "after": f"{after}\n\n{RECALL_HINT}" if isinstance(after, str) and after
                           else RECALL_HINT}
            converted = {**converted, PROVIDER_COMPACTION_KEY: carried}
        out.append(converted)
    return out


__all__ = ["RECALL_HINT", "RecallTool", "with_recall_hint"]
