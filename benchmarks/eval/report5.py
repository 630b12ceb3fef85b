"""Issue 41's tables of an eval run: what the model kept beside what code alone kept, on trained and on
held-out wordings, and the probes with automatic recall off and on.

Every table is computed from per-transcript result objects (``run_eval.py``'s, or ``recompute.py``'s,
which scores the kept text files again). Columns per agent (``ours``, ``pi``) and its code-only floor
(``ours-floor``, ``pi-floor``: the same run with a summarizer that writes nothing):
- facts **whole** (the summary as the next model reads it), **prose** (file lists removed), **model only**
  (every tagged block the code appends removed), **answer** (the model's own reply, from the proxy);
- probes **off**: asked with automatic recall off and answered right with no tool call (what the summary
  kept; pi has no automatic recall, its one pass counts); **on**: answered right as the user asks them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

AGENTS = ("ours", "ours-floor", "pi", "pi-floor")
SCORES = (("whole", "facts_whole_ids"), ("prose", "facts_kept_ids"), ("model only", "facts_model_only_ids"),
          ("answer", "facts_answer_ids"))


def _agent(result: dict[str, Any], agent: str) -> dict[str, Any] | None:
    return result["agents"].get(agent)


def _facts(result: dict[str, Any], agent: str, key: str, keep: Callable[[dict[str, Any]], bool] | None = None
           ) -> tuple[int, int] | None:
    data = _agent(result, agent)
    if data is None or key not in data:
        return None
    facts = [f for f in result["facts"] if keep is None or keep(f)]
    ids = set(data[key])
    return sum(f["id"] in ids for f in facts), len(facts)


def probes(result: dict[str, Any], agent: str, recall: bool) -> tuple[int, int] | None:
    """(right, asked) with recall on, or off (right with no tool call); None when not asked."""
    data = _agent(result, agent)
    if data is None:
        return None
    pi_like = not agent.startswith("ours")
    asked = data.get("probes") if recall or pi_like else data.get("probes_recall_off")
    if not asked:
        return None
    right = sum(bool(p["right"]) and (recall or p.get("tool_calls") == 0) for p in asked)
    return right, len(asked)


def _cell(value: Sequence[int] | None) -> str:
    return "—" if value is None else f"{value[0]} / {value[1]}"


def _add(total: dict[str, list[int]], key: str, value: tuple[int, int] | None) -> None:
    if value is not None:
        cell = total.setdefault(key, [0, 0])
        cell[0] += value[0]
        cell[1] += value[1]


def _split(result: dict[str, Any]) -> str:
    return str(result.get("info", {}).get("split") or "—")


def facts_table(results: Sequence[dict[str, Any]], agents: Sequence[str]) -> str:
    """Per transcript: facts kept, four ways for each agent, the floor's whole beside it."""
    columns = [(agent, label, key) for agent in agents for label, key in SCORES
               if not (agent.endswith("-floor") and label in ("prose", "answer"))]
    head = ["transcript", "split"] + [f"{agent} {label}" for agent, label, _ in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    totals: dict[str, list[int]] = {}
    for result in results:
        row = [result["transcript"], _split(result)]
        for agent, label, key in columns:
            value = _facts(result, agent, key)
            _add(totals, f"{agent} {label}", value)
            row.append(_cell(value))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| **total** | | " + " | ".join(f"**{_cell(totals[f'{a} {label}'])}**" if f"{a} {label}" in totals
                                              else "—" for a, label, _ in columns) + " |")
    return "\n".join(lines) + "\n"


def probes_table(results: Sequence[dict[str, Any]], agents: Sequence[str]) -> str:
    head = ["transcript", "split"] + [f"{agent} recall {mode}" for agent in agents for mode in ("off", "on")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    totals: dict[str, list[int]] = {}
    for result in results:
        row = [result["transcript"], _split(result)]
        for agent in agents:
            for mode in (False, True):
                value = probes(result, agent, mode)
                _add(totals, f"{agent} {mode}", value)
                row.append(_cell(value))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| **total** | | " + " | ".join(
        f"**{_cell(totals[f'{a} {m}'])}**" if f"{a} {m}" in totals else "—"
        for a in agents for m in (False, True)) + " |")
    return "\n".join(lines) + "\n"


def _twin(transcript: str) -> str:
    """The session a transcript words: ``r5-go-renew`` for ``r5-go-renew-t`` and ``r5-go-renew-h``."""
    return transcript[:-2] if transcript.endswith(("-t", "-h")) else transcript


