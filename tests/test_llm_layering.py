"""The model layer's import rules and silence, checked in fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS_DIR = Path(__file__).parent


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
