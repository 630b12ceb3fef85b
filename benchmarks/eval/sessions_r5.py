"""Three of the round-5 sessions (``phrased.py``): ``py-tokens``, ``go-renew``, ``ts-upgrade-de``.

Each function writes one session on a ``Script``: its turns, the facts planted in them with their
rules, and its probes. What each tests is in ``phrased.py``'s table.
"""

from __future__ import annotations

import re

from languages_first import GO_WIDE, PYTHON_WIDE, TYPESCRIPT_WIDE
from script import FUNCS, Script, decision_parts, some_tasks
from work import DEPENDENCY_UPGRADE, PERFORMANCE, SECURITY_FIX


# ---- py-tokens --------------------------------------------------------------------------------------------
def py_tokens(s: Script) -> None:
    rng, lang, work = s.rng, PYTHON_WIDE, SECURITY_FIX
    tasks = some_tasks(rng, work, 7)
    ticket, host = s.ticket(), s.host()
    name, words = rng.choice(lang.settings)
    v1 = s.value()
    v2 = s.value((v1,))
    topic, d, r, d_regex = decision_parts(work, rng.randrange(2))
    rules = rng.sample(range(4), 2)
    function = rng.choice(lang.function_names)
    path_a, path_b = f"{lang.source_dirs[0]}/verify.py", f"{lang.source_dirs[1]}/claims.py"
    command, shell_path = rng.choice(work.shell_changes)
    error, error_regex = rng.choice(lang.errors)(rng)
    pinned = f"2.{rng.randint(3, 9)}.{rng.randint(1, 9)}"
    step, step_regex = rng.choice(work.next_steps)
    setting_regex = rf"({re.escape(name)}|{words})[^\n]{{0,40}}\b{v2}\b"
    rule0, rule1 = s.rule(rules[0]), s.rule(rules[1])

    at = s.user(tasks[0], *s.worded("ticket", t=ticket), rule0[0])
    s.plant("ticket", "ticket id", ticket, rf"\b{ticket}\b", at, "user")
    s.plant("constraint_1", "user constraint", rule0[0], rule0[1], at, "user")
    s.read(FUNCS)
    at = s.edit(path_a, lang.define(function))
    s.plant("path_a", "modified file", path_a, re.escape(path_a), at, "tool")
    s.plant("function", "new function name", function, rf"\b{function}\b", at, "tool")
    s.tests()
    s.say(f"Done. The new `{function}` covers the case we found. Tests pass.")

    at = s.user(tasks[1], *s.worded("setting", name=name, v=str(v1)))
    s.read(FUNCS)
    s.edit("src/authgate/settings.py", f"{name} = {v1}\n")
    s.tests()
    s.say("Updated the setting. All green.")

    at = s.user(tasks[2], *s.worded("decision", topic=topic, d=d, r=r))
    s.plant("decision", "decision with reason", f"{d}, because {r}", d_regex, at, "user")
    s.read(FUNCS)
    at = s.edit(path_b, f"{lang.comment} {topic}: as agreed\n")
    s.plant("path_b", "modified file", path_b, re.escape(path_b), at, "tool")
    at, failing = s.tests(error)
    s.plant("error", "exact error message", error, error_regex, at, "tool")
    assert failing is not None
    s.plant(failing.id, failing.kind, failing.statement, failing.regex, at, "tool")
    s.say("Fixed it; the suite passes again.")

    at = s.user(tasks[3], rule1[0])
    s.plant("constraint_2", "user constraint", rule1[0], rule1[1], at, "user")
    s.read(FUNCS)
    s.bash(command, "(no output)", note="Quicker from the shell.")
    s.plant("shell_file", "file changed by shell", shell_path, re.escape(shell_path), s.call, "tool")
    at = s.bash("pip show pyjwt", f"Name: PyJWT\nVersion: {pinned}\nSummary: JSON Web Token implementation in Python\n"
           "Location: /work/project/.venv/lib/python3.11/site-packages\nRequires:\nRequired-by: authgate",
           note="Checking which PyJWT we run on.")
    s.plant("pinned", "value only in tool output", f"PyJWT {pinned}", rf"{re.escape(pinned)}", at, "tool")
    s.edit("requirements.txt", f"PyJWT=={pinned}\n", "Pinning it.")
    s.say("Pinned PyJWT in requirements.txt to the version that is installed.")

    at = s.user(tasks[4], *s.worded("correction", name=name, v1=str(v1), v2=str(v2)))
    s.plant("setting", "user correction", f"{name} = {v2} (was {v1})", setting_regex, at, "user")
    s.read(FUNCS)
    s.edit("src/authgate/settings.py", f"{name} = {v2}\n")
    s.tests()
    s.say("Changed. Tests pass.")

    at = s.user(tasks[5], *s.worded("host", h=host))
    s.plant("host", "user-named id", host, re.escape(host), at, "user")
    s.read(FUNCS)
    s.tests()
    s.say("Looks right against the instance too.")

    at = s.user(tasks[6], *s.worded("next_step", s=step))
    s.plant("next_step", "agreed next step", step, step_regex, at, "user")
    s.read(FUNCS)
    s.tests()
    s.say("Done with that. The suite passes locally.")

    s.ask("p_error", "What was the exact error message of the failing test run? Quote it.", ("error",))
    s.ask("p_decision", f"What did we decide about {topic}, and why?", ("decision",))
    s.ask("p_setting", f"What value should {name} have now?", ("setting",), rf"\b{v2}\b")
    s.ask("p_pinned", "Which exact PyJWT version did we pin in requirements.txt?", ("pinned",))
    s.ask("p_next", "What did we agree to do next, after the README fix?", ("next_step",))


