"""The session as pi's tree: branches, where a move lands, what it leaves behind, undoing a compaction (pure).

Every entry has a parent; the leaf is the position the next entry hangs from, and on opening a file it
is the last entry in it (pi's rule). So a move that must survive a resume is written as an entry
whose parent is the new position and which pi leaves out of the model's context:
- ``/uncompact`` writes a ``custom`` entry "pi-compact.uncompact" whose parent is the entry the latest
  compaction was appended after: the compaction becomes an abandoned sibling, and both pi and we
  rebuild the context exactly as it was before it. Nothing is deleted or rewritten.
- ``/tree`` without a summary writes a "pi-compact.move" entry at the new position (pi writes nothing
  and forgets the move if no message follows; we keep it); with a summary, pi's ``branch_summary``.
No I/O; entries are pi's dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pi_compact.messages import text_of
from pi_compact.session.entries import Entry, message_of_entry, new_entry_id
from pi_compact.session.history import walk

UNCOMPACT_TYPE = "pi-compact.uncompact"
MOVE_TYPE = "pi-compact.move"
CONTEXT_TYPES = frozenset({"message", "custom_message", "branch_summary"})  # entries the model may see


# ---- /uncompact ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UncompactPlan:
    """Undoing the latest compaction of a branch: where the branch goes back to, and what it leaves."""

    compaction_id: str
    position: str | None  # the entry the compaction was appended after: the new leaf's parent
    left_behind: int  # entries the model saw after the compaction (they stay in the file, off the branch)
    restored_path: tuple[Entry, ...]  # the root-first path at ``position``: its context is the one restored


def plan_uncompact(path: Sequence[Entry], by_id: Mapping[str, Entry]) -> UncompactPlan | None:
    """How to undo the latest compaction on ``path`` (root first), or None when there is none."""
    index = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), None)
    if index is None:
        return None
    compaction = path[index]
    parent = compaction.get("parentId")
    position = parent if isinstance(parent, str) and parent in by_id else None
    later = sum(1 for entry in path[index + 1 :] if entry.get("type") in CONTEXT_TYPES)
    return UncompactPlan(str(compaction.get("id")), position, later, tuple(walk(by_id, position)))


def uncompact_fields(plan: UncompactPlan) -> dict[str, Any]:
    """The entry that moves the branch back to before the compaction (pi ignores it in the context)."""
    return {"type": "custom", "customType": UNCOMPACT_TYPE, "data": {"compactionId": plan.compaction_id}}


def undone_compaction(path: Sequence[Mapping[str, Any]]) -> str | None:
    """The id of the compaction the branch was uncompacted from, while no newer compaction replaced it."""
    for entry in reversed(path):
        kind = entry.get("type")
        if kind == "compaction":
            return None
        if kind == "custom" and entry.get("customType") == UNCOMPACT_TYPE:
            data = entry.get("data")
            return str(data.get("compactionId")) if isinstance(data, Mapping) else "?"
    return None


# ---- moving on the tree ----------------------------------------------------------------------------


def common_ancestor(by_id: Mapping[str, Entry], old_leaf: str | None, target: str) -> str | None:
    """The deepest entry on both the old leaf's path and the target's path (None: only the root level)."""
    old_ids = {entry.get("id") for entry in walk(by_id, old_leaf)}
    for entry in reversed(walk(by_id, target)):
        if entry.get("id") in old_ids:
            return str(entry.get("id"))
    return None


def abandoned_entries(by_id: Mapping[str, Entry], old_leaf: str | None, target: str) -> list[Entry]:
    """The entries a move from ``old_leaf`` to ``target`` leaves (old leaf back to the common ancestor,
    excluded), oldest first: what a branch summary summarizes."""
    ancestor = common_ancestor(by_id, old_leaf, target)
    path = walk(by_id, old_leaf)
    ids = [entry.get("id") for entry in path]
    start = ids.index(ancestor) + 1 if ancestor in ids else 0
    return path[start:]


@dataclass(frozen=True)
class Landing:
    """Where a move to ``target`` puts the leaf, and the text to send again when it was a user message."""

    position: str | None
    resend_text: str | None = None


def landing(target: Entry) -> Landing:
    """pi's rule: a user message (or custom message) puts the leaf on its parent, so it can be sent
    again or rewritten; any other entry becomes the leaf itself."""
    parent = target.get("parentId")
    parent_id = parent if isinstance(parent, str) else None
    if target.get("type") == "message" and (target.get("message") or {}).get("role") == "user":
        return Landing(parent_id, text_of((target.get("message") or {}).get("content")))
    if target.get("type") == "custom_message":
        return Landing(parent_id, text_of(target.get("content")))
    return Landing(str(target.get("id")))


def move_fields(target_id: str) -> dict[str, Any]:
    """The entry that records a move without a summary, so the position survives a resume."""
    return {"type": "custom", "customType": MOVE_TYPE, "data": {"targetId": target_id}}


def branch_summary_fields(position: str | None, summary: str, details: Any, from_hook: bool) -> dict[str, Any]:
    """pi's branch_summary entry at the new position (``fromId`` is that position, or "root")."""
    fields: dict[str, Any] = {"type": "branch_summary", "fromId": position if position is not None else "root",
                              "summary": summary}
    if details is not None:
        fields["details"] = details
    if from_hook:
        fields["fromHook"] = True
    return fields


# ---- the tree as /tree shows it --------------------------------------------------------------------

NodeKind = Literal["user", "compaction", "branch_summary", "tip"]


@dataclass(frozen=True)
class TreeNode:
    """One row of ``/tree``: a user message, a compaction, a branch summary, or the tip of a branch."""

    number: int
    entry_id: str
    kind: NodeKind
    text: str
    depth: int
    on_branch: bool  # on the path to the current leaf
    current: bool  # the current leaf is this entry, or hangs below it before the next node


