"""The side-by-side markdown tables of an eval run (from the per-transcript result objects): one row
per transcript (`table`), one row per kind of fact (`kind_table`), and what neither shows (`notes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _cell(result: dict[str, Any], agent: str, key: str) -> Any:
    return result["agents"].get(agent, {}).get(key)


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def table(results: Sequence[dict[str, Any]], agents: Sequence[str]) -> str:
    """One row per transcript and a total: facts kept, probes fully right, summarizer requests,
    compaction seconds, the summarizer's prompt tokens as the server counted them, each per agent."""
    columns = [("facts kept", "facts_kept", "facts_total"), ("probes fully right", "probes_right", "probes_total"),
               ("summarizer requests", "summarizer_requests", None), ("compaction s", "compaction_s", None),
               ("summarizer prompt tokens", "summarizer_prompt_tokens", None)]
    head = ["transcript"] + [f"{label} ({agent})" for label, _, _ in columns for agent in agents] + ["same cut"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    totals: dict[tuple[str, str], float] = {}
    for result in results:
        row = [result["transcript"]]
        for _, key, of in columns:
            for agent in agents:
                value = _cell(result, agent, key)
                if isinstance(value, (int, float)):
                    totals[(agent, key)] = totals.get((agent, key), 0) + value
                    if of:
                        totals[(agent, of)] = totals.get((agent, of), 0) + (_cell(result, agent, of) or 0)
                text = _fmt(value)
                row.append(f"{text} / {_cell(result, agent, of)}" if of and value is not None else text)
        row.append(_fmt(result.get("same_cut")))
        lines.append("| " + " | ".join(row) + " |")
    if len(results) > 1:
        row = ["**total**"]
        for _, key, of in columns:
            for agent in agents:
                value = totals.get((agent, key))
                text = _fmt(round(value, 1) if isinstance(value, float) else value)
                row.append(f"**{text} / {int(totals.get((agent, of), 0))}**" if of and value is not None else
                           f"**{text}**")
        row.append("")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def notes(results: Sequence[dict[str, Any]]) -> str:
    """What the table cannot show: cuts that differ, fallbacks, failed commands, lost facts."""
    out = []
    for result in results:
        for agent, data in result["agents"].items():
            if data.get("exit") not in (0, None):
                out.append(f"- {result['transcript']} / {agent}: compaction exited {data['exit']}"
                           f"{' (model-free fallback)' if data.get('fallback') else ''}")
            if data.get("first_kept_entry_id") != result["expected_cut"]:
                out.append(f"- {result['transcript']} / {agent}: cut at {data.get('first_kept_entry_id')}, "
                           f"expected {result['expected_cut']}")
            if data.get("probes_skipped"):
                out.append(f"- {result['transcript']} / {agent}: probes not asked: {data['probes_skipped']}")
            lost = data.get("facts_lost")
            if lost:
                out.append(f"- {result['transcript']} / {agent}: lost {', '.join(lost)}")
    return "\n".join(out) + ("\n" if out else "")


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def kind_table(results: Sequence[dict[str, Any]], agents: Sequence[str]) -> str:
    """Per kind of fact (issue 33), summed over the transcripts: facts kept, the questions on that kind
    answered fully right (a question counts for each kind of the facts it asks about), and the tool
    calls the agent made per such question (mean). Below it, per agent, the median of tool calls on
    the questions the summary could answer (every fact the question asks about was kept)."""
    kinds: list[str] = []  # in the order they first appear
    for result in results:
        for kind in result.get("fact_kinds", {}).values():
            if kind not in kinds:
                kinds.append(kind)
    if not kinds:
        return ""
    head = ["kind"] + [f"{label} ({agent})" for label in ("facts kept", "questions right", "tool calls / question")
                       for agent in agents]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    answerable: dict[str, list[float]] = {agent: [] for agent in agents}
    cells: dict[tuple[str, str], list[int]] = {}  # (kind, agent) -> [kept, facts, right, asked, calls, counted]
    for result in results:
        kind_of = result.get("fact_kinds", {})
        probe_facts = result.get("probe_facts", {})
        for agent in agents:
            data = result["agents"].get(agent)
            if not data:
                continue
            kept = set(data.get("facts_kept_ids", ()))
            for fact, kind in kind_of.items():
                cell = cells.setdefault((kind, agent), [0, 0, 0, 0, 0, 0])
                cell[0] += fact in kept
                cell[1] += 1
            for probe in data.get("probes", ()):
                facts = probe_facts.get(probe["id"], ())
                calls = probe.get("tool_calls")
                for kind in {kind_of[f] for f in facts if f in kind_of}:
                    cell = cells.setdefault((kind, agent), [0, 0, 0, 0, 0, 0])
                    cell[2] += bool(probe["right"])
                    cell[3] += 1
                    if isinstance(calls, int):
                        cell[4] += calls
                        cell[5] += 1
                if isinstance(calls, int) and facts and set(facts) <= kept:
                    answerable[agent].append(calls)
    for kind in kinds:
        row = [kind]
        got = {agent: cells.get((kind, agent), [0, 0, 0, 0, 0, 0]) for agent in agents}
        row += [f"{got[a][0]} / {got[a][1]}" for a in agents]
        row += [f"{got[a][2]} / {got[a][3]}" if got[a][3] else "—" for a in agents]
        row += [f"{got[a][4] / got[a][5]:.1f}" if got[a][5] else "—" for a in agents]
        lines.append("| " + " | ".join(row) + " |")
    text = "\n".join(lines) + "\n"
    for agent in agents:
        median = _median(answerable[agent])
        text += (f"\nTool calls on questions the summary could answer ({agent}): median {_fmt(median)} "
                 f"over {len(answerable[agent])} questions")
    return text + "\n"