def split_table(results: Sequence[dict[str, Any]], agents: Sequence[str]) -> str:
    """Trained against held-out wordings, summed over the sessions whose two wordings were both run for the
    agent (a run stopped half-way leaves a twin alone, which would compare different sessions): facts whole,
    model only and the model's answer, probes on."""
    measures = [(f"{agent} facts {label}", agent, key) for agent in agents
                for label, key in (("whole", "facts_whole_ids"), ("model only", "facts_model_only_ids"),
                                   ("answer", "facts_answer_ids"))
                if not (agent.endswith("-floor") and label == "answer")]
    lines = ["| measure | trained | held-out | held-out / trained |", "|---|---|---|---|"]
    for label, agent, key in measures + [(f"{a} probes recall on", a, "") for a in agents]:
        values = {r["transcript"]: probes(r, agent, True) if not key else _facts(r, agent, key) for r in results}
        sums: dict[str, list[int]] = {}
        for result in results:
            twins = [t for t in values if t != result["transcript"] and _twin(t) == _twin(result["transcript"])]
            if values[result["transcript"]] is not None and any(values[t] is not None for t in twins):
                _add(sums, _split(result), values[result["transcript"]])
        if not sums:
            continue
        t, h = sums.get("trained"), sums.get("held-out")
        ratio = f"{(h[0] / h[1]) / (t[0] / t[1]):.2f}" if t and h and t[0] and t[1] and h[1] else "—"
        lines.append(f"| {label} | {_cell(t)} | {_cell(h)} | {ratio} |")
    return "\n".join(lines) + "\n"


def group_table(results: Sequence[dict[str, Any]], agents: Sequence[str], by: str) -> str:
    """Facts kept per ``kind`` or per ``source`` (where the fact lives), whole and the model's answer."""
    groups: list[str] = []
    for result in results:
        for fact in result["facts"]:
            group = _group(fact, by)
            if group not in groups:
                groups.append(group)
    columns = [(agent, label, key) for agent in agents
               for label, key in (("whole", "facts_whole_ids"), ("answer", "facts_answer_ids"))
               if not (agent.endswith("-floor") and label == "answer")]
    head = [by] + [f"{agent} {label}" for agent, label, _ in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in groups:
        row = [group]
        for agent, _label, key in columns:
            sums: dict[str, list[int]] = {}
            for result in results:
                _add(sums, "x", _facts(result, agent, key, lambda f, g=group: _group(f, by) == g))  # type: ignore[misc]
            row.append(_cell(sums.get("x")))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _group(fact: dict[str, Any], by: str) -> str:
    if by == "source":
        return str(fact.get("source", "—")) + (" (new since the previous summary)" if fact.get("since_previous")
                                               else "")
    return str(fact.get(by, "—"))


def time_table(results: Sequence[dict[str, Any]], agents: Sequence[str]) -> str:
    """The summarizer's server time (llama.cpp's prompt_ms + predicted_ms), the fastest of the repeats."""
    timed = [a for a in agents if not a.endswith("-floor")]
    head = ["transcript"] + [f"{a} model s (fastest of n)" for a in timed]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    totals = dict.fromkeys(timed, 0.0)
    for result in results:
        row = [result["transcript"]]
        for agent in timed:
            data = _agent(result, agent) or {}
            runs = [s for s in [data.get("summarizer_model_s"), *[r.get("summarizer_model_s")
                                                                   for r in data.get("repeats", ())]] if s]
            totals[agent] += min(runs) if runs else 0
            row.append(f"{min(runs):.1f} ({len(runs)})" if runs else "—")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| **total** | " + " | ".join(f"**{totals[a]:.1f}**" for a in timed) + " |")
    return "\n".join(lines) + "\n"


def all_tables(results: Sequence[dict[str, Any]]) -> str:
    agents = [a for a in (*AGENTS, "ours-base") if any(a in r["agents"] for r in results)]
    parts = [("Facts kept", facts_table(results, agents)), ("Probes answered", probes_table(results, agents)),
             ("Trained against held-out wordings", split_table(results, agents)),
             ("Facts kept per kind", group_table(results, agents, "kind")),
             ("Facts kept per source", group_table(results, agents, "source")),
             ("Summarizer time (server)", time_table(results, agents))]
    return "\n".join(f"### {title}\n\n{text}" for title, text in parts)