# ---- go-renew ---------------------------------------------------------------------------------------------
_GO_CAUSES = (
    ("the renew loop calls heap.Init on the whole expiry heap after every renew instead of heap.Fix on one entry",
     r"heap\.Init|(?=[\s\S]*rebuil)(?=[\s\S]*heap)"),
    ("every renew allocates a fresh 64 KiB scratch buffer, because the pool is bypassed for leases with a TTL "
     "override", r"(?=[\s\S]*(64 ?KiB|scratch buffer))(?=[\s\S]*(ttl override|bypass))"),
)
_GO_RENAMES = (("renewAll", "renewExpiring"), ("leaseTbl", "leaseIndex"), ("doRenew", "renewOne"))


def go_renew(s: Script) -> None:
    rng, lang, work = s.rng, GO_WIDE, PERFORMANCE
    tasks = some_tasks(rng, work, 7)
    host = s.host()
    rule0 = s.rule(rng.randrange(4))
    cause, cause_regex = rng.choice(_GO_CAUSES)
    first = rng.randrange(2)
    topic, d, r, d_regex = decision_parts(work, first)
    topic2, d2, r2, d2_regex = decision_parts(work, 1 - first)
    old, new = rng.choice(_GO_RENAMES)
    function = rng.choice(lang.function_names)
    path_a = f"{lang.source_dirs[0]}/renew.go"
    command, shell_path = rng.choice(work.shell_changes)
    error, error_regex = rng.choice(lang.errors)(rng)
    step, step_regex = rng.choice(work.next_steps)

    at = s.user(tasks[0], rule0[0])
    s.plant("constraint_1", "user constraint", rule0[0], rule0[1], at, "user")
    s.read(FUNCS)
    s.bash("go test -run '^$' -bench BenchmarkRenew -cpuprofile cpu.out ./internal/lease && go tool pprof -top cpu.out",
           "BenchmarkRenew-2   \t   1842\t   612840 ns/op\t  65611 B/op\t      3 allocs/op\n"
           "      flat  flat%   sum%        cum   cum%\n     2.41s 38.2% 38.2%      2.41s 38.2%  runtime.memmove\n"
           "     1.12s 17.8% 56.0%      3.62s 57.4%  lease.(*Table).Renew\n"
           "     0.88s 14.0% 70.0%      0.88s 14.0%  runtime.mallocgc", note="Profiling the renew path.")
    at = s.say(s.worded("root_cause", c=cause)[0] + " That is where the time goes.")
    s.plant("root_cause", "root cause", cause, cause_regex, at, "assistant")

    proposal, agreement = s.worded("decision_assistant", topic=topic, d=d, r=r)
    s.user(tasks[1], f"What do you suggest for {topic}?")
    s.read(FUNCS)
    at = s.say(proposal)
    s.plant("decision", "decision with reason", f"{d}, because {r}", d_regex, at, "assistant")

    s.user(agreement, tasks[2])
    s.read(FUNCS)
    at = s.edit(path_a, lang.define(function))
    s.plant("path_a", "modified file", path_a, re.escape(path_a), at, "tool")
    s.plant("function", "new function name", function, rf"\b{function}\b", at, "tool")
    at, failing = s.tests(error)
    s.plant("error", "exact error message", error, error_regex, at, "tool")
    assert failing is not None
    s.plant(failing.id, failing.kind, failing.statement, failing.regex, at, "tool")
    s.say("Fixed; everything passes now.")

    at = s.user(tasks[3], *s.worded("host", h=host))
    s.plant("host", "user-named id", host, re.escape(host), at, "user")
    s.read(FUNCS)
    s.bash(f"gofmt -r '{old} -> {new}' -w internal/lease", "(no output)", note="Tidying the names while here.")
    s.say(s.worded("rename", a=old, b=new)[0] + " Tests pass.")
    s.plant("rename", "rename", f"{old} -> {new}", rf"\b{new}\b", s.call, "assistant")

    late_decision, late_reason = s.worded("decision_late", topic=topic2, d=d2, r=r2)
    s.user(tasks[4], late_decision)
    s.read(FUNCS)
    s.bash(command, "(no output)", note="From the shell.")
    s.plant("shell_file", "file changed by shell", shell_path, re.escape(shell_path), s.call, "tool")
    s.tests()
    s.say("Done; all green.")

    proposal, agreement = s.worded("next_step_assistant", s=step)
    at = s.user(late_reason, tasks[5])
    s.plant("decision_late", "decision with reason", f"{d2}, because {r2}", d2_regex, at, "user")
    s.read(FUNCS)
    s.tests()
    at = s.say(f"Done. {proposal}")
    s.plant("next_step", "agreed next step", step, step_regex, at, "assistant")
    s.user(agreement, tasks[6])
    s.read(FUNCS)
    s.tests()
    s.say("Finished; the benchmark is steady.")

    s.ask("p_cause", "What root cause did we find for the slow renews?", ("root_cause",))
    s.ask("p_decision", f"What did we decide about {topic}, and why?", ("decision",))
    s.ask("p_rename", f"What is {old} called now?", ("rename",))
    s.ask("p_late", f"What did we decide about {topic2}, and why?", ("decision_late",))
    s.ask("p_error", "What was the exact error message of the failing test run? Quote it.", ("error",))


