"""What a tool is, how one is run safely, and how its result becomes a pi ``toolResult`` message.

Contract: ``run_tool`` never raises for a tool failure. Bad arguments and any ``Exception`` escaping a
tool turn into an ``is_error`` ``ToolOutput`` with a one-line message, so the model can read the problem
and recover (pi does the same). ``KeyboardInterrupt`` and other ``BaseException``s still propagate.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pi_compact.cancel import CancelToken


@dataclass(frozen=True)
class ToolOutput:
    """The result of one tool call: text for the model, an error flag, optional structured details."""

    text: str
    is_error: bool = False
    details: dict[str, Any] | None = None


@dataclass(frozen=True)
class ToolContext:
    """Where a tool runs: relative paths resolve against ``cwd``; ``cancel`` asks it to stop early."""

    cwd: Path
    cancel: CancelToken | None = None

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.cancelled


class Tool(Protocol):
    """A built-in tool: pi-compatible name, a description for the model and a JSON schema."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]: ...

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput: ...


def object_schema(required: Sequence[str] = (), **properties: tuple[str, str]) -> dict[str, Any]:
    """A JSON schema for an arguments object: each keyword is ``name=(json_type, description)``."""
    return {
        "type": "object",
        "properties": {
            name: {"type": json_type, "description": text} for name, (json_type, text) in properties.items()
        },
        "required": list(required),
    }


def error(text: str) -> ToolOutput:
    """Shorthand for a failed call."""
    return ToolOutput(text, is_error=True)


def run_tool(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    """Validate ``args`` against the tool's schema, run it, and turn any failure into an error output."""
    checked = _prepare(tool, args)
    if isinstance(checked, ToolOutput):
        return checked
    try:
        return tool.run(checked, ctx)
    except Exception as exc:  # the model must see the failure; the agent loop must not
        return error(f"{tool.name} failed: {describe_exception(exc)}")


def precheck(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput | None:
    """The error a call is sure to end in, found without changing anything: bad arguments, or what the
    tool's optional ``check(args, ctx)`` finds (an ``edit`` whose ``oldText`` is not in the file). None
    when the call may work. The approval question is skipped for a call that cannot apply."""
    checked = _prepare(tool, args)
    if isinstance(checked, ToolOutput):
        return checked
    check = getattr(tool, "check", None)
    if not callable(check):
        return None
    try:
        found = check(checked, ctx)
    except Exception as exc:  # as run_tool: the model reads the failure
        return error(f"{tool.name} failed: {describe_exception(exc)}")
    return found if isinstance(found, ToolOutput) else None


def _prepare(tool: Tool, args: Mapping[str, Any]) -> dict[str, Any] | ToolOutput:
    raw = args.get("_raw")
    if isinstance(raw, str) and len(args) == 1:  # the model's arguments did not parse (llm.assemble)
        shown = raw if len(raw) <= 200 else raw[:200] + f"… ({len(raw):,} characters)"
        return error(f"The arguments of this {tool.name} call are not valid JSON (or are nested too deeply "
                     f"to read), so it was not run: {shown}. Send one JSON object with the tool's parameters.")
    return _check_args(tool, args)


def describe_exception(exc: BaseException) -> str:
    """One line saying what went wrong, without a traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename is not None else ""
        text = f"{exc.strerror}{where}"
    elif isinstance(exc, UnicodeDecodeError):
        text = f"the file is not valid {exc.encoding} text (bad byte at offset {exc.start})"
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())


def tool_result_message(
    call_id: str, tool_name: str, output: ToolOutput, timestamp_ms: int
) -> dict[str, Any]:
    """pi's ``toolResult`` message for one finished call (``details`` only when the tool gave some)."""
    message: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool_name,
        "content": [{"type": "text", "text": output.text}],
    }
    if output.details is not None:
        message["details"] = output.details
    message["isError"] = output.is_error
    message["timestamp"] = timestamp_ms
    return message


def resolve_path(raw: str, cwd: Path) -> Path:
    """The file a model meant: ``~`` expanded, relative to ``cwd``, a leading ``@`` dropped.

    Models often copy the ``@file`` mention syntax, and macOS writes names in NFD while models type NFC,
    so when the literal path does not exist an existing Unicode-normalised spelling is preferred.
    """
    text = raw[1:] if raw.startswith("@") else raw
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = cwd / path
    if not path.exists():
        for form in ("NFC", "NFD"):
            candidate = Path(unicodedata.normalize(form, str(path)))
            if candidate.exists():
                return candidate
    return path


_JSON_TYPES: dict[str, str] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
}


def _check_args(tool: Tool, args: Mapping[str, Any]) -> dict[str, Any] | ToolOutput:
    """Checked copy of ``args``: required keys present, known keys well typed (integral floats -> int)."""
    if not isinstance(args, Mapping):
        return error(f"{tool.name} expects its arguments as a JSON object, got {type(args).__name__}.")
    schema = tool.parameters
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [key for key in schema.get("required", []) if args.get(key) is None]
    if missing:
        names = ", ".join(repr(key) for key in missing)
        return error(f"{tool.name} is missing the required argument {names}.")
    checked: dict[str, Any] = {}
    for key, value in args.items():
        expected = properties.get(key, {}).get("type")
        if value is None or expected is None:
            checked[key] = value
            continue
        converted = _coerce(value, expected)
        if converted is _INVALID:
            got = type(value).__name__
            want = _JSON_TYPES.get(expected, expected)
            return error(f"{tool.name} argument {key!r} must be {want}, got {got} {value!r:.60}.")
        checked[key] = converted
    return checked


_INVALID = object()


def _coerce(value: Any, expected: str) -> Any:
    """``value`` converted (leniently, as models need) to JSON type ``expected``, or _INVALID."""
    if expected == "string":
        return value if isinstance(value, str) else _INVALID
    if expected == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return _INVALID
    if isinstance(value, bool):  # bool is an int subclass; true is not a line number
        return _INVALID
    if expected in ("integer", "number"):
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                return _INVALID
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if expected == "integer":
                return int(value) if value.is_integer() else _INVALID
            return value
        return _INVALID
    if expected == "object":
        return value if isinstance(value, Mapping) else _INVALID
    if expected == "array":
        return value if isinstance(value, list) else _INVALID
    return value
