"""The wide transcripts (issue 33): every kind of fact a summary must keep, in five languages and five
kinds of work.

Same shape as ``transcripts.py`` (turns of ask, read, edit, test, report; a README detour kept word for
word, the cut on its user message with ``keepRecentTokens`` 1500 and chars/4), and on top of its ten
facts four more kinds: a file changed through a shell command and never through the edit tool (only
the command names it), a version string and a hostname the user typed, and the failing test's name with
the counts its run printed. Every transcript has every kind (``KINDS``); two probes are always asked:
"which files did we change?" (edit and shell) and "which test failed, what did it print?". The rules
are written here, before any summary exists. The first four transcripts (``transcripts.SPECS``) stay as
they were: earlier runs were measured on them.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from dataclasses import asdict
from typing import Any

from flavours import CONSTRAINTS, ENV_VARS, MONTHS, TICKET_PREFIXES, _name_pairs
from languages import LANGUAGES, Language
from languages_first import FIRST_LANGUAGES
from transcripts import _DETOUR_LEN, KEEP_RECENT_TOKENS, START_MS, Fact, Probe, _Builder, _detour, _iso, estimate
from work import WORKS, Work

# name, language, kind of work, seed, turns, functions per file read (sizes the transcript)
SPECS: tuple[tuple[str, str, str, int, int, tuple[int, int]], ...] = (
    ("rust-ingest", "rust", "bug hunt", 41, 10, (5, 7)),
    ("kotlin-orders", "kotlin", "refactor", 43, 10, (6, 8)),
    ("csharp-gateway", "csharp", "config/deploy change", 47, 10, (6, 8)),
    ("sql-invoices", "sql", "data migration", 53, 10, (9, 11)),
    ("ruby-ledger", "ruby", "docs task", 59, 10, (11, 14)),
    ("python-authgate", "python", "security fix", 61, 10, (5, 7)),
    ("go-leasekeeper-perf", "go", "performance fix", 67, 10, (5, 6)),
    ("ts-billing-upgrade", "typescript", "dependency upgrade", 71, 10, (6, 8)),
)

# The kinds of fact issue 33 names, as ``Fact.kind`` spells them (the numeric setting is kept from the
# first transcripts; the ticket and the version/host are both "ids the user named").
KINDS = ("user constraint", "exact error message", "modified file", "decision with reason", "ticket id",
         "user-named id", "file changed by shell", "failing test with numbers", "new function name",
         "agreed next step")
_ROLES = ("db-replica", "ingest", "gw", "api", "worker", "batch")
_REGIONS = ("eu-west-1", "us-east-2", "ap-south-1", "eu-central-1")
_SLOTS = ("constraint_1", "constraint_2", "error", "path_a", "path_b", "decision", "setting", "ticket",
          "version", "host", "shell_file")


def _fill(rng: random.Random) -> list[tuple[str, str]]:
    month, env, version = rng.choice(MONTHS), rng.choice(ENV_VARS), rng.randint(2, 5)
    out = []
    for statement, regex in rng.sample(CONSTRAINTS, 2):
        for key, filled in {"{n}": str(version), "{env}": env, "{month}": month}.items():
            statement, regex = statement.replace(key, filled), regex.replace(key, filled)
        out.append((statement, regex))
    return out


def _plant(rng: random.Random, lang: Language, work: Work) -> tuple[dict[str, Fact], str]:
    """This transcript's fact values (the failing test's comes when its run is written), and the shell
    command that writes the ``shell_file`` fact's path."""
    constraints = _fill(rng)
    error_text, error_regex = rng.choice(lang.errors)(rng)
    modules = rng.sample(lang.modules, 2)
    paths = [f"{lang.source_dirs[i]}/{modules[i]}.{lang.ext}" for i in range(2)]
    _topic, decision, decision_regex = rng.choice(work.decisions)
    setting, words = rng.choice(lang.settings)
    value = rng.choice([v for v in range(37, 990) if v % 10 not in (0, 5)])
    function = rng.choice(lang.function_names)
    step, step_regex = rng.choice(work.next_steps)
    ticket = f"{rng.choice(TICKET_PREFIXES)}-{rng.randint(1000, 9899)}"
    release = f"{rng.randint(1, 9)}.{rng.randint(10, 40)}.{rng.randint(1, 9)}"
    host = f"{rng.choice(_ROLES)}-{rng.randint(2, 19):02d}.{rng.choice(_REGIONS)}.internal"
    command, shell_path = rng.choice(work.shell_changes)
    facts = [
        Fact("constraint_1", "user constraint", *constraints[0]),
        Fact("constraint_2", "user constraint", *constraints[1]),
        Fact("error", "exact error message", error_text, error_regex),
        Fact("path_a", "modified file", paths[0], re.escape(paths[0])),
        Fact("path_b", "modified file", paths[1], re.escape(paths[1])),
        Fact("decision", "decision with reason", decision, decision_regex),
        Fact("setting", "numeric setting", f"{setting} = {value}",
             rf"({re.escape(setting)}|{words})[^\n]{{0,40}}\b{value}\b"),
        Fact("function", "new function name", function, rf"\b{function}\b"),
        Fact("next_step", "agreed next step", step, step_regex),
        Fact("ticket", "ticket id", ticket, rf"\b{ticket}\b"),
        Fact("version", "user-named id", f"v{release}", rf"\bv?{re.escape(release)}\b"),
        Fact("host", "user-named id", host, re.escape(host)),
        Fact("shell_file", "file changed by shell", shell_path, re.escape(shell_path)),
    ]
    return {f.id: f for f in facts}, command


