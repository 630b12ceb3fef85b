"""The model layer's import rules and silence, checked in fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]  # the support modules (scripted_server, ...) live here


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=TESTS_DIR.parent,
    )


def test_pure_llm_modules_do_not_import_litellm() -> None:
    code = (
        "import sys\n"
        "import pi_compact.llm, pi_compact.llm.protocol, pi_compact.llm.overflow, pi_compact.llm.convert\n"
        "import pi_compact.llm.resolve, pi_compact.llm.retry, pi_compact.llm.assemble\n"
        "import pi_compact.llm.litellm_model\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'openai', 'httpx')))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_litellm_path_prints_nothing_even_without_offline_variables() -> None:
    # No LITELLM_* variables: the adapter must set them itself, or litellm tries the network and warns.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    code = f"""
import sys
sys.path.insert(0, {str(TESTS_DIR)!r})
from scripted_server import Reply, ScriptedServer, server_error_reply, openai_context_overflow_reply
from pi_compact.llm.litellm_model import LiteLLMModel, lookup_model_info
from pi_compact.llm.protocol import ChatRequest, ModelInfo, complete
from pi_compact.settings import RetrySettings
server = ScriptedServer().start()
server.enqueue(Reply(text="ok"), Reply(text="w", finish_reason="weird"))
server.enqueue(server_error_reply(500), openai_context_overflow_reply())
info = ModelInfo("openai/scripted", "openai", 1000, None)
model = LiteLLMModel(info, api_base=server.base_url, api_key="k", retry=RetrySettings(enabled=False))
request = ChatRequest("s", [{{"role": "user", "content": "hi", "timestamp": 1}}])
reasons = [complete(model, request)["stopReason"] for _ in range(4)]
lookup_model_info("no-such-provider/no-such-model")
server.stop()
sys.stdout.write("|".join(reasons))
"""
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("stop|stop|error|error", "")


def test_new_model_modules_do_not_import_litellm_either() -> None:
    code = (
        "import sys\n"
        "import pi_compact.llm.model_map, pi_compact.llm.route, pi_compact.llm.openai.client\n"
        "import pi_compact.llm.openai.chunks, pi_compact.llm.openai.failures, pi_compact.llm.http_sse\n"
        "import pi_compact.llm.stream_loop, pi_compact.llm.failures, pi_compact.llm.learned\n"
        "import pi_compact.llm.local.model\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'openai', 'httpx')))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _cli_with_litellm_report(args: list[str]) -> str:
    """Python code running the CLI with ``args``; at exit it writes whether litellm was imported."""
    return f"""
import atexit, os, sys
def report():
    sys.stderr.write("litellm imported: " + str("litellm" in sys.modules) + "\\n")
    sys.stderr.flush()
atexit.register(report)
hard_exit = os._exit
os._exit = lambda code: (report(), hard_exit(code))  # the CLI skips atexit once litellm is loaded
sys.path.insert(0, {str(TESTS_DIR)!r})
sys.argv = ["pi-compact", *{args!r}]
from pi_compact.cli import main
main()
"""


def _scripted(reply_text: str, count: int = 1) -> tuple[object, str]:
    sys.path.insert(0, str(TESTS_DIR))
    from scripted_server import Reply, ScriptedServer

    server = ScriptedServer().start()
    server.enqueue(*[Reply(text=reply_text)] * count)
    return server, server.base_url


def test_print_mode_with_an_openai_compatible_server_never_imports_litellm(tmp_path: Path) -> None:
    server, base = _scripted("hello from the server")
    try:
        args = ["-p", "hi", "--no-session", "--model", "openai/local", "--api-base", base, "--api-key", "k",
                "--context-window", "8000"]
        env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
        result = run_python(_cli_with_litellm_report(args), env)
    finally:
        server.stop()  # type: ignore[attr-defined]
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from the server\n"
    assert "litellm imported: False" in result.stderr


def test_the_model_path_variable_keeps_such_a_model_on_litellm(tmp_path: Path) -> None:
    server, base = _scripted("hello through litellm")
    try:
        args = ["-p", "hi", "--no-session", "--model", "openai/local", "--api-base", base, "--api-key", "k",
                "--context-window", "8000"]
        env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
               "PI_COMPACT_MODEL_PATH": "litellm"}
        result = run_python(_cli_with_litellm_report(args), env)
    finally:
        server.stop()  # type: ignore[attr-defined]
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello through litellm\n"
    assert "litellm imported: True" in result.stderr


def _repl_warm_up(model: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the REPL's background loader (session, then model warm-up) in a fresh interpreter."""
    code = f"""
import sys
from pathlib import Path
from pi_compact.cli.wiring import AppRuntimes
from pi_compact.options import AppOptions
from pi_compact.settings.files import load_settings
from pi_compact.ui.repl import Repl
options = AppOptions(cwd=Path({str(tmp_path)!r}), model={model!r}, api_base="http://127.0.0.1:9/v1",
                     context_window=8000, no_session=True)
repl = Repl(AppRuntimes(options), load_settings(options.cwd))
repl._load()
assert repl.failure is None, repl.failure
print("litellm" in sys.modules)
"""
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    return run_python(code, env)


def test_the_repl_does_not_load_litellm_for_a_model_the_direct_client_serves(tmp_path: Path) -> None:
    result = _repl_warm_up("openai/local", tmp_path)
    assert (result.returncode, result.stdout.strip()) == (0, "False"), result.stderr


def test_the_repl_still_preloads_litellm_for_other_models(tmp_path: Path) -> None:
    result = _repl_warm_up("anthropic/claude-sonnet-4-5", tmp_path)
    assert (result.returncode, result.stdout.strip()) == (0, "True"), result.stderr