# ---- ts-upgrade-de ----------------------------------------------------------------------------------------
_DE_TASKS = ("Aktualisiere die Validierungsbibliothek im Webhook-Dispatcher.",
             "Behebe die Typfehler, die das Upgrade im Rechnungs-Renderer verursacht hat.",
             "Prüf das Changelog auf Breaking Changes beim Plan-Resolver.",
             "Bring den Usage-Meter auf Node 22 zum Laufen.",
             "Ersetze die veralteten Aufrufe in der Retry-Queue.",
             "Lass die Tests des Tenant-Settings-Store gegen die neue Version laufen.",
             "Schau dir den Signing-Helper nach dem Upgrade an.")
_DE_DECISIONS = (
    ("the upgrade path", "in zwei Schritten upgraden, erst auf die letzte 3.x und dann auf 4.0",
     "der Codemod nur 3.x-Quellen versteht", r"(?=[\s\S]*(two steps|zwei schritt|3\.x))(?=[\s\S]*codemod)"),
    ("the lockfile", "die Lockfile komplett neu erzeugen statt sie zu flicken",
     "die alte eine zurückgezogene (yanked) transitive Version pinnt", r"(?=[\s\S]*lock ?(file|datei))(?=[\s\S]*yank)"),
)
_DE_STEPS = (("den Renovate-Bot für Minor-Updates einschalten", r"renovate"),
             ("den Kompatibilitäts-Shim nach einem Release entfernen", r"shim"))


