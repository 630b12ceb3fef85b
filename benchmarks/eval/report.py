"""The side-by-side markdown table of an eval run (from the per-transcript result objects)."""

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
