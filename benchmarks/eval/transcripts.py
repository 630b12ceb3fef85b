"""Seeded generator of the planted-fact coding transcripts (pi session JSONL v3) and their scoring rules.

    python benchmarks/eval/transcripts.py            # rewrite benchmarks/eval/data/ (byte-identical)

This module writes issue 23's four transcripts (``SPECS``; kept as measured) and, through ``wide.py``,
issue 33's eight, which add the kinds of fact these four lack.

Each transcript is a session of turns (user asks; the assistant reads files, edits, runs the tests,
reports), 10 facts planted in the part that will be summarized, then a short detour turn at the end
(a README fix) that the compaction keeps word for word and that names none of the facts. With
``keepRecentTokens`` 1500 and chars/4 estimates, the cut lands on that detour's user message: the
generator sizes the detour so, and ``data/*.facts.json`` records the id it expects (``cut_entry_id``).
The rules (one regex per fact, one per probe) are written here, before any summary exists.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flavours import (
    CONSTRAINTS,
    DECISIONS,
    ENV_VARS,
    FLAVOURS,
    MONTHS,
    NEXT_STEPS,
    TICKET_PREFIXES,
    Flavour,
)

DATA = Path(__file__).resolve().parent / "data"
KEEP_RECENT_TOKENS = 1500
SYSTEM_PROMPT_TOKENS = 1200  # added to the usage the transcript's replies report
START_MS = 1_767_000_000_000
DECISION_TOPICS = ("the local store", "locking", "timestamps", "the cache", "retries")

# name, flavour, seed, turns, functions per file read (sizes the transcript)
SPECS: tuple[tuple[str, str, int, int, tuple[int, int]], ...] = (
    ("python-ratekeeper", "python", 11, 9, (6, 8)),
    ("go-leasekeeper", "go", 23, 10, (5, 6)),
    ("ts-billing", "typescript", 37, 9, (6, 8)),
    ("short-python", "python", 5, 2, (1, 1)),
)


@dataclass(frozen=True)
class Fact:
    id: str
    kind: str
    statement: str  # the value as planted
    regex: str  # searched case-insensitively in the summary (file lists removed)
    entry_id: str = ""  # where it was first planted


@dataclass(frozen=True)
class Probe:
    id: str
    question: str
    facts: tuple[str, ...]
    regex: str  # an answer that matches is "fully right"
    answer: str  # a right answer, for the scripted target


@dataclass
class _Builder:
    rng: random.Random
    entries: list[dict[str, Any]] = field(default_factory=list)
    clock: int = START_MS
    calls: int = 0
    usage: bool = True  # off for the kept detour, so nothing after the compaction looks near the threshold
    context_start: int = 0  # after a compaction entry: where the context the usage reports starts

    def _id(self) -> str:
        return f"{self.rng.getrandbits(32):08x}"

    def add(self, message: dict[str, Any]) -> str:
        self.clock += self.rng.randint(900, 40_000)
        message["timestamp"] = self.clock
        entry_id = self._id()
        parent = self.entries[-1]["id"] if self.entries else None
        stamp = _iso(self.clock)
        self.entries.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp,
                             "message": message})
        return entry_id

    def user(self, text: str) -> str:
        return self.add({"role": "user", "content": text})

    def assistant(self, text: str = "", calls: tuple[tuple[str, dict[str, Any]], ...] = ()) -> list[str]:
        ids = []
        for _ in calls:
            self.calls += 1
            ids.append(f"call_{self.calls:03d}_{self.rng.getrandbits(24):06x}")
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "toolCall", "id": cid, "name": name, "arguments": args}
                    for cid, (name, args) in zip(ids, calls, strict=True)]
        message = {"role": "assistant", "content": content, "api": "openai-completions", "provider": "eval",
                   "model": "fake-model", "usage": _usage(0, 0), "stopReason": "toolUse" if calls else "stop"}
        if self.usage:  # what a provider would have reported: the context so far, then this reply
            context = SYSTEM_PROMPT_TOKENS + sum(estimate(e["message"]) for e in self.entries[self.context_start:]
                                                 if "message" in e)
            message["usage"] = _usage(context, estimate(message))
        self.add(message)
        return ids

    def result(self, call_id: str, tool: str, text: str, error: bool = False) -> str:
        return self.add({"role": "toolResult", "toolCallId": call_id, "toolName": tool,
                         "content": [{"type": "text", "text": text}], "isError": error})


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {"input": input_tokens, "output": output_tokens, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": input_tokens + output_tokens, "cost": cost}


def _iso(ms: int) -> str:
    import datetime as dt

    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def estimate(message: dict[str, Any]) -> int:
    """chars/4 as pi counts one message (text, tool names and their JSON arguments), rounded up."""
    content = message["content"]
    if isinstance(content, str):
        chars = len(content)
    else:
        chars = 0
        for block in content:
            if block["type"] == "text":
                chars += len(block["text"])
            elif block["type"] == "toolCall":
                chars += len(block["name"]) + len(json.dumps(block["arguments"], separators=(",", ":")))
    return -(-chars // 4)


def _plant_facts(rng: random.Random, flavour: Flavour) -> dict[str, Fact]:
    """Pick this transcript's 10 fact values (positions come later)."""
    month, env, version = rng.choice(MONTHS), rng.choice(ENV_VARS), rng.randint(2, 5)
    constraints = []
    for statement, regex in rng.sample(CONSTRAINTS, 2):
        fill = {"{n}": str(version), "{env}": env, "{month}": month}
        for key, filled in fill.items():  # str.replace: the regexes hold braces of their own
            statement, regex = statement.replace(key, filled), regex.replace(key, filled)
        constraints.append((statement, regex))
    error_text, error_regex = rng.choice(flavour.errors)(rng)
    dirs = list(flavour.source_dirs)
    modules = rng.sample(("bucket", "quota", "refill", "store", "router", "lease", "config", "shard"), 2)
    paths = [f"{dirs[i]}/{modules[i]}.{flavour.ext}" for i in range(2)]
    decision, decision_regex = rng.choice(DECISIONS)
    setting, words = rng.choice(flavour.settings)
    value = rng.choice([v for v in range(37, 990) if v % 10 not in (0, 5)])
    function = rng.choice(flavour.function_names)
    step, step_regex = rng.choice(NEXT_STEPS)
    ticket = f"{rng.choice(TICKET_PREFIXES)}-{rng.randint(1000, 9899)}"
    setting_regex = rf"({re.escape(setting)}|{words})[^\n]{{0,40}}\b{value}\b"
    return {
        "constraint_1": Fact("constraint_1", "user constraint", *constraints[0]),
        "constraint_2": Fact("constraint_2", "user constraint", *constraints[1]),
        "error": Fact("error", "exact error message", error_text, error_regex),
        "path_a": Fact("path_a", "modified file", paths[0], re.escape(paths[0])),
        "path_b": Fact("path_b", "modified file", paths[1], re.escape(paths[1])),
        "decision": Fact("decision", "decision with reason", decision, decision_regex),
        "setting": Fact("setting", "numeric setting", f"{setting} = {value}", setting_regex),
        "function": Fact("function", "new function name", function, rf"\b{function}\b"),
        "next_step": Fact("next_step", "agreed next step", step, step_regex),
        "ticket": Fact("ticket", "ticket id", ticket, rf"\b{ticket}\b"),
    }


