"""The two round-5 sessions that already hold a compaction (``phrased.py``): ``rust-update``, ``sql-update-es``.

Each starts with the turns an earlier compaction replaced, a short kept exchange, and the compaction entry
(its summary written here, as a good summarizer would have written it, in pi's sections). Four facts live
only in that summary (a rule, the ticket, a decision with its reason, a file); the new turns after it plant
the new facts the update path must carry (a decision with its reason, a new function, a setting the user
changes from the value the summary holds, the next step, a new error).
"""

from __future__ import annotations

import re

from languages import RUST, SQL
from script import FUNCS, Script, decision_parts, some_tasks
from work import BUG_HUNT, DATA_MIGRATION


def _previous(goal: str, rule: str, done: str, decision: str, step: str, ticket: str, setting: str) -> str:
    return (f"## Goal\n- {goal}\n\n## Constraints & Preferences\n- {rule}\n\n## Progress\n### Done\n- [x] {done}\n\n"
            f"### In Progress\n- [ ] (none)\n\n### Blocked\n- (none)\n\n## Key Decisions\n- {decision}\n\n"
            f"## Next Steps\n1. {step}\n\n## Critical Context\n- Ticket {ticket}.\n- {setting}")


def _remember(s: Script, entry: str, rule: tuple[str, str], ticket: str, decision: tuple[str, str, str, str],
              path: str) -> None:
    """The facts only the previous summary holds now."""
    topic, d, r, regex = decision
    s.after_compaction = False
    s.plant("constraint_prev", "user constraint", rule[0], rule[1], entry, "previous summary")
    s.plant("ticket_prev", "ticket id", ticket, rf"\b{ticket}\b", entry, "previous summary")
    s.plant("decision_prev", "decision with reason", f"{d}, because {r}", regex, entry, "previous summary")
    s.plant("path_prev", "modified file", path, re.escape(path), entry, "previous summary")
    s.after_compaction = True


# ---- rust-update ------------------------------------------------------------------------------------------
def rust_update(s: Script) -> None:
    rng, lang, work = s.rng, RUST, BUG_HUNT
    tasks = some_tasks(rng, work, 7)
    ticket = s.ticket()
    name, words = rng.choice(lang.settings)
    v1 = s.value()
    v2 = s.value((v1,))
    first = rng.randrange(2)
    prev_decision, new_decision = decision_parts(work, first), decision_parts(work, 1 - first)
    rule = s.rule(rng.randrange(4))
    prev_path, new_path = f"{lang.source_dirs[0]}/late_events.rs", f"{lang.source_dirs[1]}/flush.rs"
    function = rng.choice(lang.function_names)
    command, shell_path = rng.choice(work.shell_changes)
    error, error_regex = rng.choice(lang.errors)(rng)
    step, step_regex = rng.choice(work.next_steps)
    setting_regex = rf"({re.escape(name)}|{words})[^\n]{{0,40}}\b{v2}\b"

    # What the earlier compaction replaced.
    topic, d, r, _ = prev_decision
    s.user(tasks[0], *s.worded("ticket", t=ticket), rule[0])
    s.read(FUNCS)
    s.edit(prev_path, "// clamp the window start\n")
    s.tests()
    s.say("Done; tests pass.")
    s.user(tasks[1], *s.worded("setting", name=name, v=str(v1)), *s.worded("decision", topic=topic, d=d, r=r))
    s.read(FUNCS)
    s.tests()
    s.say("Set, and done. All green.")
    kept = s.user("Quick one: which command runs only the fast tests?")
    s.say("`cargo test --lib` runs the unit tests only; the integration suite lives under tests/.")
    summary = _previous(f"Fix duplicated and dropped events in the ingest pipeline ({tasks[0]})", rule[0],
                        f"Clamped the window start in {prev_path}; tests pass.",
                        f"**{topic.capitalize()}**: {d}, because {r}.", tasks[6], ticket, f"{name} = {v1}.")
    entry = s.compaction(summary, kept, [f"{lang.source_dirs[0]}/batch.rs"], [prev_path])
    _remember(s, entry, rule, ticket, prev_decision, prev_path)

    # New since then.
    at = s.user(tasks[2], *s.worded("correction", name=name, v1=str(v1), v2=str(v2)))
    s.plant("setting", "user correction", f"{name} = {v2} (was {v1})", setting_regex, at, "user")
    s.read(FUNCS)
    s.edit("src/config.rs", f"pub const {name}: u64 = {v2};\n")
    s.tests()
    s.say("Changed. Tests pass.")

    topic2, d2, r2, d2_regex = new_decision
    late_decision, late_reason = s.worded("decision_late", topic=topic2, d=d2, r=r2)
    s.user(tasks[3], late_decision)
    s.read(FUNCS)
    at = s.edit(new_path, lang.define(function))
    s.plant("path_new", "modified file", new_path, re.escape(new_path), at, "tool")
    s.plant("function", "new function name", function, rf"\b{function}\b", at, "tool")
    at, failing = s.tests(error)
    s.plant("error", "exact error message", error, error_regex, at, "tool")
    assert failing is not None
    s.plant(failing.id, failing.kind, failing.statement, failing.regex, at, "tool")
    s.say("Fixed; the suite passes again.")

    s.user(tasks[4])
    s.read(FUNCS)
    s.bash(command, "(no output)", note="Quicker from the shell.")
    s.plant("shell_file", "file changed by shell", shell_path, re.escape(shell_path), s.call, "tool")
    s.tests()
    s.say("Done. All green.")

    at = s.user(late_reason, tasks[5])
    s.plant("decision", "decision with reason", f"{d2}, because {r2}", d2_regex, at, "user")
    s.read(FUNCS)
    s.tests()
    s.say("Done with that. Tests pass.")

    at = s.user("One more check before the break.", *s.worded("next_step", s=step))
    s.plant("next_step", "agreed next step", step, step_regex, at, "user")
    s.read(FUNCS)
    s.tests()
    s.say("Checked; nothing else fails.")

    s.ask("p_decision", f"What did we decide about {topic2}, and why?", ("decision",))
    s.ask("p_setting", f"What value should {name} have now?", ("setting",), rf"\b{v2}\b")
    s.ask("p_error", "What was the exact error message of the failing test run? Quote it.", ("error",))
    s.ask("p_next", "What did we agree to do next, after the README fix?", ("next_step",))
    s.ask("p_ticket", "Which ticket id is this work tracked under?", ("ticket_prev",))


