"""Language material of the wide transcripts (issue 33): Rust, Kotlin, C#, Ruby and SQL sessions.

A ``Language`` supplies file names, generated code, how one test is named, how a test run prints
(with one named test failing, or none) and the pools a transcript's facts come from; ``wide.py``
decides what goes where. Unlike ``flavours.py`` the test report is told which test fails, so the
"failing test with its numbers" fact is known exactly. Pools hold more than one transcript uses.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from flavours import _name_pairs

ErrorPick = Callable[[random.Random], tuple[str, str]]  # rng -> (exact text, regex)


@dataclass(frozen=True)
class Language:
    """What the files, tests and failures of one language look like."""

    name: str
    ext: str
    source_dirs: tuple[str, ...]
    modules: tuple[str, ...]
    test_command: str
    code: Callable[[random.Random, str, int], str]  # rng, module, functions -> file text
    test_name: Callable[[str, str, str], str]  # module, verb, noun -> one test's name
    report: Callable[[random.Random, str, list[str], str | None], str]  # rng, module, names, error -> output
    define: Callable[[str], str]  # function name -> the text an edit adds to define it
    function_names: tuple[str, ...]
    settings: tuple[tuple[str, str], ...]  # (name as written in code, words a summary may use)
    errors: tuple[ErrorPick, ...]
    comment: str = "//"  # how a line comment starts


def _counts(names: list[str], error: str | None) -> tuple[int, int]:
    """(passed, failed): the last test is the one that fails."""
    return (len(names) - 1, 1) if error else (len(names), 0)


# ---- Rust ---------------------------------------------------------------------------------------------


def _rs_code(rng: random.Random, module: str, functions: int) -> str:
    lines = ["use std::collections::HashMap;", "use crate::error::IngestError;", ""]
    for verb, noun in _name_pairs(rng, functions):
        lines += [f"/// {verb.capitalize()} every {noun}, at most `limit` of them.",
                  f"pub fn {verb}_{noun}(items: &[{noun.capitalize()}], limit: usize) "
                  f"-> Result<Vec<{noun.capitalize()}>, IngestError> {{",
                  f"    let mut seen: HashMap<u64, usize> = HashMap::with_capacity({rng.randint(4, 64)});",
                  "    let mut out = Vec::new();", "    for item in items.iter().take(limit) {",
                  "        if seen.insert(item.id, out.len()).is_some() {", "            continue;", "        }",
                  "        out.push(item.clone());", "    }", "    Ok(out)", "}", ""]
    return "\n".join(lines)


def _rs_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    lines = [f"running {len(names)} tests"]
    lines += [f"test {n} ... ok" for n in names[:passed]]
    secs = f"{rng.randint(0, 3)}.{rng.randint(10, 99)}s"
    if error is None:
        return "\n".join(lines) + f"\n\ntest result: ok. {passed} passed; 0 failed; 0 ignored; finished in {secs}"
    lines += [f"test {names[-1]} ... FAILED", "", "failures:", "", f"---- {names[-1]} stdout ----", error, "",
              "failures:", f"    {names[-1]}", ""]
    return "\n".join(lines) + f"\ntest result: FAILED. {passed} passed; {failed} failed; 0 ignored; finished in {secs}"


def _rs_overflow(rng: random.Random) -> tuple[str, str]:
    line = rng.randint(40, 220)
    return (f"thread 'main' panicked at src/ingest/window.rs:{line}:17:\nattempt to subtract with overflow",
            rf"subtract with overflow|window\.rs:{line}")


def _rs_unwrap(rng: random.Random) -> tuple[str, str]:
    field = rng.choice(("partition_key", "batch_offset", "source_tag"))
    return (f"called `Option::unwrap()` on a `None` value: missing field `{field}`",
            rf"unwrap\(\)`? on a `?None`?[\s\S]{{0,60}}{field}|missing field `?{field}")


RUST = Language(
    name="rust", ext="rs", source_dirs=("src/ingest", "src/sink"),
    modules=("window", "batch", "dedup", "offsets", "parser", "sink", "schema", "backoff"),
    test_command="cargo test --quiet",
    code=_rs_code, test_name=lambda module, verb, noun: f"{module}::tests::{verb}_{noun}_in_order",
    report=_rs_report, define=lambda name: f"pub fn {name}(batch: &mut Batch) -> usize {{ 0 }}\n",
    function_names=("dedup_by_offset", "clamp_window_start", "merge_partition_runs", "drain_late_events"),
    settings=(("MAX_BATCH_ROWS", "batch rows"), ("LATE_EVENT_GRACE_MS", "grace"), ("SINK_WORKERS", "workers")),
    errors=(_rs_overflow, _rs_unwrap),
)


# ---- Kotlin -------------------------------------------------------------------------------------------


def _kt_code(rng: random.Random, module: str, functions: int) -> str:
    lines = [f"package com.acme.orders.{module}", "", "import org.slf4j.LoggerFactory", "",
             f"class {module.capitalize()}Service(private val repo: OrderRepository) {{",
             "    private val log = LoggerFactory.getLogger(javaClass)", ""]
    for verb, noun in _name_pairs(rng, functions):
        lines += [f"    /** {verb.capitalize()} each {noun}; stops after [limit]. */",
                  f"    fun {verb}{noun.capitalize()}s(ids: List<Long>, limit: Int = {rng.randint(2, 99)}): "
                  f"List<{noun.capitalize()}> =",
                  "        ids.take(limit).mapNotNull { id ->",
                  f"            repo.find{noun.capitalize()}(id) ?: run {{ log.debug(\"no {noun} {{}}\", id); null }}",
                  "        }", ""]
    return "\n".join(lines + ["}", ""])


def _kt_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    suite = f"{module.capitalize()}ServiceTest"
    lines = ["> Task :orders:test", ""] + [f"{suite} > {n} PASSED" for n in names[:passed]]
    if error is None:
        return "\n".join(lines) + f"\n\n{passed} tests completed, 0 failed\n\nBUILD SUCCESSFUL in {rng.randint(4, 40)}s"
    lines += [f"{suite} > {names[-1]} FAILED", f"    {error}", ""]
    return ("\n".join(lines) + f"\n{len(names)} tests completed, {failed} failed\n\n"
            f"FAILURE: Build failed with an exception.\n\nBUILD FAILED in {rng.randint(4, 40)}s")


def _kt_npe(rng: random.Random) -> tuple[str, str]:
    field = rng.choice(("shippingAddress", "currencyCode", "customerRef"))
    return (f"java.lang.NullPointerException: Parameter specified as non-null is null: "
            f"method com.acme.orders.Order.<init>, parameter {field}",
            rf"non-null is null[\s\S]{{0,80}}{field}|NullPointerException[\s\S]{{0,120}}{field}")


def _kt_assert(rng: random.Random) -> tuple[str, str]:
    want, got = rng.randint(3, 40), rng.randint(41, 99)
    return (f"org.opentest4j.AssertionFailedError: expected: <{want}> but was: <{got}>",
            rf"expected:? <?{want}>? but was:? <?{got}")


KOTLIN = Language(
    name="kotlin", ext="kt",
    source_dirs=("orders/src/main/kotlin/com/acme/orders", "orders/src/main/kotlin/com/acme/pricing"),
    modules=("checkout", "pricing", "inventory", "refund", "cart", "tax", "shipping", "coupon"),
    test_command="./gradlew :orders:test",
    code=_kt_code, test_name=lambda module, verb, noun: f"{verb}s {noun}s in order()",
    report=_kt_report, define=lambda name: f"    fun {name}(order: Order): Order = order\n",
    function_names=("applyCouponOnce", "splitOrderLines", "resolveTaxRegion", "reserveStockFor"),
    settings=(("maxCartLines", "cart lines"), ("reservationTtlSeconds", "reservation ttl"),
              ("priceCacheSize", "price cache")),
    errors=(_kt_npe, _kt_assert),
)


# ---- C# -----------------------------------------------------------------------------------------------


def _cs_code(rng: random.Random, module: str, functions: int) -> str:
    lines = ["using Microsoft.Extensions.Logging;", "", f"namespace Acme.Gateway.{module.capitalize()};", "",
             f"public sealed class {module.capitalize()}Handler", "{",
             f"    private readonly ILogger<{module.capitalize()}Handler> _log;", ""]
    for verb, noun in _name_pairs(rng, functions):
        lines += [f"    /// <summary>{verb.capitalize()} each {noun}, up to <paramref name=\"limit\"/>.</summary>",
                  f"    public IReadOnlyList<{noun.capitalize()}> {verb.capitalize()}{noun.capitalize()}s("
                  f"IEnumerable<{noun.capitalize()}> items, int limit = {rng.randint(2, 99)})",
                  "    {", f"        var result = new List<{noun.capitalize()}>();",
                  "        foreach (var item in items.Take(limit))", "        {",
                  "            if (item.Id is null) { _log.LogDebug(\"skip {Item}\", item); continue; }",
                  "            result.Add(item);", "        }", "        return result;", "    }", ""]
    return "\n".join(lines + ["}", ""])


def _cs_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    ms = rng.randint(40, 900)
    if error is None:
        return (f"  Determining projects to restore...\n  Gateway.Tests -> bin/Debug/net8.0/Gateway.Tests.dll\n"
                f"Passed!  - Failed:     0, Passed:    {passed}, Skipped:     0, Total:    {passed}, Duration: {ms} ms")
    return (f"  Gateway.Tests -> bin/Debug/net8.0/Gateway.Tests.dll\n  Failed {names[-1]} [{rng.randint(1, 90)} ms]\n"
            f"  Error Message:\n   {error}\n  Stack Trace:\n     at {names[-1]}() in "
            f"tests/Gateway.Tests/{module.capitalize()}Tests.cs:line {rng.randint(20, 200)}\n\n"
            f"Failed!  - Failed:     {failed}, Passed:    {passed}, Skipped:     0, Total:    {len(names)}, "
            f"Duration: {ms} ms")


def _cs_config(rng: random.Random) -> tuple[str, str]:
    key = rng.choice(("Upstreams:Billing:BaseUrl", "RateLimit:PermitLimit", "Auth:Authority"))
    return (f"System.InvalidOperationException: Configuration value '{key}' is missing or empty.",
            rf"{key}'? is missing")


def _cs_timeout(rng: random.Random) -> tuple[str, str]:
    secs = rng.choice((15, 30, 45))
    return (f"System.Threading.Tasks.TaskCanceledException: The request was canceled due to the configured "
            f"HttpClient.Timeout of {secs} seconds elapsing.",
            rf"HttpClient\.Timeout of {secs} seconds|TaskCanceledException[\s\S]{{0,120}}\b{secs} ?s")


CSHARP = Language(
    name="csharp", ext="cs", source_dirs=("src/Gateway/Routing", "src/Gateway/Health"),
    modules=("routes", "health", "throttle", "auth", "upstreams", "probes", "headers", "retry"),
    test_command="dotnet test tests/Gateway.Tests",
    code=_cs_code,
    test_name=lambda module, verb, noun:
        f"Gateway.Tests.{module.capitalize()}Tests.{verb.capitalize()}s{noun.capitalize()}s",
    report=_cs_report, define=lambda name: f"    public static bool {name}(GatewayOptions o) => o.Enabled;\n",
    function_names=("ValidateUpstreamUrls", "BindRateLimitOptions", "ResolveHealthProbePath", "LoadRegionOverrides"),
    settings=(("PermitLimit", "permit limit"), ("ProbeIntervalSeconds", "probe interval"),
              ("MaxConnectionsPerServer", "connections per server")),
    errors=(_cs_config, _cs_timeout),
)


# ---- Ruby ---------------------------------------------------------------------------------------------


def _rb_code(rng: random.Random, module: str, functions: int) -> str:
    lines = ["# frozen_string_literal: true", "", "module Ledger", f"  class {module.capitalize()}"]
    for verb, noun in _name_pairs(rng, functions):
        lines += [f"    # {verb.capitalize()} each {noun}; at most +limit+ of them.",
                  f"    def {verb}_{noun}s(items, limit: {rng.randint(2, 99)})",
                  "      items.first(limit).filter_map do |item|",
                  f"        next if item[:{noun}_id].nil?", "", f"        item.merge({noun}_checked: true)",
                  "      end", "    end", ""]
    return "\n".join(lines + ["  end", "end", ""])


def _rb_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    dots = "." * passed + ("F" if error else "")
    secs = f"{rng.randint(0, 4)}.{rng.randint(100, 999)}"
    head = f"Randomized with seed {rng.randint(1000, 99999)}\n{dots}\n\n"
    if error is None:
        return head + f"Finished in {secs} seconds\n{passed} examples, 0 failures"
    return (head + f"Failures:\n\n  1) {names[-1]}\n     Failure/Error: {error}\n\n"
            f"Finished in {secs} seconds\n{len(names)} examples, {failed} failure\n\n"
            f"Failed examples:\n\nrspec ./spec/{module}_spec.rb:{rng.randint(10, 99)} # {names[-1]}")


def _rb_nomethod(rng: random.Random) -> tuple[str, str]:
    meth = rng.choice(("posted_at", "currency", "account_ref"))
    return (f"NoMethodError: undefined method `{meth}' for nil:NilClass",
            rf"undefined method `?{meth}'?[\s\S]{{0,20}}nil")


def _rb_expect(rng: random.Random) -> tuple[str, str]:
    want, got = rng.randint(100, 900), rng.randint(901, 1800)
    return (f"expected: {want}\n          got: {got}\n\n     (compared using ==)",
            rf"expected:? {want}[\s\S]{{0,40}}got:? {got}")


RUBY = Language(
    name="ruby", ext="rb", source_dirs=("lib/ledger", "lib/ledger/export"),
    modules=("posting", "journal", "export", "balance", "currency", "statement", "reconcile", "audit"),
    test_command="bundle exec rspec",
    code=_rb_code, test_name=lambda module, verb, noun: f"Ledger::{module.capitalize()} {verb}s {noun}s in order",
    report=_rb_report, define=lambda name: f"    def {name}(entry)\n      entry\n    end\n",
    function_names=("document_posting_rules", "render_example_journal", "link_api_reference", "escape_doc_anchor"),
    settings=(("EXAMPLE_LIMIT", "example limit"), ("DOC_LINE_WIDTH", "line width"), ("TOC_DEPTH", "toc depth")),
    errors=(_rb_nomethod, _rb_expect), comment="#",
)


# ---- SQL (migrations, tested through a shell script) --------------------------------------------------


def _sql_code(rng: random.Random, module: str, functions: int) -> str:
    lines = [f"-- {module}: schema and backfill", "BEGIN;", ""]
    for verb, noun in _name_pairs(rng, functions):
        lines += [f"-- {verb} {noun}s that lack a tenant",
                  f"UPDATE {noun}s SET tenant_id = a.tenant_id, {_past_sql(verb)}_at = now()",
                  f"  FROM accounts a WHERE {noun}s.account_id = a.id AND {noun}s.tenant_id IS NULL",
                  f"  AND {noun}s.id BETWEEN :lo AND :lo + {rng.randint(1, 9)}000;", ""]
    return "\n".join(lines + ["COMMIT;", ""])


def _past_sql(verb: str) -> str:
    return verb + ("d" if verb.endswith("e") else "ed")


def _sql_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    lines = [f"ok {i + 1} - {n}" for i, n in enumerate(names[:passed])]
    if error is None:
        return "\n".join([f"1..{len(names)}", *lines, f"# passed {passed}/{len(names)}"])
    lines += [f"not ok {len(names)} - {names[-1]}", f"# {error}"]
    return "\n".join([f"1..{len(names)}", *lines, f"# Looks like you failed {failed} test of {len(names)}."])


def _sql_unique(rng: random.Random) -> tuple[str, str]:
    key = rng.randint(1000, 99999)
    return (f'ERROR:  duplicate key value violates unique constraint "ledger_entries_pkey"\n'
            f"DETAIL:  Key (id)=({key}) already exists.",
            rf"duplicate key[\s\S]{{0,120}}\b{key}\b|\(id\)=\({key}\)")


def _sql_notnull(rng: random.Random) -> tuple[str, str]:
    column = rng.choice(("tenant_id", "currency", "posted_at"))
    return (f'ERROR:  null value in column "{column}" of relation "invoices" violates not-null constraint',
            rf"null value in column \"?{column}")


SQL = Language(
    name="sql", ext="sql", source_dirs=("db/migrations", "db/backfill"),
    modules=("tenants", "invoices", "accounts", "ledger", "payments", "currencies", "archive", "audit"),
    test_command="./scripts/migration_test.sh",
    code=_sql_code, test_name=lambda module, verb, noun: f"{module}: {verb} {noun}s keeps row counts",
    report=_sql_report,
    define=lambda name: f"CREATE OR REPLACE FUNCTION {name}(batch_start bigint) RETURNS integer "
                        "LANGUAGE sql AS $$ SELECT 0 $$;\n",
    function_names=("backfill_tenant_ids", "copy_invoice_batch", "verify_row_counts", "remap_currency_codes"),
    settings=(("BATCH_ROWS", "batch rows"), ("LOCK_TIMEOUT_MS", "lock timeout"), ("MAX_PARALLEL_COPIES", "parallel")),
    errors=(_sql_unique, _sql_notnull), comment="--",
)

LANGUAGES = {lang.name: lang for lang in (RUST, KOTLIN, CSHARP, RUBY, SQL)}