def _probes(rng: random.Random, facts: dict[str, Fact], flavour: Flavour) -> list[Probe]:
    f = facts
    topic = DECISION_TOPICS[[d for d, _ in DECISIONS].index(f["decision"].statement)]
    setting = f["setting"].statement.split(" = ")[0]

    def both(a: str, b: str) -> str:
        return f"(?=[\\s\\S]*(?:{f[a].regex}))(?=[\\s\\S]*(?:{f[b].regex}))"

    pool = [
        Probe("p_error", "What was the exact error message of the failing test run? Quote it.", ("error",),
              f["error"].regex, f["error"].statement.strip()),
        Probe("p_ticket", "Which ticket id is this work tracked under?", ("ticket",), f["ticket"].regex,
              f["ticket"].statement),
        Probe("p_setting", f"What value did we set {setting} to?", ("setting",),
              rf"\b{f['setting'].statement.split(' = ')[1]}\b", f["setting"].statement),
        Probe("p_function", "What is the name of the new helper function that was added?", ("function",),
              f["function"].regex, f["function"].statement),
        Probe("p_next", "What did we agree to do next, after the README fix?", ("next_step",),
              f["next_step"].regex, f["next_step"].statement),
        Probe("p_decision", f"What did we decide about {topic}, and why?", ("decision",),
              f["decision"].regex, f["decision"].statement),
        Probe("p_constraints", "Which two rules did I give you for this work?", ("constraint_1", "constraint_2"),
              both("constraint_1", "constraint_2"), f"{f['constraint_1'].statement} {f['constraint_2'].statement}"),
        Probe("p_paths", f"Which {flavour.name} source files did we modify (full paths)?", ("path_a", "path_b"),
              both("path_a", "path_b"), f"{f['path_a'].statement} and {f['path_b'].statement}"),
    ]
    return sorted(rng.sample(pool, 5), key=lambda p: pool.index(p))


