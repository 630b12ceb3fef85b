"""Run pi 0.73.1 (``npm install --no-save @mariozechner/pi-coding-agent@0.73.1`` in the checkout) against a fake
provider server, in a throwaway HOME and agent directory, and summarise what it sent.

    python tests/fakes/pi_probe.py anthropic --thinking medium     # a two-turn tool loop, JSON summary

Used by tests (skipped when pi is not installed) and by hand to compare pi's wire behaviour with ours.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PI_CLI = ROOT / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
PROVIDERS = {  # pi's provider name, its key variable, a model
    "anthropic": ("anthropic", "ANTHROPIC_API_KEY", "claude-sonnet-4-5"),
    "gemini": ("google", "GEMINI_API_KEY", "gemini-2.5-pro"),
    "openai": ("openai", "OPENAI_API_KEY", "o4-mini"),  # through the Responses API
}


def pi_installed() -> bool:
    return PI_CLI.is_file()


@dataclass(frozen=True)
class PiRun:
    returncode: int
    stdout: str
    stderr: str


def run_pi(
    provider: str,
    base_url: str,
    prompt: str,
    workdir: Path,
    *,
    thinking: str = "medium",
    settings: Mapping[str, Any] | None = None,
    extra_args: Sequence[str] = ("--no-session",),
    timeout: float = 120,
    model: str | None = None,
    provider_fields: Mapping[str, Any] | None = None,
) -> PiRun:
    """pi in print mode against ``base_url``; its HOME and agent directory live under ``workdir``.
    ``provider_fields``: more of the provider's entry in pi's ``models.json`` (e.g. ``modelOverrides``)."""
    name, key_variable, default_model = PROVIDERS[provider]
    model = model or default_model
    agent = workdir / ".pi-home" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    merged = {"quietStartup": True, "retry": {"enabled": False}, **(settings or {})}
    (agent / "settings.json").write_text(json.dumps(merged), encoding="utf-8")
    provider = {"baseUrl": base_url, **(provider_fields or {})}
    (agent / "models.json").write_text(json.dumps({"providers": {name: provider}}), encoding="utf-8")
    prefixes = ("PI_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_")
    env = {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}
    env |= {
        "HOME": str(agent.parent),
        "PI_CODING_AGENT_DIR": str(agent),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        key_variable: "fake-key",
    }
    command = [
        "node", str(PI_CLI), "--provider", name, "--model", model, "--thinking", thinking,
        "--no-extensions", "--no-skills", "--no-context-files", *extra_args, "-p", prompt,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    return PiRun(done.returncode, done.stdout, done.stderr)


def run_pi_models(
    models: Mapping[str, Any], workdir: Path, provider: str, model: str, *args: str,
    environ: Mapping[str, str] | None = None, prompt: str = "hi",
) -> PiRun:
    """pi in print mode with ``models`` as its whole ``models.json`` (a provider of the user's own), thinking
    ``medium``; ``args`` go before ``-p`` (``--no-session`` or ``--session FILE``); ``environ`` is added."""
    agent = workdir / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "models.json").write_text(json.dumps(models), encoding="utf-8")
    (agent / "settings.json").write_text(json.dumps({"quietStartup": True, "retry": {"enabled": False}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "OPENAI_", "ANTHROPIC_"))}
    env.update(HOME=str(workdir), PI_CODING_AGENT_DIR=str(agent), PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1",
               **(environ or {}))
    done = subprocess.run(
        ["node", str(PI_CLI), "--provider", provider, "--model", model, "--thinking", "medium", *args,
         "--no-extensions", "--no-skills", "--no-context-files", "-p", prompt],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=180, check=False)
    return PiRun(done.returncode, done.stdout, done.stderr)


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > 60:
        return f"{value[:40]}...({len(value)} chars)"
    if isinstance(value, Mapping):
        return {key: _clip(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clip(item) for item in value]
    return value


def summarise(records: Sequence[Any]) -> list[dict[str, Any]]:
    """Per request: headers that matter, the top-level fields (long strings clipped), the verdict."""
    keep = ("anthropic-beta", "anthropic-version", "user-agent", "x-goog-api-client")
    return [
        {
            "path": record.path,
            "headers": {key: record.headers[key] for key in keep if key in record.headers},
            "body": _clip(record.body),
            "error": None if record.error is None else record.error.message,
            "usage": record.usage,
        }
        for record in records
    ]


def probe(provider: str, thinking: str) -> dict[str, Any]:
    """A two-turn tool loop (read a file, then answer) against a fresh fake server."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakes import anthropic_server, anthropic_stream, gemini_reply, gemini_server, responses_reply, responses_server

    server: anthropic_server.FakeAnthropicServer | gemini_server.FakeGeminiServer | responses_server.FakeResponsesServer
    if provider == "openai":
        server = responses_server.FakeResponsesServer().start()
        server.enqueue(
            responses_reply.call_reply("read", {"path": "hello.txt"}, reasoning="Read it first.", text="Reading."),
            responses_reply.text_reply("It says hello."),
        )
    elif provider == "anthropic":
        server = anthropic_server.FakeAnthropicServer().start()
        server.enqueue(
            anthropic_stream.tool_reply("read", {"path": "hello.txt"}, thinking="Read it first.", text="Reading."),
            anthropic_stream.text_reply("It says hello."),
        )
    else:
        server = gemini_server.FakeGeminiServer().start()
        server.enqueue(
            gemini_reply.call_reply("read", {"path": "hello.txt"}, thought="Read it first.", text="Reading."),
            gemini_reply.text_reply("It says hello."),
        )
    try:
        with tempfile.TemporaryDirectory() as scratch:
            (Path(scratch) / "hello.txt").write_text("hello world\n", encoding="utf-8")
            run = run_pi(provider, server.base_url, "read hello.txt", Path(scratch), thinking=thinking)
        return {"returncode": run.returncode, "answer": run.stdout.strip(), "requests": summarise(server.records)}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("provider", choices=sorted(PROVIDERS))
    parser.add_argument("--thinking", default="medium")
    args = parser.parse_args()
    if not pi_installed():
        sys.exit(f"pi is not installed at {PI_CLI}")
    print(json.dumps(probe(args.provider, args.thinking), indent=1))


if __name__ == "__main__":
    main()