# ---- sql-update-es ----------------------------------------------------------------------------------------
_ES_TASKS = ("Escribe la migración que mueve las filas de facturas a la tabla nueva.",
             "Rellena los ids de tenant por lotes.", "Comprueba los recuentos de filas antes y después.",
             "Haz que la migración se pueda reanudar.", "Averigua por qué hay filas duplicadas.",
             "Añade un índice para las búsquedas de cuentas.", "Escribe el rollback de la migración.")
_ES_DECISIONS = {"the backfill": ("rellenar por rangos de clave primaria en lugar de un solo UPDATE grande",
                                  "una sola transacción mantuvo bloqueos sobre invoices durante minutos"),
                 "the old table": ("dejar la tabla antigua en solo lectura durante una versión en lugar de borrarla",
                                   "la exportación de finanzas todavía la lee")}
_ES_TOPICS = {"the backfill": "el backfill", "the old table": "la tabla antigua"}
_ES_STEPS = (("lanzar el backfill en la réplica de producción durante la ventana del fin de semana",
              r"weekend|fin de semana"),
             ("borrar la tabla invoices_legacy después del visto bueno de finanzas", r"invoices_legacy"))
_SQL_CAUSES = (
    ("the nightly retry job re-inserts every row whose tenant_id is NULL, because the unique index ignores NULLs",
     r"(?=[\s\S]*null)(?=[\s\S]*(retry job|unique index))"),
    ("the import script ran twice when its cron entry overlapped a manual run, and nothing guards against a "
     "second copy", r"(?=[\s\S]*(cron|overlap))(?=[\s\S]*(import script|manual run|twice))"),
)