def _fill_lines(rng: random.Random, n: int) -> str:
    """Neutral prose for the README detour: names none of the facts."""
    parts = ("The install steps assume a recent toolchain.", "Run the setup command from the project root.",
             "Examples live in the examples folder.", "Each example prints what it does before it runs.",
             "Questions go to the team chat.", "The changelog lists user-visible changes per release.",
             "Screenshots in the docs were taken on a light theme.", "Links to the design notes are below.")
    return "\n".join(f"- {rng.choice(parts)}" for _ in range(n))


def generate(
    name: str, flavour_name: str, seed: int, turns: int, functions: tuple[int, int]
) -> tuple[str, dict[str, Any]]:
    """One transcript: (the JSONL text, the facts file's object)."""
    rng = random.Random(seed)
    flavour = FLAVOURS[flavour_name]
    facts = _plant_facts(rng, flavour)
    b = _Builder(rng)
    # Facts the user states / the assistant writes / the tools show, spread over the turns by the seed.
    slots = ["constraint_1", "constraint_2", "error", "path_a", "path_b", "decision", "setting", "ticket"]
    where: dict[str, int] = {fact: rng.randrange(turns - 1) if turns > 1 else 0 for fact in slots}
    where["function"] = where[rng.choice(("path_a", "path_b"))]
    where["next_step"] = turns - 1
    planted: dict[str, str] = {}
    areas = rng.sample(flavour.areas, min(turns, len(flavour.areas))) * 2
    tasks = rng.sample(flavour.tasks, min(turns, len(flavour.tasks))) * 2
    setting_name, value = facts["setting"].statement.split(" = ")
    decision_by_user = rng.random() < 0.5
    for turn in range(turns):
        here = {fact for fact, t in where.items() if t == turn}
        area = areas[turn]
        asks = [tasks[turn].format(area=area)]
        if "ticket" in here:
            asks.append(rng.choice(("This is for ticket {t}.", "Track it under {t}, please.",
                                    "Ticket: {t}.")).format(t=facts["ticket"].statement))
        for c in ("constraint_1", "constraint_2"):
            if c in here:
                asks.append(facts[c].statement)
        if "setting" in here:
            asks.append(f"Also set {setting_name} to {value}; the current default is too low for prod.")
        if "decision" in here and decision_by_user:
            asks.append(f"About {DECISION_TOPICS[[d for d, _ in DECISIONS].index(facts['decision'].statement)]}: "
                        f"let's {facts['decision'].statement}.")
        if "next_step" in here:
            asks.append(f"After this, the next step we agreed is to {facts['next_step'].statement}. "
                        "Don't start it yet.")
        user_id = b.user(" ".join(asks))
        for fact in here & {"ticket", "constraint_1", "constraint_2", "next_step"}:
            planted.setdefault(fact, user_id)
        if "decision" in here and decision_by_user:
            planted["decision"] = user_id
        if "setting" in here:
            planted["setting"] = user_id
        # Read one or two files.
        module = rng.choice(("bucket", "quota", "refill", "store", "router", "lease", "config", "shard"))
        read_paths = [f"{rng.choice(flavour.source_dirs)}/{module}.{flavour.ext}"]
        ids = b.assistant(f"Let me look at {area} first.", (("read", {"path": read_paths[0]}),))
        b.result(ids[0], "read", flavour.code(rng, module, rng.randint(*functions)))
        # Edits where a fact asks for one.
        for fact in ("path_a", "path_b"):
            if fact not in here:
                continue
            path = facts[fact].statement
            new = f"# {area}: handle the empty case\n"
            if where["function"] == turn and fact == ("path_a" if where["path_a"] == turn else "path_b"):
                new = f"def {facts['function'].statement}(state):\n    ...\n" if flavour.name == "python" else \
                    f"func {facts['function'].statement}(s *Store) {{}}\n" if flavour.name == "go" else \
                    f"export function {facts['function'].statement}(state: State): void {{}}\n"
            ids = b.assistant(f"Editing {path}.", (("edit", {"path": path, "oldText": "    return result\n",
                                                              "newText": new + "    return result\n"}),))
            entry = b.result(ids[0], "edit", f"Successfully replaced text in {path}.")
            planted.setdefault(fact, entry)
            if "function" not in planted and where["function"] == turn and new.startswith(("def", "func", "export")):
                planted["function"] = entry
        # Run the tests; the error fact fails them once.
        failing = "error" in here
        ids = b.assistant("Running the tests.", (("bash", {"command": flavour.test_command}),))
        output = flavour.test_output(rng, module, rng.randint(6, 14) if functions[0] > 2 else rng.randint(3, 5),
                                     facts["error"].statement if failing else None)
        entry = b.result(ids[0], "bash", output + ("\n\nCommand exited with code 1" if failing else ""), failing)
        if failing:
            planted["error"] = entry
            ids = b.assistant("One test fails; the traceback above shows where. Fixing the guard.",
                              (("bash", {"command": flavour.test_command}),))
            b.result(ids[0], "bash", flavour.test_output(rng, module, rng.randint(5, 9), None))
        closing = [f"Done with {area}."]
        if "function" in here:
            closing.append(f"The new helper `{facts['function'].statement}` keeps the lock held while it works.")
        if "setting" in here:
            closing.append(f"{setting_name} is now {value}.")
        if "decision" in here and not decision_by_user:
            closing.append(f"I decided to {facts['decision'].statement}.")
        closing.append(rng.choice(("Tests pass.", "All green now.", "The suite passes locally.")))
        b.assistant(" ".join(closing))
        closing_id = b.entries[-1]["id"]
        if "decision" in here and not decision_by_user:
            planted["decision"] = closing_id
    _detour(rng, b)
    facts = {k: Fact(**{**asdict(v), "entry_id": planted[k]}) for k, v in facts.items()}
    cut_id = b.entries[-_DETOUR_LEN - 1]["id"]
    header = {"type": "session", "version": 3, "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
              "timestamp": _iso(START_MS), "cwd": "/work/project"}
    lines = [header, *b.entries]
    text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in lines)
    tail_text = "\n".join(json.dumps(e) for e in b.entries[-_DETOUR_LEN - 1 :])
    for rule in facts.values():
        assert not re.search(rule.regex, tail_text, re.IGNORECASE), f"{name}: {rule.id} leaks into the kept tail"
    info = {
        "transcript": f"{name}.jsonl", "flavour": flavour_name, "seed": seed,
        "tokens_chars4": sum(estimate(e["message"]) for e in b.entries),
        "cut_entry_id": cut_id, "keep_recent_tokens": KEEP_RECENT_TOKENS,
        "facts": [asdict(f) for f in facts.values()],
        "probes": [asdict(p) for p in _probes(rng, facts, flavour)],
    }
    return text, info


