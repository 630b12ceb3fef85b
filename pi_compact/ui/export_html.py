"""``/export [file]``: the session as one self-contained HTML page, readable offline.

Contract: ``session_html(entries, title)`` is pure: it renders the current branch's entries (user and
assistant messages, tool calls and their results, ``!`` commands, compactions and branch summaries)
with inline CSS and no script or external resource. Every piece of session text is HTML-escaped.
Compaction summaries and tool results are collapsed in ``<details>`` elements and open on a click.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

_CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
.msg{margin:1rem 0;padding:.6rem .9rem;border-radius:6px}
.user{background:#eef4ff}.assistant{background:#f7f7f7}.bash{background:#f3f0ff}
.role{font-weight:600;font-size:.8rem;color:#666;text-transform:uppercase}
pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0;font:13px/1.4 ui-monospace,monospace}
details{margin:.4rem 0}summary{cursor:pointer;color:#555}
.compaction{border-left:4px solid #c90;padding-left:.8rem}.error{color:#b00}
"""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, Mapping) and block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts)


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _collapsed(summary: str, body: str, css: str = "") -> str:
    return f'<details class="{css}"><summary>{escape(summary)}</summary>{_pre(body)}</details>'


def _message(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "user":
        return f'<div class="msg user"><div class="role">You</div>{_pre(_text(message.get("content")))}</div>'
    if role == "assistant":
        parts = []
        for block in message.get("content") or ():
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text":
                parts.append(_pre(str(block.get("text", ""))))
            elif block.get("type") == "toolCall":
                args = json.dumps(block.get("arguments"), indent=2, ensure_ascii=False)
                parts.append(_collapsed(f"▸ {block.get('name', '')}", args))
        if message.get("stopReason") == "error":
            parts.append(f'<p class="error">{escape(str(message.get("errorMessage", "error")))}</p>')
        return f'<div class="msg assistant"><div class="role">Assistant</div>{"".join(parts)}</div>'
    if role == "toolResult":
        text = _text(message.get("content"))
        lines = text.count("\n") + 1
        label = f"{message.get('toolName', 'tool')} result ({lines} line{'' if lines == 1 else 's'})"
        return _collapsed(label, text, "error" if message.get("isError") else "")
    if role == "bashExecution":
        head = f"$ {message.get('command', '')}"
        return f'<div class="msg bash">{_pre(head)}{_collapsed("output", str(message.get("output") or ""))}</div>'
    return ""


def session_html(entries: Iterable[Mapping[str, Any]], title: str) -> str:
    """The page for ``entries`` (the branch from the root to the leaf)."""
    body: list[str] = []
    compactions = 0
    for entry in entries:
        kind = entry.get("type")
        if kind == "message" and isinstance(entry.get("message"), Mapping):
            body.append(_message(entry["message"]))
        elif kind == "compaction":
            compactions += 1
            label = f"Compaction {compactions}: {entry.get('tokensBefore', '?')} tokens summarized — click to read"
            body.append(f'<div class="compaction">{_collapsed(label, str(entry.get("summary", "")))}</div>')
        elif kind == "branch_summary":
            body.append(_collapsed("Branch summary — click to read", str(entry.get("summary", "")), "compaction"))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>{''.join(body)}</body></html>\n"
    )


__all__ = ["session_html"]
