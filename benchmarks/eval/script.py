"""The building blocks of the round-5 transcripts (``phrased.py``): a session written step by step.

A ``Script`` wraps ``transcripts._Builder`` with the moves a coding session makes (the user asks, the
assistant reads a file, edits, runs a command or the tests, says something) and records the facts planted
on the way, with the entry each first appears in and where it came from (the user, the assistant, a tool,
a previous compaction's summary). Two random streams: ``rng`` draws the session (values, code, ids) and
``words`` the wordings (``phrasings``), so the trained and held-out twin of a transcript are the same session
in other words.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from flavours import TICKET_PREFIXES, _name_pairs
from languages import Language
from phrasings import Split, error_output, languages, rule, word
from transcripts import _DETOUR_LEN, START_MS, Probe, _Builder, _detour, _iso, estimate
from work import Work

FUNCS = (4, 6)  # functions per file read: sizes the sessions (~7-9k tokens, chars/4)
_ROLES = ("db-replica", "ingest", "gw", "api", "worker", "batch")
_REGIONS = ("eu-west-1", "us-east-2", "ap-south-1", "eu-central-1")


@dataclass(frozen=True)
class Fact:
    """One planted fact and its rule (``regex``, searched case-insensitively)."""

    id: str
    kind: str
    statement: str
    regex: str
    entry_id: str = ""
    source: str = "user"  # user | assistant | tool | previous summary
    since_previous: bool = False  # planted after a previous compaction (the update path's new facts)
    language: str = "en"  # the language of the message that holds it


@dataclass
class Script:
    """A session under construction, its planted facts and its probes."""

    rng: random.Random
    words: random.Random
    split: Split
    lang: Language
    user_language: str = "en"
    b: _Builder = field(init=False)
    facts: dict[str, Fact] = field(default_factory=dict)
    probes: list[Probe] = field(default_factory=list)
    after_compaction: bool = False
    call: str = ""  # the entry of the newest bash call

    def __post_init__(self) -> None:
        self.b = _Builder(self.rng)

    # ---- values --------------------------------------------------------------------------------------
    def value(self, avoid: tuple[int, ...] = ()) -> int:
        return self.rng.choice([v for v in range(37, 990) if v % 10 not in (0, 5) and v not in avoid])

    def ticket(self) -> str:
        return f"{self.rng.choice(TICKET_PREFIXES)}-{self.rng.randint(1000, 9899)}"

    def host(self) -> str:
        return f"{self.rng.choice(_ROLES)}-{self.rng.randint(2, 19):02d}.{self.rng.choice(_REGIONS)}.internal"

    # ---- facts ---------------------------------------------------------------------------------------
    def plant(self, fact_id: str, kind: str, statement: str, regex: str, entry_id: str, source: str,
              language: str | None = None) -> None:
        if fact_id not in self.facts:
            self.facts[fact_id] = Fact(fact_id, kind, statement, regex, entry_id, source, self.after_compaction,
                                       language or (self.user_language if source == "user" else "en"))

    def ask(self, probe_id: str, question: str, facts: tuple[str, ...], regex: str | None = None,
            answer: str | None = None) -> None:
        chosen = [self.facts[f] for f in facts]
        both = "".join(f"(?=[\\s\\S]*(?:{f.regex}))" for f in chosen)
        self.probes.append(Probe(probe_id, question, facts, regex or (chosen[0].regex if len(chosen) == 1 else both),
                                 answer or " ".join(f.statement for f in chosen)))

    def worded(self, kind: str, **values: str) -> list[str]:
        language = self.user_language if kind in _USER_WORDED and self.user_language in languages(kind) else "en"
        return word(self.words, kind, language, self.split, **values)

    def rule(self, index: int) -> tuple[str, str]:
        return rule(self.words, index, self.user_language, self.split)

    # ---- moves ---------------------------------------------------------------------------------------
    def user(self, *parts: str) -> str:
        return self.b.user(" ".join(p for p in parts if p))

    def say(self, text: str) -> str:
        self.b.assistant(text)
        return str(self.b.entries[-1]["id"])

    def read(self, functions: tuple[int, int], note: str = "Let me look at the code first.") -> None:
        module = self.rng.choice(self.lang.modules)
        ids = self.b.assistant(note, (("read", {"path": f"{self.rng.choice(self.lang.source_dirs)}/{module}."
                                                          f"{self.lang.ext}"}),))
        self.b.result(ids[0], "read", self.lang.code(self.rng, module, self.rng.randint(*functions)))

    def edit(self, path: str, new: str, note: str = "") -> str:
        """The edit call's entry (its arguments name the path and hold the new text)."""
        ids = self.b.assistant(note or f"Editing {path}.", (("edit", {"path": path, "oldText": "    return result\n",
                                                                         "newText": new + "    return result\n"}),))
        call = str(self.b.entries[-1]["id"])
        self.b.result(ids[0], "edit", f"Successfully replaced text in {path}.")
        return call

    def bash(self, command: str, output: str, failed: bool = False, note: str = "") -> str:
        """The result's entry; ``self.call`` is the call's (which names the command)."""
        ids = self.b.assistant(note, (("bash", {"command": command}),))
        self.call = str(self.b.entries[-1]["id"])
        return self.b.result(ids[0], "bash", output, failed)

    def tests(self, error: str | None = None) -> tuple[str, Fact | None]:
        """A test run (failing with ``error``, then fixed and run again); its entry and the failing test."""
        module = self.rng.choice(self.lang.modules)
        pairs = _name_pairs(self.rng, self.rng.randint(9, 13))
        names = [self.lang.test_name(module, verb, noun) for verb, noun in pairs]
        output = self.lang.report(self.rng, module, names, error)
        entry = self.bash(self.lang.test_command, output + ("\n\nCommand exited with code 1" if error else ""),
                          error is not None, "Running the tests.")
        if error is None:
            return entry, None
        verb, noun = pairs[-1]
        total, passed = len(names), len(names) - 1
        regex = (rf"(?=[\s\S]*{verb}s?[ _]?{noun})(?=[\s\S]*(\b{total}\b ?(tests?|examples?)|(of|total:?|/|\.\.) "
                 rf"*{total}\b|\b{passed}\b ?passed|passed:? *{passed}\b))")
        assert re.search(regex, output, re.IGNORECASE), output
        failing = Fact("failing_test", "failing test with numbers",
                       f"{names[-1]} failed: {passed} passed, 1 failed ({total} in all)", regex)
        again = [self.lang.test_name(module, v, n) for v, n in _name_pairs(self.rng, self.rng.randint(5, 8))]
        self.bash(self.lang.test_command, self.lang.report(self.rng, module, again, None), False,
                  "One test fails; the output above shows where. Fixing it.")
        return entry, failing

    def failed_command(self, command: str, error: str) -> str:
        return self.bash(command, error_output(self.words, self.split, command, error, self.rng.randint(1, 3)), True,
                         "Applying it.")

    # ---- a previous compaction (the update path) -----------------------------------------------------
    def compaction(self, summary: str, first_kept: str, read: list[str], modified: list[str]) -> str:
        """Append a compaction entry (as pi writes one) whose summary is ``summary``; later facts are new."""
        self.b.clock += self.rng.randint(900, 40_000)
        entry_id = f"{self.rng.getrandbits(32):08x}"
        tokens = 1200 + sum(estimate(e["message"]) for e in self.b.entries if e["type"] == "message")
        file_lists = "".join(f"\n\n<{tag}>\n" + "\n".join(files) + f"\n</{tag}>"
                             for tag, files in (("read-files", read), ("modified-files", modified)) if files)
        self.b.entries.append({"type": "compaction", "id": entry_id, "parentId": self.b.entries[-1]["id"],
                               "timestamp": _iso(self.b.clock), "summary": summary + file_lists,
                               "firstKeptEntryId": first_kept, "tokensBefore": tokens,
                               "details": {"readFiles": read, "modifiedFiles": modified}})
        self.after_compaction = True
        self.b.context_start = [e["id"] for e in self.b.entries].index(first_kept)
        return entry_id

    # ---- the end -------------------------------------------------------------------------------------
    def finish(self, name: str, header_id: str, meta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The kept README detour, the checks, and (the session file's text, the facts file's object)."""
        _detour(self.rng, self.b)
        entries = self.b.entries
        cut_id = entries[-_DETOUR_LEN - 1]["id"]
        tail = "\n".join(_text(e) for e in entries[-_DETOUR_LEN - 1:])
        order = [e["id"] for e in entries]
        for fact in self.facts.values():
            assert re.search(fact.regex, fact.statement, re.IGNORECASE), (name, fact.id)
            assert not re.search(fact.regex, tail, re.IGNORECASE), f"{name}: {fact.id} leaks into the kept tail"
            planted = order.index(fact.entry_id)
            if fact.source == "previous summary":  # told before, in messages the summary replaced
                assert re.search(fact.regex, entries[planted]["summary"], re.IGNORECASE), (name, fact.id)
                continue
            assert re.search(fact.regex, _text(entries[planted]), re.IGNORECASE) or \
                fact.kind == "decision with reason", (name, fact.id)  # a late reason completes it later
            for earlier in entries[:planted]:  # the fact appears first where it is recorded
                assert not re.search(fact.regex, _text(earlier), re.IGNORECASE), \
                    (name, fact.id, earlier["id"])
        header = {"type": "session", "version": 3, "id": header_id, "timestamp": _iso(START_MS),
                  "cwd": "/work/project"}
        text = "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in [header, *entries])
        info = {"transcript": f"{name}.jsonl", **meta, "split": self.split, "user_language": self.user_language,
                "tokens_chars4": sum(estimate(e["message"]) for e in entries if e["type"] == "message"),
                "cut_entry_id": cut_id, "keep_recent_tokens": 1500,
                "facts": [asdict(f) for f in self.facts.values()], "probes": [asdict(p) for p in self.probes]}
        return text, info


# Kinds a user states (worded in the user's language); the rest are the assistant's words (English).
def _text(entry: dict[str, Any]) -> str:
    """What an entry says: its message's texts and tool-call arguments, or a compaction's summary."""
    if entry["type"] == "compaction":
        return str(entry["summary"])
    content = entry["message"]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(block.get("text", "")) if block["type"] == "text" else
                     "\n".join(str(v) for v in block.get("arguments", {}).values()) for block in content)


# A proposal's agreement is the user's: those kinds are drawn in the user's language where it has them.
_USER_WORDED = {"decision", "decision_late", "setting", "correction", "next_step", "ticket", "version", "host",
                "decision_assistant", "next_step_assistant"}


# A decision's rule here needs a word of its REASON that the decision's own words lack (``work.py``'s rules
# can match the decision alone, and a reason given two turns later must be what makes it count).
_NEEDS_REASON = {
    "verify tokens": (r"allow[- ]?list", r"(caller|pick)[^\n]{0,40}none|none[^\n]{0,30}(alg|caller)"),
    "redact in the log formatter": (r"formatter", r"missed|twice"),
    "use a sync.Pool": (r"sync\.?pool", r"own lock|hot ?spot"),
    "keep the map lookup": (r"map lookup|binary search|sorted slice", r"\b512\b|64 shards"),
    "deduplicate by offset": (r"offset", r"share|same payload|two different|collid"),
    "use saturating subtraction": (r"saturat", r"panic|drops? the batch|harmless"),
    "backfill in batches": (r"primary[- ]key|key[- ]range", r"\block|minutes"),
    "keep the old table read-only": (r"read[- ]only", r"finance|export"),
}


def decision_parts(work: Work, index: int) -> tuple[str, str, str, str]:
    """(topic, decision, reason, regex needing both) of one of ``work``'s decisions."""
    topic, text, _ = work.decisions[index]
    d, r = text.split(", because ")
    decision, reason = next(v for k, v in _NEEDS_REASON.items() if d.startswith(k))
    return topic, d, r, f"(?=[\\s\\S]*({decision}))(?=[\\s\\S]*({reason}))"


def some_tasks(rng: random.Random, work: Work, n: int) -> list[str]:
    """``n`` of ``work``'s tasks, each on one of its areas."""
    areas = rng.sample(work.areas, min(n, len(work.areas))) * 2
    return [t.format(area=a) for t, a in zip(rng.sample(work.tasks, min(n, len(work.tasks))) * 2, areas,
                                             strict=False)][:n]
