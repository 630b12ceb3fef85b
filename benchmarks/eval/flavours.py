"""Language flavours of the eval transcripts: file names, code, test output and the pools facts come from.

A ``Flavour`` only supplies material; ``transcripts.py`` decides what goes where. Every pool has more
entries than one transcript uses, so two seeds plant different values (``do not tune to one set``).
Code is generated from the seed too, so tool results read like real files without being copies of any.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Flavour:
    """What a coding session in one language looks like."""

    name: str  # python, go, typescript
    test_command: str
    source_dirs: tuple[str, ...]
    ext: str
    tasks: tuple[str, ...]  # what the user asks for, one per turn ("{area}" filled in)
    areas: tuple[str, ...]
    function_names: tuple[str, ...]  # pool for the "new function" fact
    settings: tuple[tuple[str, str], ...]  # (setting name as written in code, words a summary may use)
    errors: tuple[Callable[[random.Random], tuple[str, str]], ...]  # rng -> (exact text, regex)
    code: Callable[[random.Random, str, int], str]  # rng, module name, functions -> file text
    test_output: Callable[[random.Random, str, int, str | None], str]  # rng, module, count, error -> output


def _words(rng: random.Random, pool: tuple[str, ...], n: int) -> list[str]:
    return rng.sample(pool, n)


_NOUNS = ("order", "invoice", "tenant", "shard", "token", "bucket", "lease", "cursor", "window", "quota",
          "ledger", "batch", "replica", "session", "record", "event", "job", "route", "cache", "chunk")
_VERBS = ("load", "parse", "merge", "flush", "resolve", "check", "apply", "render", "collect", "split",
          "encode", "decode", "fetch", "store", "prune", "retry", "schedule", "normalize", "validate", "emit")


def _past(verb: str) -> str:
    irregular = {"split": "split", "emit": "emitted", "apply": "applied", "retry": "retried"}
    return irregular.get(verb) or (verb + "d" if verb.endswith("e") else verb + "ed")


def _name_pairs(rng: random.Random, n: int) -> list[tuple[str, str]]:
    return [(rng.choice(_VERBS), rng.choice(_NOUNS)) for _ in range(n)]


# ---- Python -----------------------------------------------------------------------------------------


def _py_code(rng: random.Random, module: str, functions: int) -> str:
    lines = [f'"""{module.replace("_", " ").capitalize()} helpers."""', "", "from __future__ import annotations",
             "", "import logging", "from dataclasses import dataclass", "",
             "log = logging.getLogger(__name__)", ""]
    for verb, noun in _name_pairs(rng, functions):
        limit = rng.randint(2, 90)
        lines += [
            "", f"def {verb}_{noun}(items: list[dict[str, object]], limit: int = {limit}) -> list[dict[str, object]]:",
            f'    """{verb.capitalize()} each {noun}, at most ``limit`` of them."""',
            "    result: list[dict[str, object]] = []",
            "    for item in items[:limit]:",
            f'        if item.get("{noun}_id") is None:',
            f'            log.debug("skipping %r: no {noun}_id", item)',
            "            continue",
            f'        result.append({{**item, "{_past(verb)}": True}})',
            "    return result",
        ]
    lines += ["", "", "@dataclass(frozen=True)", f"class {module.title().replace('_', '')}Config:",
              f"    retries: int = {rng.randint(1, 9)}", f"    timeout_s: float = {rng.randint(1, 60)}.0", ""]
    return "\n".join(lines)


def _py_tests(rng: random.Random, module: str, count: int, error: str | None) -> str:
    names = [f"tests/test_{module}.py::test_{verb}_{noun}" for verb, noun in _name_pairs(rng, count)]
    if error is None:
        seconds = f"{rng.randint(1, 9)}.{rng.randint(10, 99)}s"
        return "\n".join(f"{n} PASSED" for n in names) + f"\n\n{count} passed in {seconds}"
    failed = names[-1]
    summary = f"FAILED {failed} - {error.splitlines()[-1]}\n1 failed, {count - 1} passed in "
    return ("\n".join(f"{n} PASSED" for n in names[:-1]) + f"\n{failed} FAILED\n\n"
            f"=================================== FAILURES ===================================\n"
            f"_____ {failed.split('::')[1]} _____\n\n    def {failed.split('::')[1]}():\n"
            f">       run_case()\n\n{error}\n"
            f"=========================== short test summary info ============================\n"
            f"{summary}{rng.randint(1, 9)}.{rng.randint(10, 99)}s")


def _py_key_error(rng: random.Random) -> tuple[str, str]:
    key = rng.choice(("retry_budget_ms", "shard_weight", "drain_timeout", "burst_cap", "tenant_scope"))
    return f"E   KeyError: '{key}'", rf"KeyError:?\s*['\"]?{key}"


def _py_value_error(rng: random.Random) -> tuple[str, str]:
    size = -rng.randint(2, 64)
    shard = f"{rng.choice(('eu', 'us', 'ap'))}-{rng.choice(('west', 'east'))}-{rng.randint(2, 9)}"
    return (f"E   ValueError: invalid window size {size} for shard '{shard}'",
            rf"invalid window size {size} for shard '?{shard}")


def _py_type_error(rng: random.Random) -> tuple[str, str]:
    arg = rng.choice(("deadline", "jitter", "tenant", "prefetch"))
    return (f"E   TypeError: schedule() got an unexpected keyword argument '{arg}'",
            rf"unexpected keyword argument '?{arg}")


PYTHON = Flavour(
    name="python", test_command="pytest -q -x", source_dirs=("src/ratekeeper", "src/ratekeeper/store"), ext="py",
    tasks=("Look at how {area} works and tell me where the limit is applied.",
           "Add handling for an empty {area} list, with a test.",
           "The {area} tests are flaky on CI. Can you find out why?",
           "Refactor {area} so the store is injected instead of imported.",
           "Wire the new limiter into {area}.",
           "Add a metrics counter to {area} for rejected requests.",
           "Check that {area} still works with the async client.",
           "Clean up the {area} module: type hints and docstrings."),
    areas=("the token bucket", "the tenant quotas", "the refill loop", "the admin API", "the lease store",
           "the request router", "the config loader"),
    function_names=("refill_tokens_locked", "drain_expired_leases", "compute_burst_allowance",
                    "reserve_quota_slot", "rebalance_tenant_shards", "coalesce_pending_refills"),
    settings=(("REFILL_INTERVAL_MS", "refill interval"), ("MAX_BURST", "burst"), ("LEASE_TTL_S", "lease ttl"),
              ("SHARD_COUNT", "shard count"), ("BATCH_SIZE", "batch size")),
    errors=(_py_key_error, _py_value_error, _py_type_error),
    code=_py_code, test_output=_py_tests,
)


# ---- Go ---------------------------------------------------------------------------------------------


def _go_code(rng: random.Random, module: str, functions: int) -> str:
    lines = [f"package {module.split('_')[0]}", "", "import (", '\t"context"', '\t"errors"', '\t"sync"',
             '\t"time"', ")", "", f"var ErrClosed = errors.New(\"{module}: closed\")", ""]
    for verb, noun in _name_pairs(rng, functions):
        name = verb.capitalize() + noun.capitalize()
        lines += [
            f"// {name} {verb}s every {noun} in items, stopping at limit.",
            f"func (s *Store) {name}(ctx context.Context, items []{noun.capitalize()}, limit int) "
            f"([]{noun.capitalize()}, error) {{",
            "\ts.mu.Lock()", "\tdefer s.mu.Unlock()",
            "\tif s.closed {", "\t\treturn nil, ErrClosed", "\t}",
            f"\tout := make([]{noun.capitalize()}, 0, limit)",
            "\tfor i, it := range items {",
            "\t\tif i >= limit || ctx.Err() != nil {", "\t\t\tbreak", "\t\t}",
            f"\t\tit.Updated = time.Now().Add({rng.randint(1, 90)} * time.Millisecond)",
            "\t\tout = append(out, it)", "\t}", "\treturn out, nil", "}", "",
        ]
    lines += ["type Store struct {", "\tmu     sync.Mutex", "\tclosed bool", "}", ""]
    return "\n".join(lines)


def _go_tests(rng: random.Random, module: str, count: int, error: str | None) -> str:
    pkg = f"github.com/acme/leasekeeper/internal/{module.split('_')[0]}"
    names = [f"Test{verb.capitalize()}{noun.capitalize()}" for verb, noun in _name_pairs(rng, count)]
    runs = [f"=== RUN   {n}\n--- PASS: {n} (0.0{rng.randint(0, 9)}s)" for n in names[:-1]]
    if error is None:
        runs.append(f"=== RUN   {names[-1]}\n--- PASS: {names[-1]} (0.01s)")
        return "\n".join(runs) + f"\nPASS\nok  \t{pkg}\t0.{rng.randint(100, 999)}s"
    runs.append(f"=== RUN   {names[-1]}\n{error}\n--- FAIL: {names[-1]} (0.00s)")
    return "\n".join(runs) + f"\nFAIL\nFAIL\t{pkg}\t0.{rng.randint(100, 999)}s\nFAIL"


def _go_index(rng: random.Random) -> tuple[str, str]:
    n, line = rng.randint(3, 12), rng.randint(80, 240)
    return (f"panic: runtime error: index out of range [{n}] with length {n} [recovered]\n\tlease_table.go:{line}",
            rf"index out of range \[{n}\] with length {n}")


def _go_nil(rng: random.Random) -> tuple[str, str]:
    line = rng.randint(40, 300)
    return (f"panic: runtime error: invalid memory address or nil pointer dereference\n"
            f"[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x4f2a1c]\n\tshard_map.go:{line}",
            rf"nil pointer dereference[\s\S]{{0,160}}shard_map\.go:{line}|"
            rf"shard_map\.go:{line}[\s\S]{{0,160}}nil pointer")


def _go_deadline(rng: random.Random) -> tuple[str, str]:
    ms = rng.choice((250, 400, 750, 1200))
    return (f"    renew_test.go:{rng.randint(30, 99)}: renew lease \"tenant-{ms}\": "
            f"context deadline exceeded after {ms}ms",
            rf"context deadline exceeded after {ms} ?ms")


GO = Flavour(
    name="go", test_command="go test ./internal/... -run . -count=1", ext="go",
    source_dirs=("internal/lease", "internal/shard"),
    tasks=("Explain how {area} decides when to renew.",
           "Add a table-driven test for {area}.",
           "The race detector complains about {area}. Investigate.",
           "Make {area} take a context and respect cancellation.",
           "Hook {area} into the metrics exporter.",
           "Reduce the allocations in {area}; it shows up in the profile.",
           "Document {area} and add examples.",
           "Split {area} into smaller functions."),
    areas=("the lease table", "the shard map", "the renew loop", "the gRPC handler", "the expiry heap",
           "the config watcher", "the health check"),
    function_names=("refillTokensLocked", "drainExpiredLeases", "rebalanceShardsLocked", "reserveLeaseSlot",
                    "computeRenewDeadline", "coalescePendingRenewals"),
    settings=(("renewInterval", "renew interval"), ("maxLeases", "max leases"), ("shardCount", "shard count"),
              ("heapCapacity", "heap capacity"), ("gracePeriodMs", "grace period")),
    errors=(_go_index, _go_nil, _go_deadline),
    code=_go_code, test_output=_go_tests,
)


# ---- TypeScript ------------------------------------------------------------------------------------


def _ts_code(rng: random.Random, module: str, functions: int) -> str:
    lines = ['import { z } from "zod";', 'import type { Logger } from "../log";', "",
             f"export const {module.upper()}_VERSION = {rng.randint(1, 9)};", ""]
    for verb, noun in _name_pairs(rng, functions):
        name = verb + noun.capitalize()
        lines += [
            f"/** {verb.capitalize()} each {noun}; stops after `limit`. */",
            f"export async function {name}(items: {noun.capitalize()}[], log: Logger, "
            f"limit = {rng.randint(2, 99)}): Promise<{noun.capitalize()}[]> {{",
            f"  const out: {noun.capitalize()}[] = [];",
            "  for (const item of items.slice(0, limit)) {",
            f"    if (!item.{noun}Id) {{",
            f'      log.debug("skip {noun} without id", {{ item }});',
            "      continue;", "    }",
            f"    out.push({{ ...item, {_past(verb)}At: Date.now() }});", "  }",
            "  return out;", "}", "",
        ]
    lines += [f"export const {module}Schema = z.object({{ id: z.string(), weight: z.number().min(0) }});", ""]
    return "\n".join(lines)


def _ts_tests(rng: random.Random, module: str, count: int, error: str | None) -> str:
    names = [f"{verb}s {noun}s in order" for verb, noun in _name_pairs(rng, count)]
    ok = [f"   \u2713 {n} ({rng.randint(1, 40)} ms)" for n in names[:-1]]
    if error is None:
        return (f" \u2713 src/{module}.test.ts ({count} tests) {rng.randint(20, 400)}ms\n" + "\n".join(ok)
                + f"\n\n Test Files  1 passed (1)\n      Tests  {count} passed ({count})")
    return (f" \u276f src/{module}.test.ts ({count} tests | 1 failed) {rng.randint(20, 400)}ms\n" + "\n".join(ok)
            + f"\n   \u00d7 {names[-1]}\n\n FAIL  src/{module}.test.ts > {names[-1]}\n{error}\n\n"
            f" Test Files  1 failed (1)\n      Tests  1 failed | {count - 1} passed ({count})")


def _ts_undefined(rng: random.Random) -> tuple[str, str]:
    prop = rng.choice(("tenantId", "retryAfter", "planTier", "webhookUrl"))
    return (f"TypeError: Cannot read properties of undefined (reading '{prop}')",
            rf"Cannot read propert(y|ies) of undefined \(reading '?{prop}")


def _ts_zod(rng: random.Random) -> tuple[str, str]:
    field = rng.choice(("weight", "maxRetries", "windowMs"))
    return (f'ZodError: [{{"code": "too_small", "minimum": 0, "path": ["{field}"], '
            f'"message": "Number must be greater than or equal to 0"}}]',
            rf"ZodError[\s\S]{{0,120}}{field}|{field}[\s\S]{{0,120}}greater than or equal to 0")


def _ts_assert(rng: random.Random) -> tuple[str, str]:
    want, got = rng.randint(3, 30), rng.randint(31, 90)
    return (f"AssertionError: expected {got} to be {want} // Object.is equality",
            rf"expected {got} to be {want}")


TYPESCRIPT = Flavour(
    name="typescript", test_command="npx vitest run", ext="ts", source_dirs=("src/billing", "src/webhooks"),
    tasks=("Walk me through {area}.", "Add input validation to {area}, with tests.",
           "The {area} tests time out sometimes. Why?", "Move {area} to the new Logger interface.",
           "Expose {area} through the REST router.", "Add retries with backoff to {area}.",
           "Type {area} strictly; no any.", "Split {area} into smaller modules."),
    areas=("the webhook dispatcher", "the invoice renderer", "the plan resolver", "the usage meter",
           "the retry queue", "the tenant settings store", "the signing helper"),
    function_names=("refillTokensLocked", "drainExpiredDeliveries", "computeProrationCents",
                    "reserveDeliverySlot", "rebalanceWebhookQueues", "coalescePendingInvoices"),
    settings=(("MAX_DELIVERY_ATTEMPTS", "delivery attempts"), ("BACKOFF_BASE_MS", "backoff base"),
              ("QUEUE_CONCURRENCY", "concurrency"), ("INVOICE_PAGE_SIZE", "page size"),
              ("SIGNATURE_TOLERANCE_S", "signature tolerance")),
    errors=(_ts_undefined, _ts_zod, _ts_assert),
    code=_ts_code, test_output=_ts_tests,
)

FLAVOURS = {f.name: f for f in (PYTHON, GO, TYPESCRIPT)}

# Shared fact pools (language-neutral): (statement, regex). ``{x}`` is filled from the flavour.
CONSTRAINTS: tuple[tuple[str, str], ...] = (
    ("Do not add any new third-party dependency for this.",
     r"(no|not|never|without|avoid)\b[^.\n]{0,50}(new )?(third[- ]party )?dependenc"),
    ("Never touch the generated files under gen/; they come from the schema.",
     r"(never|not|don't|do not|avoid)[^\n]{0,50}\bgen/"),
    ("Keep every change backwards compatible with the v{n} config format.",
     r"(backwards?[- ]compatib[^\n]{0,60}v{n}|v{n}[^\n]{0,60}backwards?[- ]compatib)"),
    ("All logging must go through the structured logger, no print statements.",
     r"structured logger"),
    ("Tests must stay offline: no network calls in any test.",
     r"(offline|no network)"),
    ("Do not rename the {env} environment variable, ops scripts depend on it.",
     r"{env}"),
    ("Every commit must keep the public API unchanged until the {month} release.",
     r"(public api[^\n]{0,80}{month}|{month}[^\n]{0,80}public api)"),
)
ENV_VARS = ("RK_STORE_URL", "LEASE_BACKEND", "BILLING_REGION", "APP_SHARD_HINT")
MONTHS = ("March", "April", "June", "September", "November")

DECISIONS: tuple[tuple[str, str], ...] = (
    # (decision sentence with reason, regex requiring the decision and the reason)
    ("use SQLite instead of Postgres for the local store, because it keeps the tool a single binary",
     r"(?=[\s\S]*sqlite)(?=[\s\S]*single[- ]binary)"),
    ("keep the per-tenant lock instead of a global mutex, because the global one serialised all tenants "
     "in the load test", r"(?=[\s\S]*per[- ]tenant)(?=[\s\S]*(serializ|serialis|load test|contention))"),
    ("store timestamps as integer milliseconds, because the float seconds lost precision after 2^53",
     r"(?=[\s\S]*(integer|int) (milli|ms))(?=[\s\S]*precision)"),
    ("drop the in-memory cache rather than fix its invalidation, because stale reads were worse than the "
     "extra latency", r"(?=[\s\S]*(drop|remove)[^\n]{0,40}cache)(?=[\s\S]*stale)"),
    ("retry with exponential backoff capped at 30 s, because the upstream throttles bursts",
     r"(?=[\s\S]*exponential)(?=[\s\S]*(throttl|burst))"),
)

NEXT_STEPS: tuple[tuple[str, str], ...] = (
    ("add a benchmark for the eviction path", r"benchmark[^\n]{0,60}evict|evict[^\n]{0,60}benchmark"),
    ("write the migration script for the old config files", r"migration[^\n]{0,60}config|config[^\n]{0,60}migration"),
    ("add a fuzz test for the parser", r"fuzz"),
    ("update the runbook with the new alert thresholds", r"runbook"),
    ("split the PR into a refactor part and a behaviour part", r"split[^\n]{0,40}(PR|pull request)"),
)

TICKET_PREFIXES = ("PAY", "INFRA", "CORE", "OPS", "PLAT", "SEC")
