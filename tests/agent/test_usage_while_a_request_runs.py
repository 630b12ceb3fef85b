"""The context figure while a request runs, after an older tool result sent cut was cleared (issue 44's
fifth walk: the toolbar said "ctx 3,984/16,384" while the server read a 14,969-token request).

The reply that anchors the count answered a request that carried the older result cut; clearing it takes
that cut's size off, not the whole result's. Once the next request is sent, what "the last request carried"
is that new request, so the whole size was taken off: ~11,525 less 9,651 where 2,110 was right.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from agent_harness import SETTINGS, make_harness
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.events import Notice
from pi_compact.compaction.tokens import estimate_text_tokens


def _notes(first: int, lines: int) -> str:
    return "\n".join(f"- meeting {n}: 3 4 5 6 7 8 9 notes of the day" for n in range(first, first + lines))


def test_the_context_figure_while_a_request_runs_takes_off_a_cleared_results_cut_size_not_its_whole(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = make_harness(scripted_server, tmp_path, settings=SETTINGS)
    (h.cwd / "NOTES.md").write_text(_notes(1, 900))  # ~12k tokens: sent cut to a fifth of the 10k window
    (h.cwd / "MORE.md").write_text(_notes(2000, 420))  # ~5.8k tokens: sent whole, and the cut one is cleared
    seen: list[int] = []

    def watch() -> None:  # the figure the toolbar reads while the third request is under way
        while len(scripted_server.requests) < 3:
            time.sleep(0.01)
        seen.append(h.session.context_usage().tokens)

    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=300),
                            Reply(tool_calls=(ToolCallReply("read", {"path": "MORE.md"}),), prompt_tokens=2_600),
                            Reply(text="Meeting 2 took notes.", prompt_tokens=6_500, delay_s=1.0))
    watcher = threading.Thread(target=watch)
    watcher.start()
    h.session.prompt("What happened at meeting 2 and at meeting 2005?")
    watcher.join(5)
    assert [e for e in h.events if isinstance(e, Notice) and e.text.startswith("Cleared 1 old tool result")]
    more = estimate_text_tokens(_notes(2000, 420))
    assert seen and seen[0] >= more  # the request carries MORE.md whole: the context is at least that
