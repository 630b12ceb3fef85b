"""Small builders for messages and session entries in pi's JSON shape, for the deterministic tests.

Messages are plain dicts (``user``, ``assistant``, ``tool_result``, ``bash_execution``...). Entry
builders return dicts without ``id``/``parentId`` unless given; ``chain`` then numbers them
``test-id-0``, ``test-id-1``... (like pi's own compaction tests) and links each to the one before.
A bare message passed to ``chain`` is wrapped in a ``message`` entry. Sizes are easy to control:
``sized(n_tokens)`` is text whose chars4 estimate is exactly ``n_tokens``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Entry = dict[str, Any]

PROVIDER = "anthropic"
MODEL = "claude-sonnet-4-5"
TIMESTAMP = "2025-01-01T00:00:00.000Z"
TIMESTAMP_MS = 1735689600000  # TIMESTAMP as epoch milliseconds

_KEEP = object()  # "leave this key to chain()"


def sized(tokens: int, char: str = "x") -> str:
    """ASCII text whose chars/4 estimate is exactly ``tokens``."""
    return char * (4 * tokens)


# ---- messages ------------------------------------------------------------------------------------


def usage(
    input: int = 0, output: int = 0, cache_read: int = 0, cache_write: int = 0, total: int | None = None
) -> dict[str, Any]:
    """A usage record; ``totalTokens`` is the sum of the parts unless given (as pi's tests do)."""
    total_tokens = input + output + cache_read + cache_write if total is None else total
    return {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": total_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def user(text: str, *, timestamp: int = TIMESTAMP_MS) -> dict[str, Any]:
    """A user message with string content."""
    return {"role": "user", "content": text, "timestamp": timestamp}


def user_blocks(*blocks: Mapping[str, Any], timestamp: int = TIMESTAMP_MS) -> dict[str, Any]:
    """A user message with block content (see ``text_block`` / ``image_block``)."""
    return {"role": "user", "content": [dict(b) for b in blocks], "timestamp": timestamp}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_block(data: str = "iVBORw0KGgo=", mime_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime_type}


def thinking_block(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text}


def tool_call(name: str, arguments: Mapping[str, Any], call_id: str = "call-1") -> dict[str, Any]:
    """A toolCall content block."""
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": dict(arguments)}


def assistant(
    text: str = "",
    *,
    usage: Mapping[str, Any] | None = None,
    stop_reason: str = "stop",
    tool_calls: Iterable[Mapping[str, Any]] = (),
    thinking: str | None = None,
    content: Sequence[Mapping[str, Any]] | None = None,
    provider: str = PROVIDER,
    model: str = MODEL,
    timestamp: int = TIMESTAMP_MS,
) -> dict[str, Any]:
    """An assistant message: [thinking?, text?, *tool_calls], or exactly ``content`` when given."""
    if content is None:
        blocks: list[dict[str, Any]] = []
        if thinking is not None:
            blocks.append(thinking_block(thinking))
        if text:
            blocks.append(text_block(text))
        blocks.extend(dict(call) for call in tool_calls)
    else:
        blocks = [dict(block) for block in content]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": blocks,
        "api": "openai-completions",
        "provider": provider,
        "model": model,
        "usage": dict(usage) if usage is not None else _usage_default(),
        "stopReason": stop_reason,
        "timestamp": timestamp,
    }
    if stop_reason in ("error", "aborted"):
        message["errorMessage"] = "request failed" if stop_reason == "error" else "aborted by user"
    return message


def _usage_default() -> dict[str, Any]:
    return usage(0, 0)


def tool_result(
    text: str = "",
    *,
    tool_call_id: str = "call-1",
    tool_name: str = "bash",
    images: int = 0,
    is_error: bool = False,
    timestamp: int = TIMESTAMP_MS,
) -> dict[str, Any]:
    """A toolResult message: one text block (if any text) plus ``images`` image blocks."""
    blocks: list[dict[str, Any]] = [text_block(text)] if text else []
    blocks.extend(image_block() for _ in range(images))
    return {
        "role": "toolResult",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "content": blocks,
        "isError": is_error,
        "timestamp": timestamp,
    }


def bash_execution(
    command: str,
    output: str,
    *,
    exit_code: int | None = 0,
    exclude: bool = False,
    timestamp: int = TIMESTAMP_MS,
) -> dict[str, Any]:
    """A ``!command`` run by the user (agent role bashExecution)."""
    message: dict[str, Any] = {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": exit_code,
        "cancelled": False,
        "truncated": False,
        "timestamp": timestamp,
    }
    if exclude:
        message["excludeFromContext"] = True
    return message


# ---- entries -------------------------------------------------------------------------------------


def _entry(kind: str, entry_id: Any, parent_id: Any, timestamp: str, fields: Mapping[str, Any]) -> Entry:
    entry: Entry = {"type": kind}
    if entry_id is not _KEEP:
        entry["id"] = entry_id
    if parent_id is not _KEEP:
        entry["parentId"] = parent_id
    entry["timestamp"] = timestamp
    entry.update(fields)
    return entry


def msg(
    message: Mapping[str, Any], *, id: Any = _KEEP, parent: Any = _KEEP, timestamp: str = TIMESTAMP
) -> Entry:
    """A ``message`` entry."""
    return _entry("message", id, parent, timestamp, {"message": dict(message)})


def compaction(
    summary: str,
    first_kept_entry_id: str,
    tokens_before: int = 1000,
    *,
    details: Mapping[str, Any] | None = None,
    from_hook: bool | None = None,
    retained_tail: Sequence[Mapping[str, Any]] | None = None,
    id: Any = _KEEP,
    parent: Any = _KEEP,
    timestamp: str = TIMESTAMP,
) -> Entry:
    """A ``compaction`` entry."""
    fields: dict[str, Any] = {
        "summary": summary,
        "firstKeptEntryId": first_kept_entry_id,
        "tokensBefore": tokens_before,
    }
    if details is not None:
        fields["details"] = dict(details)
    if from_hook is not None:
        fields["fromHook"] = from_hook
    if retained_tail is not None:
        fields["retainedTail"] = [dict(m) for m in retained_tail]
    return _entry("compaction", id, parent, timestamp, fields)


def model_change(
    provider: str, model_id: str, *, id: Any = _KEEP, parent: Any = _KEEP, timestamp: str = TIMESTAMP
) -> Entry:
    return _entry("model_change", id, parent, timestamp, {"provider": provider, "modelId": model_id})


def thinking_level_change(
    level: str, *, id: Any = _KEEP, parent: Any = _KEEP, timestamp: str = TIMESTAMP
) -> Entry:
    return _entry("thinking_level_change", id, parent, timestamp, {"thinkingLevel": level})


def custom_message_entry(
    content: Any,
    *,
    custom_type: str = "note",
    display: bool = True,
    details: Any = None,
    id: Any = _KEEP,
    parent: Any = _KEEP,
    timestamp: str = TIMESTAMP,
) -> Entry:
    """A ``custom_message`` entry (an extension's message that the model sees)."""
    fields: dict[str, Any] = {"customType": custom_type, "content": content, "display": display}
    if details is not None:
        fields["details"] = details
    return _entry("custom_message", id, parent, timestamp, fields)


def branch_summary(
    summary: str, from_id: str = "root", *, id: Any = _KEEP, parent: Any = _KEEP, timestamp: str = TIMESTAMP
) -> Entry:
    return _entry("branch_summary", id, parent, timestamp, {"fromId": from_id, "summary": summary})


def label(
    target_id: str, text: str | None, *, id: Any = _KEEP, parent: Any = _KEEP, timestamp: str = TIMESTAMP
) -> Entry:
    return _entry("label", id, parent, timestamp, {"targetId": target_id, "label": text})


def custom_entry(
    custom_type: str, data: Any = None, *, id: Any = _KEEP, parent: Any = _KEEP, timestamp: str = TIMESTAMP
) -> Entry:
    """A ``custom`` entry (extension state; never in the model's context)."""
    return _entry("custom", id, parent, timestamp, {"customType": custom_type, "data": data})


def session_info(name: str, *, id: Any = _KEEP, parent: Any = _KEEP, timestamp: str = TIMESTAMP) -> Entry:
    return _entry("session_info", id, parent, timestamp, {"name": name})


def chain(*items: Mapping[str, Any]) -> list[Entry]:
    """Entries linked in order: missing ids become ``test-id-<index>``, missing parents the previous id.

    A bare message (a mapping with ``role``) is wrapped in a ``message`` entry first.
    """
    entries: list[Entry] = []
    previous: str | None = None
    for index, item in enumerate(items):
        entry = msg(item) if "role" in item else dict(item)
        entry.setdefault("id", f"test-id-{index}")
        entry.setdefault("parentId", previous)
        entries.append(entry)
        previous = entry["id"]
    return entries


def header(version: int | None = 3, session_id: str = "11111111-2222-3333-4444-555555555555") -> Entry:
    """A session header line (``version`` None = the legacy v1 header without one)."""
    head: Entry = {"type": "session", "id": session_id, "timestamp": TIMESTAMP, "cwd": "/work"}
    if version is not None:
        head["version"] = version
    return head


def roles(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """The role of each message, in order."""
    return [str(m.get("role")) for m in messages]


# ---- whole sessions on disk (summarization and command tests) -------------------------------------


def write_session(path: Any, entries: Iterable[Mapping[str, Any]], head: Mapping[str, Any] | None = None) -> bytes:
    """Write ``head`` (default ``header()``) and ``entries`` as a JSONL session file; returns its bytes."""
    import json
    from pathlib import Path

    lines = [json.dumps(dict(e), ensure_ascii=False, separators=(",", ":")) for e in [head or header(), *entries]]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    Path(path).write_bytes(data)
    return data


def summary_text(bodies: Mapping[str, str]) -> str:
    """A model-style summary under every required heading, in order (``prompts.HISTORY_HEADINGS``): the body
    ``bodies`` gives a heading, else "- (none)". A heading added to the prompts appears here by itself."""
    from pi_compact.compaction.prompts import HISTORY_HEADINGS

    return "\n\n".join(f"{heading}\n{bodies.get(heading, '- (none)')}" for heading in HISTORY_HEADINGS)


def structured_summary(marker: str = "") -> str:
    """A model-style summary with all the required headings (``marker`` makes it recognisable); it keeps
    the rule ``coding_session``'s user states."""
    return summary_text({
        "## Goal": f"Ship the feature {marker}", "## Constraints & Preferences": "- Never change the public API",
        "## Progress": "### Done\n- [x] work\n\n### In Progress\n- [ ] more\n\n### Blocked\n- (none)",
        "## Key Decisions": "- **keep it small**: scope", "## Next Steps": "1. continue",
    })


def coding_session(tail_tokens: int = 300) -> list[Entry]:
    """Three finished turns of a coding session (ids ``test-id-0..11``).

    With ``compaction.keepRecentTokens`` 400 the cut lands on the last user message (``test-id-10``,
    not a split turn): entries 0-9 are summarized and [user, assistant] are kept. The first turn reads
    README.md and edits src/cli.py; the second writes tests/test_cli.py.
    """
    return chain(
        user("Add a --verbose flag to src/cli.py. Never change the public API."),  # test-id-0
        assistant("Reading the code.", tool_calls=[
            tool_call("read", {"path": "src/cli.py"}, "call-1"),
            tool_call("read", {"path": "README.md"}, "call-2"),
        ]),  # test-id-1
        tool_result("def main() -> None:\n    " + sized(300), tool_call_id="call-1", tool_name="read"),  # 2
        tool_result("# Project readme", tool_call_id="call-2", tool_name="read"),  # test-id-3
        assistant(tool_calls=[tool_call("edit", {"path": "src/cli.py", "oldText": "a", "newText": "b"}, "call-3")]),
        tool_result("Edited src/cli.py", tool_call_id="call-3", tool_name="edit"),  # test-id-5
        user("Now add a test in tests/test_cli.py. " + sized(200)),  # test-id-6
        assistant(tool_calls=[tool_call("write", {"path": "tests/test_cli.py", "content": "x"}, "call-4")]),
        tool_result("Wrote tests/test_cli.py", tool_call_id="call-4", tool_name="write"),  # test-id-8
        assistant("The test is written."),  # test-id-9
        user("Run the tests and fix failures. " + sized(tail_tokens)),  # test-id-10
        assistant("All 12 tests pass. " + sized(100), usage=usage(5000, 100)),  # test-id-11
    )


def split_turn_session() -> list[Entry]:
    """``coding_session`` whose last turn runs long (ids up to ``test-id-15``).

    With ``compaction.keepRecentTokens`` 400 the cut lands inside the last turn, at its final
    assistant message ``test-id-15``: entries 0-9 are history and 10-14 the turn prefix.
    """
    return chain(
        *coding_session()[:10],
        user("Run the tests and fix failures."),  # test-id-10
        assistant(tool_calls=[tool_call("bash", {"command": "pytest -q"}, "call-5")]),  # test-id-11
        tool_result("1 failed: test_verbose " + sized(300), tool_call_id="call-5"),  # test-id-12
        assistant(tool_calls=[tool_call("edit", {"path": "src/cli.py", "oldText": "b", "newText": "c"}, "call-6")]),
        tool_result("Edited src/cli.py", tool_call_id="call-6", tool_name="edit"),  # test-id-14
        assistant("Fixed; all tests pass now. " + sized(450), usage=usage(6000, 100)),  # test-id-15
    )


# ---- compaction runs against the scripted server (imports inside: builders stays light) -----------

FAST_RETRY_SETTINGS = {"enabled": True, "max_retries": 1, "base_delay_ms": 1, "max_delay_ms": 2}


def compaction_settings(keep: int = 400, reserve: int = 1000, retain_tail: bool = True) -> Any:
    """``Settings`` for the session builders above: small keep/reserve, fast retries."""
    from pi_compact.settings import CompactionSettings, RetrySettings, Settings

    compaction_part = CompactionSettings(keep_recent_tokens=keep, reserve_tokens=reserve, retain_tail=retain_tail)
    return Settings(compaction=compaction_part, retry=RetrySettings(**FAST_RETRY_SETTINGS))


def scripted_model(base_url: str, window: int = 128000, max_output: int | None = None) -> Any:
    """A real ``LiteLLMModel`` talking to the scripted server at ``base_url``."""
    from pi_compact.llm.litellm_model import LiteLLMModel
    from pi_compact.llm.protocol import ModelInfo
    from pi_compact.settings import RetrySettings

    info = ModelInfo("openai/scripted", "openai", window, max_output)
    return LiteLLMModel(info, api_base=base_url, api_key="test", retry=RetrySettings(**FAST_RETRY_SETTINGS))


def compact_in_process(path: Any, cwd: Any, *answers: str, keep: int = 400) -> tuple[Entry, Any]:
    """Compact the session file at ``path`` by hand with an in-process ``ScriptedModel`` answering
    ``answers`` in order; the compaction entry written, and the model (its ``history`` is what it was asked)."""
    from pi_compact.agent.compaction.pipeline import Compactor
    from pi_compact.llm.protocol import ModelInfo
    from pi_compact.llm.scripted import ScriptedModel
    from pi_compact.session.store import SessionStore

    store = SessionStore.open(path, str(cwd), 0)
    model = ScriptedModel(ModelInfo("test/model", "test", 100_000, None), *answers)
    Compactor(store, model, compaction_settings(keep=keep), lambda event: None).run("manual")
    return [e for e in store.branch() if e.get("type") == "compaction"][-1], model


def run_compaction(
    path: Any,
    base_url: str,
    *,
    settings: Any = None,
    window: int = 128000,
    max_output: int | None = None,
    instructions: str | None = None,
    cancel: Any = None,
    events: list[Any] | None = None,
    hooks: Any = None,
) -> Any:
    """Open the session file and run the one compaction pipeline on it; returns the result or None."""
    from pi_compact.agent.compaction.pipeline import Compactor
    from pi_compact.session.store import SessionStore

    store = SessionStore.open(path, str(path.parent), 0)
    sink = events if events is not None else []
    model = scripted_model(base_url, window, max_output)
    compactor = Compactor(store, model, settings or compaction_settings(), sink.append, hooks)
    return compactor.run("manual", instructions=instructions, cancel=cancel)


def request_text(request: Mapping[str, Any], role: str) -> str:
    """The text of the ``role`` message of a recorded summarization request ([system, user])."""
    messages = request["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    content = next(m["content"] for m in messages if m["role"] == role)
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")
