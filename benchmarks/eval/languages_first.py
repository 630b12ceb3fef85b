"""Python, Go and TypeScript for the wide transcripts: the code and failures of ``flavours.py``, with a
test report that is told which test fails (so the failing test's name and counts are known exactly).

The first transcripts keep using ``flavours.py`` unchanged; this module only adds what ``wide.py``
needs on top (``Language``: test names, a report per runner, the text an edit adds for a function).
"""

from __future__ import annotations

import random

from flavours import (
    GO,
    TYPESCRIPT,
    _go_code,
    _go_deadline,
    _go_index,
    _go_nil,
    _py_code,
    _py_key_error,
    _py_type_error,
    _py_value_error,
    _ts_assert,
    _ts_code,
    _ts_undefined,
    _ts_zod,
)
from languages import Language, _counts


def _py_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    secs = f"{rng.randint(1, 9)}.{rng.randint(10, 99)}s"
    lines = [f"{n} PASSED" for n in names[:passed]]
    if error is None:
        return "\n".join(lines) + f"\n\n{passed} passed in {secs}"
    test = names[-1].split("::")[1]
    return ("\n".join(lines) + f"\n{names[-1]} FAILED\n\n"
            f"=================================== FAILURES ===================================\n"
            f"_____ {test} _____\n\n{error}\n"
            f"=========================== short test summary info ============================\n"
            f"FAILED {names[-1]} - {error.splitlines()[-1].strip()}\n{failed} failed, {passed} passed in {secs}")


def _go_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    pkg = f"internal/{module}"
    lines = [f"PASS {pkg}.{n} (0.0{rng.randint(0, 9)}s)" for n in names[:passed]]
    secs = f"0.{rng.randint(100, 999)}s"
    if error is None:
        return "\n".join(lines) + f"\n\nDONE {len(names)} tests in {secs}"
    lines += [f"=== RUN   {names[-1]}", error, f"FAIL {pkg}.{names[-1]} (0.00s)"]
    return "\n".join(lines) + f"\n\nDONE {len(names)} tests, {failed} failure in {secs}"


def _ts_report(rng: random.Random, module: str, names: list[str], error: str | None) -> str:
    passed, failed = _counts(names, error)
    ok = [f"   \u2713 {n} ({rng.randint(1, 40)} ms)" for n in names[:passed]]
    if error is None:
        return (f" \u2713 src/{module}.test.ts ({len(names)} tests) {rng.randint(20, 400)}ms\n" + "\n".join(ok)
                + f"\n\n Test Files  1 passed (1)\n      Tests  {passed} passed ({passed})")
    return (f" \u276f src/{module}.test.ts ({len(names)} tests | 1 failed) {rng.randint(20, 400)}ms\n"
            + "\n".join(ok) + f"\n   \u00d7 {names[-1]}\n\n FAIL  src/{module}.test.ts > {names[-1]}\n{error}\n\n"
            f" Test Files  1 failed (1)\n      Tests  {failed} failed | {passed} passed ({len(names)})")


_MODULES = ("bucket", "quota", "refill", "store", "router", "lease", "config", "shard")

PYTHON_WIDE = Language(
    name="python", ext="py", source_dirs=("src/authgate", "src/authgate/tokens"), modules=_MODULES,
    test_command="pytest -q", code=_py_code,
    test_name=lambda module, verb, noun: f"tests/test_{module}.py::test_{verb}_{noun}",
    report=_py_report, define=lambda name: f"def {name}(request):\n    return request\n",
    function_names=("reject_unsigned_tokens", "scrub_secret_headers", "pin_allowed_hosts", "rotate_signing_key"),
    settings=(("TOKEN_TTL_S", "token ttl"), ("MAX_LOGIN_ATTEMPTS", "login attempts"),
              ("KEY_ROTATION_DAYS", "rotation")),
    errors=(_py_key_error, _py_value_error, _py_type_error), comment="#",
)

GO_WIDE = Language(
    name="go", ext="go", source_dirs=GO.source_dirs, modules=_MODULES,
    test_command="gotestsum --format testname -- ./internal/... -count=1", code=_go_code,
    test_name=lambda module, verb, noun: f"Test{verb.capitalize()}{noun.capitalize()}",
    report=_go_report, define=lambda name: f"func {name}(s *Store) int {{ return 0 }}\n",
    function_names=("reuseLeaseBuffers", "shardIndexFast", "preallocRenewBatch", "skipIdleShards"),
    settings=(("renewBatchSize", "renew batch"), ("bufferPoolSize", "buffer pool"), ("gcPercent", "gc percent")),
    errors=(_go_index, _go_nil, _go_deadline),
)

TYPESCRIPT_WIDE = Language(
    name="typescript", ext="ts", source_dirs=TYPESCRIPT.source_dirs, modules=_MODULES,
    test_command="npx vitest run", code=_ts_code,
    test_name=lambda module, verb, noun: f"{verb}s {noun}s in order",
    report=_ts_report, define=lambda name: f"export function {name}(input: unknown): boolean {{ return true; }}\n",
    function_names=("parseWebhookPayload", "migrateSchemaDefaults", "assertNodeVersion", "coerceLegacyAmount"),
    settings=(("MAX_PAYLOAD_KB", "payload"), ("SCHEMA_CACHE_SIZE", "schema cache"),
              ("PARSE_TIMEOUT_MS", "parse timeout")),
    errors=(_ts_undefined, _ts_zod, _ts_assert),
)

FIRST_LANGUAGES = {lang.name: lang for lang in (PYTHON_WIDE, GO_WIDE, TYPESCRIPT_WIDE)}