def _node_kind(entry: Mapping[str, Any], has_children: bool) -> NodeKind | None:
    kind = entry.get("type")
    if kind == "message" and (entry.get("message") or {}).get("role") == "user":
        return "user"
    if kind == "compaction":
        return "compaction"
    if kind == "branch_summary":
        return "branch_summary"
    return None if has_children else "tip"


def _node_text(entry: Mapping[str, Any], kind: NodeKind) -> str:
    if kind == "compaction":
        return f"compaction of {int(entry.get('tokensBefore') or 0):,} tokens"
    if kind == "branch_summary":
        summary = " ".join(str(entry.get("summary") or "").split())
        return f"branch summary: {summary}"
    message = message_of_entry(entry)
    if message is None:
        marks = {UNCOMPACT_TYPE: "uncompacted: the context from before the compaction", MOVE_TYPE: "moved here",
                 "pi-compact.pin": "pinned a note", "pi-compact.unpin": "unpinned a note"}
        kind_name = str(entry.get("type"))
        return marks.get(str(entry.get("customType")), kind_name) if kind_name == "custom" else kind_name
    text = " ".join(text_of(message.get("content")).split()) or "(no text)"
    return text if kind == "user" else f"{message.get('role')}: {text}"


def tree_nodes(entries: Sequence[Entry], leaf_id: str | None) -> list[TreeNode]:
    """The rows of ``/tree`` in depth-first order (children oldest first, as pi sorts them).

    Only user messages, compactions, branch summaries and branch tips are rows; the entries between
    them (answers, tool results, settings) belong to the row above. A row is indented one step
    more than its parent row only where the tree forks, so a straight conversation stays flat.
    """
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    children: dict[str | None, list[Entry]] = {}
    for entry in entries:
        parent = entry.get("parentId")
        key = parent if isinstance(parent, str) and parent in by_id and parent != entry.get("id") else None
        children.setdefault(key, []).append(entry)
    for siblings in children.values():
        siblings.sort(key=lambda e: str(e.get("timestamp", "")))  # stable: file order among equal times
    on_path = {e.get("id") for e in walk(by_id, leaf_id)}
    nodes: list[TreeNode] = []
    current_done = False
    # Iterative depth-first walk: (entry, depth, row above it) with an explicit stack (deep sessions).
    stack: list[tuple[Entry, int]] = [(root, 0) for root in reversed(children.get(None, []))]
    while stack:
        entry, depth = stack.pop()
        kids = children.get(entry.get("id"), [])
        kind = _node_kind(entry, bool(kids))
        if kind is not None:
            entry_id = str(entry.get("id"))
            is_current = not current_done and entry_id in on_path and _last_node_on_path(entry, children, on_path)
            current_done = current_done or is_current
            nodes.append(TreeNode(len(nodes) + 1, entry_id, kind, _node_text(entry, kind), depth,
                                  entry_id in on_path, is_current))
        step = 1 if len(kids) > 1 else 0
        for kid in reversed(kids):
            stack.append((kid, depth + step))
    return nodes


def _last_node_on_path(entry: Mapping[str, Any], children: Mapping[str | None, list[Entry]],
                       on_path: set[Any]) -> bool:
    """True when no later row lies on the path to the leaf below ``entry``."""
    current: Mapping[str, Any] | None = entry
    while current is not None:
        nxt = next((kid for kid in children.get(current.get("id"), []) if kid.get("id") in on_path), None)
        if nxt is None:
            return True
        if _node_kind(nxt, bool(children.get(nxt.get("id")))) is not None:
            return False
        current = nxt
    return True


def fork_points(entries: Sequence[Entry]) -> list[tuple[str, str]]:
    """(entry id, text) of every user message with text, in file order: what ``/fork`` offers (pi's list)."""
    points = []
    for entry in entries:
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, Mapping) and message.get("role") == "user":
            text = text_of(message.get("content"))
            if text:
                points.append((str(entry.get("id")), text))
    return points


def branch_copy(by_id: Mapping[str, Entry], leaf_id: str | None) -> list[Entry]:
    """The entries a new session file gets for the path to ``leaf_id`` (pi's createBranchedSession):
    the path without its label entries, then one label entry per labelled entry on it, chained on."""
    path = walk(by_id, leaf_id)
    kept = [dict(entry) for entry in path if entry.get("type") != "label"]
    for before, entry in zip(kept, kept[1:], strict=False):
        entry["parentId"] = before["id"]  # re-chained over the labels left out (pi 0.80.2 does the same)
    ids = {entry["id"] for entry in kept}
    labels: dict[str, Entry] = {}
    for entry in by_id.values():
        if entry.get("type") == "label" and entry.get("targetId") in ids:
            labels[str(entry["targetId"])] = entry  # file order: the last label of a target wins
    parent = kept[-1]["id"] if kept else None
    for target, label in labels.items():
        if not label.get("label"):
            continue  # a cleared label
        copy = {**label, "id": new_entry_id(ids), "parentId": parent, "targetId": target}
        ids.add(copy["id"])
        kept.append(copy)
        parent = copy["id"]
    return kept


def session_name(entries: Sequence[Mapping[str, Any]]) -> str | None:
    """The session's name: the newest ``session_info`` entry in the file (an empty name clears it)."""
    for entry in reversed(entries):
        if entry.get("type") == "session_info":
            name = str(entry.get("name") or "").strip()
            return name or None
    return None


def name_fields(name: str) -> dict[str, Any]:
    """pi's session_info entry (newlines become spaces, as pi 0.80 does; empty clears the name)."""
    return {"type": "session_info", "name": " ".join(name.split())}
