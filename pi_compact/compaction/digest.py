"""Message digests: a message cut down to what planning reads, plus its serialized text (pure).

A digest has no content: only ``digest_estimator`` may estimate it and only ``serialized_text`` may
serialize it (and only if made with its text). Only user, assistant and tool-result messages are digested.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from pi_compact.compaction.calibration import is_structured
from pi_compact.compaction.fileops import file_tool_calls
from pi_compact.compaction.serialize import message_text
from pi_compact.compaction.tokens import Estimator, calculate_context_tokens
from pi_compact.messages import LLM_ROLES, Message, to_llm_message
from pi_compact.session.entries import Entry

# Assistant fields planning reads besides the role: the model (the context's current model) and
# the stop reason (whether the usage counts).
_ASSISTANT_FIELDS = ("provider", "model", "stopReason")
# The role strings digests share (each parsed line has its own copy: 100k objects in a large session).
_ROLES = {role: role for role in LLM_ROLES}

Loader = Callable[[Any], Message]
"""Gives the whole message back for a digest's ``source``."""


# Held as parsed JSON, a 100 MB session takes about ten times its size in memory, and planning a compaction and
# previewing it read little of each message: its role, usage, model and stop reason, the paths of its file tool
# calls, and the text the summarizer would get. A digest is a dict of just those fields (so ``project_path``,
# ``find_cut_point`` and ``prepare_compaction`` read it as they read the message), with the serialized text made
# from the whole message when the digest is. Other messages (and entries) are few and stay whole, and so does a
# message whose content the serializer cannot read.
class MessageDigest(dict[str, Any]):
    """A message reduced to the fields planning reads; ``text`` and ``source`` stand for the rest."""

    __slots__ = ("text", "source", "structured")

    text: str | None  # serialize_message's blocks joined by blank lines (None: not made)
    source: Any  # where the reader that made the digest finds the whole message again (hashable)
    structured: bool | None  # whether the whole message is JSON-like text (None: not estimated yet)


def _usage_digest(usage: Mapping[str, Any]) -> Mapping[str, Any]:
    """A usage with only the total planning reads and the output calibration subtracts from it (the
    prompt's size), or the usage itself when it cannot be summed."""
    try:
        return {"totalTokens": calculate_context_tokens(usage), "output": int(usage.get("output") or 0)}
    except (TypeError, ValueError, OverflowError):
        return usage  # odd values: keep them, so the error (if any) comes where a full load gives it


def digest_message(message: Message, source: Any, *, text: bool = True) -> Message:
    """The digest of a user / assistant / tool-result message; any other message unchanged.

    ``text=False`` leaves the serialized text out, for a caller that will not serialize.
    """
    role = message.get("role")
    role = _ROLES.get(role) if type(role) is str else None  # (a list, say, cannot be looked up)
    if role is None:
        return message
    try:
        serialized = message_text(message) if text else None
        calls = [
            {"type": "toolCall", "name": name, "arguments": {"path": path}}
            for name, path in file_tool_calls(message)
        ] if role == "assistant" else None
    except (TypeError, ValueError, RecursionError):
        # Malformed content: kept whole, so that it fails (or not) exactly where it would unreduced.
        return message
    digest = MessageDigest(role=role)
    if role == "assistant":
        for key in _ASSISTANT_FIELDS:
            if key in message:
                value = message[key]
                digest[key] = sys.intern(value) if type(value) is str else value  # few distinct values
        usage = message.get("usage")
        if isinstance(usage, (dict, Mapping)):
            digest["usage"] = _usage_digest(usage)
        if calls:
            digest["content"] = calls
    digest.text = serialized
    digest.source = source
    digest.structured = None
    return digest


def digest_entry(entry: Entry, source: Any, *, text: bool = True) -> Entry:
    """A message entry with its message digested (type, id and parentId kept); other entries as they are."""
    message = entry.get("message")
    if entry.get("type") != "message" or type(message) is not dict:
        return entry
    digest = digest_message(message, source, text=text)
    if digest is message:
        return entry
    return {"type": "message", "id": entry.get("id"), "parentId": entry.get("parentId"), "message": digest}


# Token estimates are left out of digests on purpose: planning needs them only for the newest few messages (back
# to the last provider usage, and the kept region), and estimating every message would cost as much as the rest
# of the digest. So the estimate is made from the whole message, which the reader loads again from the digest's
# ``source``.
def digest_estimator(estimator: Estimator, load: Loader | None) -> Estimator:
    """``estimator`` that also estimates digests, from the whole message ``load`` gives back.

    Planning estimates some messages more than once, so digests' estimates are kept. Without
    ``load`` a digest cannot be estimated, and meeting one is an error rather than a wrong count
    (the plain estimators would find no content in it).
    """
    known: dict[Any, tuple[int, bool]] = {}

    def estimate(message: Message) -> int:
        if type(message) is not MessageDigest:
            return estimator(message)
        found = known.get(message.source)
        if found is None:
            if load is None:
                raise ValueError("a message digest was estimated without the reader that made it")
            whole = load(message.source)
            found = known[message.source] = (estimator(whole), is_structured(whole))
        # The kind of text calibration prices it as (``calibration.is_structured``), from the whole message too.
        message.structured = found[1]
        return found[0]

    return estimate


def serialized_text(message: Message) -> str:
    """What ``serialize_conversation`` writes for one agent message ('' for a message it skips)."""
    if type(message) is MessageDigest:
        if message.text is None:
            raise ValueError("a message digest made without its text was serialized")
        return message.text
    converted = to_llm_message(message)
    return "" if converted is None else message_text(converted)