def sql_update_es(s: Script) -> None:
    rng, lang, work = s.rng, SQL, DATA_MIGRATION
    tasks = list(_ES_TASKS)
    rng.shuffle(tasks)
    ticket, host = s.ticket(), s.host()
    name, words = rng.choice(lang.settings)
    v1 = s.value()
    v2 = s.value((v1,))
    first = rng.randrange(2)
    prev_decision, new_decision = decision_parts(work, first), decision_parts(work, 1 - first)
    rule_es = s.rule(rng.randrange(4))
    prev_path, new_path = f"{lang.source_dirs[0]}/0042_tenant_ids.sql", f"{lang.source_dirs[1]}/dedupe.sql"
    function = rng.choice(lang.function_names)
    cause, cause_regex = rng.choice(_SQL_CAUSES)
    error, error_regex = rng.choice(lang.errors)(rng)
    step, step_regex = rng.choice(_ES_STEPS)
    setting_regex = rf"({re.escape(name)}|{words})[^\n]{{0,40}}\b{v2}\b"

    # What the earlier compaction replaced (the user wrote in Spanish; the summary is in English).
    topic, d, r, _ = prev_decision
    d_es, r_es = _ES_DECISIONS[topic]
    s.user(tasks[0], *s.worded("ticket", t=ticket), rule_es[0])
    s.read(FUNCS)
    s.edit(prev_path, "-- tenant ids: batch by key range\n")
    s.tests()
    s.say("Done; the migration test passes.")
    s.user(tasks[1], *s.worded("setting", name=name, v=str(v1)),
           *s.worded("decision", topic=_ES_TOPICS[topic], d=d_es, r=r_es))
    s.read(FUNCS)
    s.tests()
    s.say("Set, and done. All green.")
    kept = s.user("Una pregunta rápida: ¿qué script ejecuta solo las comprobaciones rápidas?")
    s.say("`./scripts/migration_test.sh --fast` runs only the quick checks.")
    summary = _previous("Move the invoice data to the new tables and fill in the tenant ids (the user writes in "
                        "Spanish).", f"The user's rule: {rule_es[0]}",
                        f"Wrote the tenant id migration in {prev_path}; the migration test passes.",
                        f"**{topic.capitalize()}**: {d}, because {r}.", "Check the row counts before and after.",
                        ticket, f"{name} = {v1}.")
    entry = s.compaction(summary, kept, [f"{lang.source_dirs[1]}/invoices.sql"], [prev_path])
    _remember(s, entry, rule_es, ticket, prev_decision, prev_path)

    # New since then.
    at = s.user(tasks[2], *s.worded("host", h=host))
    s.plant("host", "user-named id", host, re.escape(host), at, "user")
    s.read(FUNCS)
    s.bash("psql -c 'SELECT tenant_id, number, count(*) FROM invoices GROUP BY 1, 2 HAVING count(*) > 1 LIMIT 3'",
           " tenant_id | number  | count\n-----------+---------+-------\n           | INV-118 |     2\n"
           "           | INV-507 |     3\n           | INV-733 |     2\n(3 rows)", note="Looking at the duplicates.")
    at = s.say(s.worded("root_cause", c=cause)[0])
    s.plant("root_cause", "root cause", cause, cause_regex, at, "assistant")

    at = s.user(tasks[3], *s.worded("correction", name=name, v1=str(v1), v2=str(v2)))
    s.plant("setting", "user correction", f"{name} = {v2} (was {v1})", setting_regex, at, "user")
    s.read(FUNCS)
    s.edit("db/backfill/settings.sql", f"\\set {name} {v2}\n")
    s.tests()
    s.say("Changed. Tests pass.")

    topic2, d2, r2, d2_regex = new_decision
    proposal, agreement = s.worded("decision_assistant", topic=topic2, d=d2, r=r2)
    s.user(tasks[4], f"¿Qué propones para {_ES_TOPICS[topic2]}?")
    s.read(FUNCS)
    at = s.say(proposal)
    s.plant("decision", "decision with reason", f"{d2}, because {r2}", d2_regex, at, "assistant")

    s.user(agreement, tasks[5])
    at = s.edit(new_path, lang.define(function))
    s.plant("path_new", "modified file", new_path, re.escape(new_path), at, "tool")
    s.plant("function", "new function name", function, rf"\b{function}\b", at, "tool")
    at = s.failed_command(f"psql -v ON_ERROR_STOP=1 -f {new_path}", error)
    s.plant("error", "exact error message", error, error_regex, at, "tool")
    s.edit(new_path, "-- skip rows that are already there\n", "Guarding the insert.")
    s.bash(f"psql -v ON_ERROR_STOP=1 -f {new_path}", "BEGIN\nCREATE FUNCTION\nINSERT 0 412\nCOMMIT",
           note="Applying it again.")
    s.say("Applied cleanly now.")

    at = s.user(tasks[6], *s.worded("next_step", s=step))
    s.plant("next_step", "agreed next step", step, step_regex, at, "user")
    s.read(FUNCS)
    s.tests()
    s.say("Done with that. The migration test passes.")

    s.ask("p_cause", "What root cause did we find for the duplicate rows?", ("root_cause",))
    s.ask("p_setting", f"What value should {name} have now?", ("setting",), rf"\b{v2}\b")
    s.ask("p_decision", f"What did we decide about {topic2}, and why?", ("decision",))
    s.ask("p_error", "What was the exact error message of the failed migration command? Quote it.", ("error",))
    s.ask("p_ticket", "Which ticket id is this work tracked under?", ("ticket_prev",))