def ts_upgrade_de(s: Script) -> None:
    rng, lang, work = s.rng, TYPESCRIPT_WIDE, DEPENDENCY_UPGRADE
    tasks = list(_DE_TASKS)
    rng.shuffle(tasks)
    ticket, version = s.ticket(), f"v{rng.randint(1, 9)}.{rng.randint(10, 40)}.{rng.randint(1, 9)}"
    name, words = rng.choice(lang.settings)
    v1 = s.value()
    v2 = s.value((v1,))
    topic, d, r, d_regex = rng.choice(_DE_DECISIONS)
    rules = rng.sample(range(4), 2)
    function = rng.choice(lang.function_names)
    path_a, path_b = f"{lang.source_dirs[0]}/schema.ts", f"{lang.source_dirs[1]}/dispatch.ts"
    command, shell_path = rng.choice(work.shell_changes)
    error, error_regex = rng.choice(lang.errors)(rng)
    step, step_regex = rng.choice(_DE_STEPS)
    setting_regex = rf"({re.escape(name)}|{words})[^\n]{{0,40}}\b{v2}\b"
    rule0, rule1 = s.rule(rules[0]), s.rule(rules[1])

    at = s.user(tasks[0], *s.worded("ticket", t=ticket), rule0[0])
    s.plant("ticket", "ticket id", ticket, rf"\b{ticket}\b", at, "user")
    s.plant("constraint_1", "user constraint", rule0[0], rule0[1], at, "user")
    s.read(FUNCS)
    at = s.edit(path_a, lang.define(function))
    s.plant("path_a", "modified file", path_a, re.escape(path_a), at, "tool")
    s.plant("function", "new function name", function, rf"\b{function}\b", at, "tool")
    s.tests()
    s.say(f"Done. The new `{function}` handles the old payloads. Tests pass.")

    at = s.user(tasks[1], *s.worded("version", ver=version), *s.worded("setting", name=name, v=str(v1)))
    s.plant("version", "user-named id", version, rf"\bv?{re.escape(version[1:])}\b", at, "user")
    s.read(FUNCS)
    s.edit("src/config.ts", f"export const {name} = {v1};\n")
    s.tests()
    s.say("Version noted and the setting changed. All green.")

    at = s.user(tasks[2], *s.worded("decision", topic=topic, d=d, r=r))
    s.plant("decision", "decision with reason", f"{d}, weil {r}", d_regex, at, "user")
    s.read(FUNCS)
    s.bash(command, "(no output)", note="From the shell.")
    s.plant("shell_file", "file changed by shell", shell_path, re.escape(shell_path), s.call, "tool")
    at, failing = s.tests(error)
    s.plant("error", "exact error message", error, error_regex, at, "tool")
    assert failing is not None
    s.plant(failing.id, failing.kind, failing.statement, failing.regex, at, "tool")
    s.say("Fixed; the suite passes again.")

    at = s.user(tasks[3], rule1[0])
    s.plant("constraint_2", "user constraint", rule1[0], rule1[1], at, "user")
    s.read(FUNCS)
    at = s.edit(path_b, "// node 22: done\n")
    s.plant("path_b", "modified file", path_b, re.escape(path_b), at, "tool")
    s.tests()
    s.say("Done. Tests pass.")

    at = s.user(tasks[4], *s.worded("correction", name=name, v1=str(v1), v2=str(v2)))
    s.plant("setting", "user correction", f"{name} = {v2} (was {v1})", setting_regex, at, "user")
    s.read(FUNCS)
    s.edit("src/config.ts", f"export const {name} = {v2};\n")
    s.tests()
    s.say("Changed. All green.")

    at = s.user(tasks[5], *s.worded("next_step", s=step))
    s.plant("next_step", "agreed next step", step, step_regex, at, "user")
    s.read(FUNCS)
    s.tests()
    s.say("Done with that. The suite passes locally.")

    s.ask("p_decision", f"What did we decide about {topic}, and why?", ("decision",))
    s.ask("p_setting", f"What value should {name} have now?", ("setting",), rf"\b{v2}\b")
    s.ask("p_next", "What did we agree to do next, after the README fix?", ("next_step",))
    s.ask("p_error", "What was the exact error message of the failing test run? Quote it.", ("error",))
    s.ask("p_constraints", "Which two rules did I give you for this work?", ("constraint_1", "constraint_2"))