def _failing_fact(name: str, verb: str, noun: str, total: int) -> Fact:
    passed = total - 1
    regex = (rf"(?=[\s\S]*{verb}s?[ _]?{noun})(?=[\s\S]*(\b{total}\b ?(tests?|examples?)|(of|total:?|/|\.\.) *{total}\b"
             rf"|\b{passed}\b ?passed|passed:? *{passed}\b))")
    statement = f"{name} failed: {passed} passed, 1 failed ({total} in all)"
    return Fact("failing_test", "failing test with numbers", statement, regex)


def _probes(rng: random.Random, f: dict[str, Fact], work: Work, lang: Language) -> list[Probe]:
    topic = next(t for t, d, _ in work.decisions if d == f["decision"].statement)
    setting, value = f["setting"].statement.split(" = ")

    def all_of(*ids: str) -> str:
        return "".join(f"(?=[\\s\\S]*(?:{f[i].regex}))" for i in ids)

    always = [
        Probe("p_files", "Which files did we change, including any changed by shell commands? Give full paths.",
              ("path_a", "path_b", "shell_file"), all_of("path_a", "path_b", "shell_file"),
              f"{f['path_a'].statement}, {f['path_b'].statement} and {f['shell_file'].statement}"),
        Probe("p_test", "Which test failed, and what did the test run print?", ("failing_test", "error"),
              all_of("failing_test", "error"), f"{f['failing_test'].statement} {f['error'].statement.strip()}"),
    ]
    pool = [
        Probe("p_ticket", "Which ticket id is this work tracked under?", ("ticket",), f["ticket"].regex,
              f["ticket"].statement),
        Probe("p_version", "Which version did I say this ships in?", ("version",), f["version"].regex,
              f["version"].statement),
        Probe("p_host", "Which host did I name for checking this?", ("host",), f["host"].regex, f["host"].statement),
        Probe("p_setting", f"What value did we set {setting} to?", ("setting",), rf"\b{value}\b",
              f["setting"].statement),
        Probe("p_function", "What is the name of the new function that was added?", ("function",),
              f["function"].regex, f["function"].statement),
        Probe("p_next", "What did we agree to do next, after the README fix?", ("next_step",), f["next_step"].regex,
              f["next_step"].statement),
        Probe("p_decision", f"What did we decide about {topic}, and why?", ("decision",), f["decision"].regex,
              f["decision"].statement),
        Probe("p_constraints", "Which two rules did I give you for this work?", ("constraint_1", "constraint_2"),
              all_of("constraint_1", "constraint_2"), f"{f['constraint_1'].statement} {f['constraint_2'].statement}"),
    ]
    return always + sorted(rng.sample(pool, 5), key=pool.index)


def _user_turn(rng: random.Random, b: _Builder, f: dict[str, Fact], here: set[str], task: str,
               decision_by_user: bool, topic: str) -> str:
    asks = [task]
    if "ticket" in here:
        asks.append(rng.choice(("This is for ticket {t}.", "Track it under {t}, please."))
                    .format(t=f["ticket"].statement))
    if "version" in here:
        asks.append(rng.choice(("It has to ship in {v}.", "We release this as {v}.")).format(v=f["version"].statement))
    if "host" in here:
        asks.append(f"If you need a live instance, check against {f['host'].statement}.")
    asks += [f[c].statement for c in ("constraint_1", "constraint_2") if c in here]
    if "setting" in here:
        name, value = f["setting"].statement.split(" = ")
        asks.append(f"Also set {name} to {value}; the current default is too low for prod.")
    if "decision" in here and decision_by_user:
        asks.append(f"About {topic}: let's {f['decision'].statement}.")
    if "next_step" in here:
        asks.append(f"After this, the next step we agreed is to {f['next_step'].statement}. Don't start it yet.")
    return b.user(" ".join(asks))


