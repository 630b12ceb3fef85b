"""The compaction-quality eval: planted facts kept by the summary, probes answered after compaction.

    .venv/bin/python benchmarks/eval/run_eval.py --target scripted                 # fast, canned (CI)
    .venv/bin/python benchmarks/eval/run_eval.py --target local --agents pi,ours   # the wide set, pi first
    .venv/bin/python benchmarks/eval/run_eval.py --target local --transcripts first go-leasekeeper-perf
    .venv/bin/python benchmarks/eval/run_eval.py --model openai/gpt-4o-mini --api-base https://api.openai.com/v1 \\
        --api-key-env OPENAI_API_KEY --context-window 16384

For each transcript (``data/``) and each agent (pi-compact, and pi 0.73.1 where node and its package
are found): copy the transcript into a scratch directory, compact it through the agent's own command
line, score the compaction entry's summary against the fixed fact rules, then for each probe question
copy the compacted session and ask the question in print mode (a fresh continuation), and score the
answer. Every request goes through a recording proxy (``proxy.py``). Everything raw is kept under the
results directory (default ``benchmarks/.cache/eval/<timestamp>/``, git-ignored): each agent's scratch
home and sessions, ``summary.md``, the compaction entry, the command outputs, every request with its
reply, usage and server timings (``requests.jsonl``), each probe's answer, ``results.json`` and
``table.md`` (the per-transcript table, the per-kind table of ``report.kind_table`` and the notes).
Each probe records the tool calls its answer made, counted in the session copy it was asked on.

Two more measurements use the same transcripts and probes. ``--baseline-root DIR`` adds ``ours-base``:
the pi-compact code in DIR compacts each transcript right after the other agents, timed and scored, with no
probes (compaction time against an earlier tree under the same load). ``--agents ours-reads,ours-reads-off``
continues each transcript live with a loop of twelve file reads (``read_loop.py``), tool-result clearing on /
off, records the compactions and clearings it made, and asks the probes on what that left.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import keep  # noqa: E402
import phrased  # noqa: E402
import wide  # noqa: E402
from agents import (  # noqa: E402
    BASELINE,
    FLOORS,
    READ_LOOP_FILES,
    READ_LOOPS,
    REUSE_MODES,
    Agent,
    last_compaction,
    line_count,
    pi_cli,
    prepare_session,
    tool_calls_after,
)
from proxy import Exchange, RecordingProxy  # noqa: E402
from report import kind_table, notes, table  # noqa: E402
from report5 import all_tables  # noqa: E402
from scoring import (  # noqa: E402
    Rules,
    available,
    facts_kept,
    facts_kept_whole,
    kept,
    load_rules,
    model_only,
    probe_right,
)
from targets import ROOT, ScriptedTarget, Target, custom_target, local_target  # noqa: E402

# Issue 23's three (earlier runs measured them; they lack three kinds of fact) and the eight wide ones of
# issue 33 (every kind in each; the default). ``--transcripts first|wide|all`` names a set.
FIRST = ("python-ratekeeper", "go-leasekeeper", "ts-billing")
WIDE = tuple(spec[0] for spec in wide.SPECS)
# Issue 41's: five sessions, each in trained and in held-out wordings (``phrased.py``).
R5 = phrased.NAMES
SETS = {"first": FIRST, "wide": WIDE, "all": FIRST + WIDE, "r5": R5,
        "r5-trained": tuple(n for n in R5 if n.endswith("-t")), "r5-held-out": tuple(n for n in R5 if n.endswith("-h"))}
RECALL_PASSES = {"both": (False, True), "on": (True,), "off": (False,)}


def _write_exchanges(path: Path, exchanges: list[Exchange]) -> None:
    with path.open("a", encoding="utf-8") as out:
        for exchange in exchanges:
            out.write(json.dumps(exchange.to_json(), ensure_ascii=False) + "\n")


def _last_json(stdout: str) -> dict[str, Any]:
    try:
        value = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}
    return value if isinstance(value, dict) else {}


def _prompt_tokens(exchanges: list[Exchange]) -> int | None:
    """Prompt tokens of the summarizer requests: the server's own count (llama.cpp ``timings.prompt_n``
    counts only what it evaluated, after its prompt cache), else the reported usage."""
    counted = [e.timings.get("prompt_n", e.usage.get("prompt_tokens")) if e.timings else e.usage.get("prompt_tokens")
               for e in exchanges]
    values = [int(v) for v in counted if isinstance(v, (int, float))]
    return sum(values) if values else None


def _model_seconds(exchanges: list[Exchange]) -> float | None:
    """Seconds the model server says it spent reading the prompts and writing the answers (llama.cpp's
    ``timings``), or None where a server reports none."""
    spans = [e.timings.get("prompt_ms", 0) + e.timings.get("predicted_ms", 0) for e in exchanges if e.timings]
    return round(sum(spans) / 1000, 1) if spans else None


def run_agent(name: str, rules: Rules, target: Target, proxy: RecordingProxy, out: Path,
              timeout_s: float, pi: Path | None, probe_timeout_s: float = 900.0,
              baseline_root: Path | None = None, read_loop_files: int = READ_LOOP_FILES,
              probes: bool = True, repeat: int = 0, recall: tuple[bool, ...] = (True,)) -> dict[str, Any]:
    """Compact one transcript with one agent, then ask every probe (the baseline agent is timed on its
    compaction alone); returns the scores and raw paths."""
    scratch = out / rules.name / name
    scratch.mkdir(parents=True, exist_ok=True)
    root = baseline_root if name == BASELINE and baseline_root is not None else ROOT
    agent = Agent(name, scratch, target, proxy.base_url, timeout_s, pi, root)
    agent.probe_timeout_s = probe_timeout_s
    agent.read_loop_files = read_loop_files
    try:
        return _compact_and_ask(agent, rules, proxy, scratch, probes, repeat, recall)
    finally:
        agent.close()


def _compact_and_ask(agent: Agent, rules: Rules, proxy: RecordingProxy, scratch: Path,
                     probes: bool = True, repeat: int = 0, recall: tuple[bool, ...] = (True,)) -> dict[str, Any]:
    name, label = agent.name, agent.label
    session = prepare_session(rules.transcript, scratch / "session.jsonl", agent.project)
    proxy.tag = f"{rules.name}/{label}/compact" + (f"/repeat-{repeat}" if repeat else "")  # the proxy keeps all
    proxy.floor = label in FLOORS
    try:
        ran = agent.compact(session)
    finally:
        proxy.floor = False
    exchanges = proxy.take(proxy.tag)
    _write_exchanges(scratch / "requests.jsonl", exchanges)
    (scratch / "compact.stdout").write_text(ran.stdout, encoding="utf-8")
    (scratch / "compact.stderr").write_text(ran.stderr, encoding="utf-8")
    entry = last_compaction(session) or {}
    summary = str(entry.get("summary") or "")
    (scratch / "summary.md").write_text(summary, encoding="utf-8")
    (scratch / "compaction.json").write_text(
        json.dumps({k: v for k, v in entry.items() if k != "retainedTail"}, indent=1), encoding="utf-8")
    prose = facts_kept(rules, summary)
    summarizer = [e for e in exchanges if e.kind == "summarizer"]
    # The model's own text: every summary request's reply, in order (a second, short request's lines, a
    # gate's retry, a chunk's running summary); a retry the gate rejected is counted too.
    answer = "\n\n".join(e.reply for e in summarizer)
    (scratch / "model_answer.md").write_text(answer, encoding="utf-8")
    whole = facts_kept_whole(rules, summary)
    details = entry.get("details") or {}
    result: dict[str, Any] = {
        "exit": ran.code, "compaction_s": round(ran.seconds, 1), "first_kept_entry_id": entry.get("firstKeptEntryId"),
        "summary_chars": len(summary), "facts_kept": len(prose), "facts_total": len(rules.facts),
        "facts_kept_whole": len(whole), "facts_whole_ids": whole,
        "facts_model_only_ids": kept(rules, model_only(summary)), "facts_answer_ids": kept(rules, answer),
        "facts_kept_ids": prose, "facts_lost": [f["id"] for f in rules.facts if f["id"] not in prose],
        "summarizer_requests": len(summarizer), "summarizer_prompt_tokens": _prompt_tokens(summarizer),
        "summarizer_server_s": round(sum(e.seconds for e in summarizer), 1),
        "summarizer_model_s": _model_seconds(summarizer),
        "summarizer_timings": [{"usage": e.usage, "timings": e.timings, "seconds": round(e.seconds, 2)}
                               for e in summarizer],
        "fallback": bool(details.get("fallback")), "quality_gate": details.get("qualityGate"),
        "probes": [], "probes_recall_off": [],
    }
    result["probes_total"] = len(rules.probes)
    if name in READ_LOOPS:  # the loop's own count; a run that only cleared has no compaction to time
        loop = _last_json(ran.stdout)
        result["read_loop"] = loop
        result["compaction_s"] = loop.get("compact_s", result["compaction_s"])
    if name == BASELINE:
        result["probes_skipped"] = "the baseline is timed on its compaction only"
        return result
    if not probes:
        result["probes_skipped"] = "--no-probes: timed and scored on the compaction only"
        return result
    if not entry and name not in READ_LOOPS:  # asking the uncompacted session would measure something else
        result["probes_right"] = 0
        result["probes_skipped"] = "no compaction entry was written"
        return result
    # pi-compact is asked with automatic recall off (what the summary kept) and on (what the user gets); pi
    # has no automatic recall, so it is asked once.
    passes = recall if name.startswith("ours") else (True,)
    for on in passes:
        if name.startswith("ours"):
            agent.auto_recall(on)
        where = "probes" if on else "probes-recall-off"
        (scratch / where).mkdir(exist_ok=True)
        for probe in rules.probes:
            copy = scratch / f"{where}-{probe['id']}.jsonl"
            shutil.copyfile(session, copy)
            before = line_count(copy)
            proxy.tag = f"{rules.name}/{label}/{probe['id']}" + ("" if on else "/recall-off")
            asked = agent.ask(copy, probe["question"])
            _write_exchanges(scratch / "requests.jsonl", proxy.take(proxy.tag))
            answer = asked.stdout.strip()
            right = probe_right(probe, answer)
            (scratch / where / f"{probe['id']}.txt").write_text(
                f"Q: {probe['question']}\nexit: {asked.code}, {asked.seconds:.1f} s, fully right: {right}\n\n"
                f"{answer}\n\n--- stderr ---\n{asked.stderr[-4000:]}", encoding="utf-8")
            result["probes" if on else "probes_recall_off"].append(
                {"id": probe["id"], "right": right, "exit": asked.code, "seconds": round(asked.seconds, 1),
                 "tool_calls": tool_calls_after(copy, before), "answer": answer[:2000]})
    result["probes_right"] = sum(p["right"] for p in result["probes"])
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--target", choices=("scripted", "local"), help="a built-in model target")
    parser.add_argument("--model", help="any other model: ours as this litellm string (openai/NAME), pi as NAME")
    parser.add_argument("--api-base", help="its OpenAI-compatible base URL (with --model)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding its key")
    parser.add_argument("--context-window", type=int, default=16384)
    parser.add_argument("--max-tokens", type=int, default=4096, help="the model's max output (with --model)")
    parser.add_argument("--transcripts", nargs="+",
                        help=f"names in data/, or first, wide, all (default: wide = {' '.join(WIDE)})")
    parser.add_argument("--agents", default="ours,pi",
                        help="ours,pi (pi is skipped when not installed); ours-reads,ours-reads-off: a live loop of "
                             "file reads with tool-result clearing on / off instead of compact FILE, then the probes; "
                             "ours-prefix,ours-serialized: a chat turn "
                             "first, then the compaction on its prefix or serialized (issue 24)")
    parser.add_argument("--cold-summaries", action="store_true",
                        help="summary requests skip llama.cpp's prompt cache (always with --baseline-root)")
    parser.add_argument("--read-loop-files", type=int, default=READ_LOOP_FILES,
                        help="files the ours-reads agents read, one turn each")
    parser.add_argument("--baseline-root", type=Path,
                        help=f"another pi-compact checkout: adds the agent {BASELINE}, compacted with that code "
                             "after the others on each transcript and timed, with no probes")
    parser.add_argument("--no-probes", action="store_true",
                        help="compact and score the summary only: a timing run, minutes per transcript")
    parser.add_argument("--repeat", type=int, default=1,
                        help="compact each transcript this many times per agent, the agents in turn (the repeats "
                             "ask no probes): a load spike on a shared machine shows as one slow run of several")
    parser.add_argument("--pi-cli", help="pi's dist/cli.js (default: $PI_CLI or node_modules/ here)")
    parser.add_argument("--results", type=Path, help="results directory (default benchmarks/.cache/eval/<time>)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a compaction may take")
    parser.add_argument("--recall", choices=tuple(RECALL_PASSES), default="on",
                        help="pi-compact's probes with automatic recall on, off, or both (asked twice)")
    parser.add_argument("--floor-probes", default="",
                        help="the code-only floors whose probes are asked too: ours-floor, pi-floor or both "
                             "(comma-separated; default none)")
    parser.add_argument("--save", metavar="NAME",
                        help="also keep the small raw outputs (summaries, model answers, probe answers, scores, "
                             "server timings) under benchmarks/eval/results/NAME/ with the commit they ran on")
    parser.add_argument("--probe-timeout", type=float, default=900.0,
                        help="seconds a probe may take; then it is stopped and counted as not right")
    args = parser.parse_args(argv)
    if bool(args.target) == bool(args.model):
        parser.error("give --target or --model (with --api-base)")
    if args.model and not args.api_base:
        parser.error("--model needs --api-base")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    names = [name for given in (args.transcripts or ["wide"]) for name in SETS.get(given, (given,))]
    have = [*available(), *R5]
    unknown = set(names) - set(have)
    if unknown:
        raise SystemExit(f"unknown transcripts: {', '.join(sorted(unknown))} (have: {', '.join(have)})")
    pi = pi_cli(args.pi_cli)
    agents = [a for a in args.agents.split(",")
              if a in ("ours", "ours-floor", *REUSE_MODES, *READ_LOOPS) or (a in ("pi", "pi-floor") and pi is not None)]
    if args.baseline_root is not None:
        agents.append(BASELINE)
    skipped = "pi is not installed (pass --pi-cli)" if "pi" in args.agents and pi is None else None
    saved = (keep.start(args.save, ROOT, sys.argv[1:] if argv is None else argv, args.baseline_root)
             if args.save else None)
    out = (args.results or ROOT / "benchmarks" / ".cache" / "eval" / time.strftime("%Y%m%d-%H%M%S")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    scripted = ScriptedTarget() if args.target == "scripted" else None
    if scripted is not None:
        target = scripted.target()
    elif args.target == "local":
        target = local_target(args.context_window)
    else:
        target = custom_target(args.model, args.api_base, args.api_key_env, args.context_window, args.max_tokens)
    cold = args.cold_summaries or args.baseline_root is not None  # times compared need one footing
    proxy = RecordingProxy(target.upstream, target.upstream_key, target.temperature, cold).start()
    results = []
    try:
        for name in names:
            rules = load_rules(name)
            if scripted is not None:
                scripted.current = rules
            result: dict[str, Any] = {"transcript": name, "expected_cut": rules.cut_entry_id, "agents": {},
                                      "fact_kinds": {f["id"]: f["kind"] for f in rules.facts},
                                      "probe_facts": {p["id"]: list(p["facts"]) for p in rules.probes}}
            result["info"] = {k: v for k, v in (rules.info or {}).items() if k not in ("facts", "probes")}
            result["facts"] = [{"id": f["id"], "kind": f["kind"], "source": f.get("source", "—"),
                                "since_previous": f.get("since_previous", False)} for f in rules.facts]
            for agent in agents:
                print(f"{name}: {agent}…", file=sys.stderr, flush=True)
                asks = not args.no_probes and (agent not in FLOORS or agent in args.floor_probes.split(","))
                result["agents"][agent] = run_agent(agent, rules, target, proxy, out, args.timeout, pi,
                                                    args.probe_timeout, args.baseline_root, args.read_loop_files,
                                                    asks, recall=RECALL_PASSES[args.recall])
            for again in range(1, args.repeat):  # the agents in turn once more, compaction only
                for agent in [a for a in agents if a not in FLOORS]:
                    print(f"{name}: {agent} (repeat {again})…", file=sys.stderr, flush=True)
                    rerun = run_agent(agent, rules, target, proxy, out / f"repeat-{again}", args.timeout, pi,
                                      args.probe_timeout, args.baseline_root, args.read_loop_files, False, again)
                    result["agents"][agent].setdefault("repeats", []).append(
                        {k: rerun[k] for k in ("compaction_s", "summarizer_model_s", "facts_kept_whole")})
            cuts = {data["first_kept_entry_id"] for data in result["agents"].values()}
            result["same_cut"] = len(cuts) == 1 and rules.cut_entry_id in cuts
            results.append(result)
            (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
            if saved is not None:
                keep.transcript(out, saved, result)
    finally:
        proxy.stop()
        if scripted is not None:
            scripted.stop()
    meta = {"target": target.name, "model": target.ours, "window": target.window, "agents": agents,
            "skipped": skipped, "argv": sys.argv[1:] if argv is None else argv}
    text = (table(results, agents) + "\n" + kind_table(results, agents) + "\n" + notes(results) + "\n"
            + all_tables(results))
    (out / "table.md").write_text(f"<!-- {json.dumps(meta)} -->\n" + text, encoding="utf-8")
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1), encoding="utf-8")
    if saved is not None:
        keep.finish(saved, meta, results, all_tables(results))
    print(text + (f"\n{skipped}\n" if skipped else "") + f"\nraw outputs: {out}" +
          (f"\nkept for the repository: {saved}" if saved else ""))
    return {"meta": meta, "results": results, "dir": str(out)}


if __name__ == "__main__":
    main()