_DETOUR_LEN = 5  # entries after the detour's user message: read call, result, edit call, result, answer


def _detour(rng: random.Random, b: _Builder) -> None:
    """The kept tail: a README fix. Sized so that the chars/4 walk back from the end passes
    ``KEEP_RECENT_TOKENS`` exactly at its user message (everything after it is ~1,150 tokens)."""
    report = ("Before that, a user reported that the README is confusing. Their words:\n\n> "
              + " ".join(_fill_lines(rng, 40).replace("- ", "").splitlines())
              + "\n\nPlease fix the README wording only, nothing else.")
    b.usage = False
    b.user(report)
    readme = "# Project\n\n" + _fill_lines(rng, 10)
    ids = b.assistant("Reading the README.", (("read", {"path": "README.md"}),))
    result_at = len(b.entries)
    b.result(ids[0], "read", readme)
    ids = b.assistant("", (("edit", {"path": "README.md", "oldText": "Run the setup command",
                                     "newText": "Run the setup command once"}),))
    b.result(ids[0], "edit", "Successfully replaced text in README.md.")
    b.assistant("README fixed: the setup step now says to run it once. Shall I go on with the next step we agreed?")
    # Grow the README result until the part after the user message is ~1,150 tokens.
    def after() -> int:
        return sum(estimate(e["message"]) for e in b.entries[-_DETOUR_LEN:])

    while after() < 1150:
        b.entries[result_at]["message"]["content"][0]["text"] += "\n" + _fill_lines(rng, 1)
    user_tokens = estimate(b.entries[-_DETOUR_LEN - 1]["message"])
    assert after() < KEEP_RECENT_TOKENS <= after() + user_tokens, (after(), user_tokens)


def main() -> None:
    DATA.mkdir(exist_ok=True)
    for name, flavour, seed, turns, functions in SPECS:
        text, info = generate(name, flavour, seed, turns, functions)
        (DATA / f"{name}.jsonl").write_text(text, encoding="utf-8")
        (DATA / f"{name}.facts.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        print(f"{name}: {info['tokens_chars4']} tokens (chars/4), cut at {info['cut_entry_id']}")
    import wide  # here, not at the top: wide.py builds on this module

    for name, language, work, seed, turns, functions in wide.SPECS:
        text, info = wide.generate(name, language, work, seed, turns, functions)
        (DATA / f"{name}.jsonl").write_text(text, encoding="utf-8")
        (DATA / f"{name}.facts.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        print(f"{name} ({work}): {info['tokens_chars4']} tokens (chars/4), cut at {info['cut_entry_id']}")


if __name__ == "__main__":
    main()