def generate(name: str, language: str, work_name: str, seed: int, turns: int,
             functions: tuple[int, int]) -> tuple[str, dict[str, Any]]:
    """One wide transcript: (the JSONL text, the facts file's object)."""
    rng = random.Random(seed)
    lang, work = {**LANGUAGES, **FIRST_LANGUAGES}[language], WORKS[work_name]
    f, command = _plant(rng, lang, work)
    b = _Builder(rng)
    where = {fact: rng.randrange(turns - 1) for fact in _SLOTS}
    where["function"] = where[rng.choice(("path_a", "path_b"))]
    where["next_step"] = turns - 1
    planted: dict[str, str] = {}
    areas = rng.sample(work.areas, min(turns, len(work.areas))) * 2
    tasks = rng.sample(work.tasks, min(turns, len(work.tasks))) * 2
    topic = next(t for t, d, _ in work.decisions if d == f["decision"].statement)
    decision_by_user = rng.random() < 0.5
    for turn in range(turns):
        here = {fact for fact, t in where.items() if t == turn}
        area = areas[turn]
        user_id = _user_turn(rng, b, f, here, tasks[turn].format(area=area), decision_by_user, topic)
        for fact in here & {"ticket", "version", "host", "constraint_1", "constraint_2", "next_step", "setting"}:
            planted[fact] = user_id
        if "decision" in here and decision_by_user:
            planted["decision"] = user_id
        module = rng.choice(lang.modules)
        ids = b.assistant(f"Let me look at {area} first.",
                          (("read", {"path": f"{rng.choice(lang.source_dirs)}/{module}.{lang.ext}"}),))
        b.result(ids[0], "read", lang.code(rng, module, rng.randint(*functions)))
        for fact in ("path_a", "path_b"):
            if fact not in here:
                continue
            path = f[fact].statement
            adds_function = where["function"] == turn and "function" not in planted
            new = (lang.define(f["function"].statement) if adds_function
                   else f"{lang.comment} {area}: handle the empty case\n")
            ids = b.assistant(f"Editing {path}.", (("edit", {"path": path, "oldText": "    return result\n",
                                                              "newText": new + "    return result\n"}),))
            planted[fact] = b.result(ids[0], "edit", f"Successfully replaced text in {path}.")
            if adds_function:
                planted["function"] = planted[fact]
        if "shell_file" in here:
            ids = b.assistant("Quicker from the shell.", (("bash", {"command": command}),))
            planted["shell_file"] = b.result(ids[0], "bash", "(no output)")
        failing = "error" in here
        pairs = _name_pairs(rng, rng.randint(11, 16))
        names = [lang.test_name(module, verb, noun) for verb, noun in pairs]
        ids = b.assistant("Running the tests.", (("bash", {"command": lang.test_command}),))
        output = lang.report(rng, module, names, f["error"].statement if failing else None)
        entry = b.result(ids[0], "bash", output + ("\n\nCommand exited with code 1" if failing else ""), failing)
        if failing:
            f["failing_test"] = _failing_fact(names[-1], *pairs[-1], len(names))
            assert re.search(f["failing_test"].regex, output, re.IGNORECASE), (name, output)
            planted["error"] = planted["failing_test"] = entry
            ids = b.assistant("One test fails; the output above shows where. Fixing it.",
                              (("bash", {"command": lang.test_command}),))
            rerun = [lang.test_name(module, v, n) for v, n in _name_pairs(rng, rng.randint(6, 10))]
            b.result(ids[0], "bash", lang.report(rng, module, rerun, None))
        closing = [f"Done with {area}."]
        if "function" in here:
            closing.append(f"The new `{f['function'].statement}` covers the case we found.")
        if "setting" in here:
            closing.append(f"{f['setting'].statement.replace(' = ', ' is now ')}.")
        if "decision" in here and not decision_by_user:
            closing.append(f"I decided to {f['decision'].statement}.")
        closing.append(rng.choice(("Tests pass.", "All green now.", "The suite passes locally.")))
        b.assistant(" ".join(closing))
        if "decision" in here and not decision_by_user:
            planted["decision"] = b.entries[-1]["id"]
    _detour(rng, b)
    facts = {k: Fact(**{**asdict(v), "entry_id": planted[k]}) for k, v in f.items()}
    text, tail = _serialize(rng, b)
    for rule in facts.values():
        assert not re.search(rule.regex, tail, re.IGNORECASE), f"{name}: {rule.id} leaks into the kept tail"
    info = {
        "transcript": f"{name}.jsonl", "flavour": language, "work": work_name, "seed": seed,
        "tokens_chars4": sum(estimate(e["message"]) for e in b.entries),
        "cut_entry_id": b.entries[-_DETOUR_LEN - 1]["id"], "keep_recent_tokens": KEEP_RECENT_TOKENS,
        "facts": [asdict(fact) for fact in facts.values()],
        "probes": [asdict(p) for p in _probes(rng, facts, work, lang)],
    }
    return text, info


def _serialize(rng: random.Random, b: _Builder) -> tuple[str, str]:
    """(the session file's text, the kept tail as JSON for the leak check)."""
    header = {"type": "session", "version": 3, "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
              "timestamp": _iso(START_MS), "cwd": "/work/project"}
    text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in [header, *b.entries])
    return text, "\n".join(json.dumps(e) for e in b.entries[-_DETOUR_LEN - 1:])
