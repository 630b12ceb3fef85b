"""API keys never reach error texts: the redaction rules, then a server that quotes the key it was sent.

The end-to-end cases use the scripted server's ``echo_authorization`` mode (an error message quoting
the request's Authorization header, as some servers and proxies do) and check every place the text
goes: the returned message, retry events, the session file, JSON events and stderr.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_paths import chat_model
from scripted_server import ScriptedServer, echo_authorization_reply
from typer.testing import CliRunner

from pi_compact.cli.typer_app import build_app
from pi_compact.llm.protocol import ChatRequest, ModelInfo, Retrying, complete
from pi_compact.llm.redact import REDACTED, known_secrets, redact
from pi_compact.settings import RetrySettings

KEY = "sk-test-Zq8fK2mP9xLw4RtY"
INFO = ModelInfo("openai/scripted", "openai", 128000, None)
HELLO = ChatRequest(system="s", messages=[{"role": "user", "content": "hi", "timestamp": 1}])
FAST_RETRY = RetrySettings(enabled=True, max_retries=2, base_delay_ms=1, max_delay_ms=5)


# ---- the rules ---------------------------------------------------------------------------------------


def test_the_configured_key_is_replaced() -> None:
    assert redact(f"bad key {KEY}!", known_secrets([KEY], {})) == f"bad key {REDACTED}!"


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "MY_SERVICE_SECRET",
                                  "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"])
def test_environment_secrets_are_replaced(name: str) -> None:
    secrets = known_secrets([], {name: "value-0123456789"})
    assert redact("got value-0123456789 here", secrets) == f"got {REDACTED} here"


def test_other_variables_and_short_values_are_left_alone() -> None:
    secrets = known_secrets(["no-key"], {"PATH": "/usr/local/bin:/usr/bin", "DEBUG_TOKEN": "true"})
    assert secrets == ()
    assert redact("true /usr/local/bin:/usr/bin no-key", secrets) == "true /usr/local/bin:/usr/bin no-key"


def test_a_bearer_token_is_replaced_even_when_unknown() -> None:
    assert redact("header was Bearer abcdefgh12345678", ()) == f"header was Bearer {REDACTED}"


def test_a_key_containing_another_is_replaced_whole() -> None:
    secrets = known_secrets(["abcdefgh"], {"X_API_KEY": "abcdefgh-and-more"})
    assert redact("k=abcdefgh-and-more", secrets) == f"k={REDACTED}"


# ---- the model adapter ---------------------------------------------------------------------------------


def test_a_key_quoted_by_the_server_is_redacted_from_the_error(
    scripted_server: ScriptedServer, model_path: str
) -> None:
    scripted_server.enqueue(echo_authorization_reply())
    model = chat_model(model_path, INFO, api_base=scripted_server.base_url, api_key=KEY, retry=FAST_RETRY)
    message = complete(model, HELLO)
    assert scripted_server.request_headers[0]["authorization"] == f"Bearer {KEY}"  # the key really was sent
    assert message["errorMessage"] == (
        f"401 Incorrect API key provided: Bearer {REDACTED}. You can find your API key in your account. "
        "(invalid_api_key)"
    )


def test_a_key_from_the_environment_is_redacted_too(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, model_path: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    scripted_server.enqueue(echo_authorization_reply(400))
    model = chat_model(model_path, INFO, api_base=scripted_server.base_url, api_key=None, retry=FAST_RETRY)
    message = complete(model, HELLO)
    assert scripted_server.request_headers[0]["authorization"] == f"Bearer {KEY}"
    assert KEY not in message["errorMessage"] and REDACTED in message["errorMessage"]


def test_retry_events_are_redacted(scripted_server: ScriptedServer, model_path: str) -> None:
    scripted_server.enqueue(echo_authorization_reply(500, repeat=True))
    model = chat_model(model_path, INFO, api_base=scripted_server.base_url, api_key=KEY, retry=FAST_RETRY)
    retries = [e for e in model.stream(HELLO) if isinstance(e, Retrying)]
    assert len(retries) == 2
    assert all(KEY not in r.error_message and REDACTED in r.error_message for r in retries)


# ---- the command line (in-process, real parser) ---------------------------------------------------------


def test_json_mode_session_file_and_stderr_never_show_a_quoted_key(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "settings.json").write_text(json.dumps({"retry": {"maxRetries": 1, "baseDelayMs": 1}}))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    scripted_server.enqueue(echo_authorization_reply(500, repeat=True))  # 5xx: the retry event carries it too
    done = CliRunner().invoke(build_app(), [
        "--model", "openai/scripted", "--api-base", scripted_server.base_url, "--api-key", KEY,
        "--context-window", "10000", "-p", "Hello?", "--mode", "json",
    ])
    assert done.exit_code == 1
    [session] = list((agent_dir / "sessions").rglob("*.jsonl"))
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events].count("auto_retry_start") == 1
    for where, text in (("stdout", done.stdout), ("stderr", done.stderr), ("session", session.read_text())):
        assert KEY not in text, where
        assert REDACTED in text, where
