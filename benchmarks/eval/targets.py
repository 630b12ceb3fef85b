"""Model targets of the eval: where the recording proxy forwards to, and what model id the agents use.

- ``scripted``: the tests' scripted OpenAI-compatible server with a route that answers every
  summarizer request with a canned summary holding the first ``SCRIPTED_KEPT`` facts of the current
  transcript, and every chat turn as a perfect reader would: the probe's right answer when each of
  its facts is in the request's context, else "I do not know." Fast and deterministic (CI).
- ``local``: one xllamacpp server with the embedded model, started through the product's public
  ``llm.local.server`` functions (our chat template, greedy sampling, repeat penalty), 16,384 tokens.
- ``custom``: any OpenAI-compatible base URL, with its key read from an environment variable.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxy import request_kind
from scoring import Rules

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED_KEPT = 7  # facts the canned summary states (the first seven of the transcript's list)
UNKNOWN = "I do not know."
READ_PROMPT = re.compile(r"^Read (\S+), then reply with one sentence", re.MULTILINE)


@dataclass(frozen=True)
class Target:
    """Where to send requests and how to describe the model to both agents."""

    name: str
    upstream: str  # OpenAI-compatible base URL (``.../v1``)
    upstream_key: str
    model_id: str  # pi's model id; ours is ``openai/<model_id>`` unless ``ours_model`` says otherwise
    window: int
    max_tokens: int
    ours_model: str = ""
    temperature: float | None = 0.0

    @property
    def ours(self) -> str:
        return self.ours_model or f"openai/{self.model_id}"


def _text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return "\n".join(parts)


def canned_summary(rules: Rules, kept: int = SCRIPTED_KEPT) -> str:
    """A summary in pi's six sections that states the first ``kept`` facts word for word."""
    facts = rules.facts[:kept]
    bullets = "\n".join(f"- {f['statement']}" for f in facts)
    from pi_compact.compaction.prompts import HISTORY_HEADINGS  # a heading added there is answered here too

    bodies = {"## Goal": f"- Finish the work on {rules.name}.", "## Constraints & Preferences": bullets,
              "## Progress": "### Done\n- [x] Earlier turns.\n\n### In Progress\n- [ ] (none)\n\n### Blocked\n- (none)",
              "## Key Decisions": "- **Scripted**: canned for the eval.", "## Next Steps": "1. Continue."}
    return "\n\n".join(f"{heading}\n{bodies.get(heading, '- (none)')}" for heading in HISTORY_HEADINGS)


class ScriptedTarget:
    """The scripted server, routed by the transcript the harness is on (``current``)."""

    def __init__(self) -> None:
        sys.path.insert(0, str(ROOT / "tests"))
        from scripted_server import Reply, ScriptedServer, ToolCallReply

        self._reply = Reply
        self._call = ToolCallReply
        self.current: Rules | None = None
        self.server = ScriptedServer()
        self.server.route = self._route
        self.server.start()

    def target(self) -> Target:
        return Target("scripted", self.server.base_url, "sk-scripted", "fake-model", 16384, 4096)

    def _route(self, body: dict[str, Any]) -> Any:
        rules = self.current
        if rules is None:
            return self._reply(text=UNKNOWN)
        text = _text(body)
        if request_kind(body) == "summarizer":  # serialized, or asked on the chat prefix
            return self._reply(text=canned_summary(rules), prompt_tokens=len(text) // 4, completion_tokens=300)
        path, read = _read_asked(body.get("messages", []))
        if path is not None:  # the read loop: read the file it names, then say one sentence about it
            if read:
                return self._reply(text="It holds small helper functions.", prompt_tokens=len(text) // 4)
            return self._reply(tool_calls=(self._call("read", {"path": path}),), prompt_tokens=len(text) // 4)
        asked = _last_user(body)
        for probe in rules.probes:
            if probe["question"] in asked:
                facts = [f for f in rules.facts if f["id"] in probe["facts"]]
                known = all(re.search(f["regex"], text, re.IGNORECASE) for f in facts)
                return self._reply(text=probe["answer"] if known else UNKNOWN, prompt_tokens=len(text) // 4)
        return self._reply(text=UNKNOWN)

    def stop(self) -> None:
        self.server.stop()


def _read_asked(messages: list[dict[str, Any]]) -> tuple[str | None, bool]:
    """The path the read loop's prompt names in the current turn (None: not such a turn), and whether its
    result is already there. The turn is everything after the newest assistant answer; automatic recall may
    have put its excerpts after the prompt as one more user message."""
    read = False
    for message in reversed(messages):
        role = message.get("role")
        if role == "tool":
            read = True
        elif role == "assistant" and not message.get("tool_calls"):
            return None, False
        elif role == "user":
            found = READ_PROMPT.search(_text({"messages": [message]}))
            if found:
                return found.group(1), read
    return None, False


def _last_user(body: dict[str, Any]) -> str:
    """The question: the last user message, or the one before it when pi-compact's automatic recall
    attached its excerpts after the question (they come as one trailing user message)."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _text({"messages": users[-2:]})


def local_target(window: int = 16384) -> Target:
    """Start (or reuse) the embedded model's server in this process; stops with the process."""
    sys.path.insert(0, str(ROOT))
    from pi_compact.llm.local import server as local_server

    server = local_server.shared_server(local_server.ServerSpec(window=window))
    base = server.wait()
    if base is None:
        raise SystemExit("the local model server did not start")
    return Target("local", base, server.api_key, "local", window, local_server.MAX_OUTPUT_TOKENS)


def custom_target(model: str, api_base: str, key_env: str, window: int, max_tokens: int) -> Target:
    """Any OpenAI-compatible server; ``model`` is ours (``openai/x``), pi gets the part after the slash."""
    return Target("custom", api_base.rstrip("/"), os.environ.get(key_env, "sk-none"), model.split("/", 1)[-1],
                  window, max_tokens, ours_model=model)
