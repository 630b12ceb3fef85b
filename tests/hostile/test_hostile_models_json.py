"""``models.json`` is read as pi 0.73.1 reads it, in linear time (issue 42, item 4). A file of unclosed ``/*``
comments took about ten minutes at the 1 MB limit, with nothing on screen; a file with trailing commas was
ignored whole ("pi ignores it too") although pi reads it and answers. Both through the real CLI, and the second
beside pi itself when it is installed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from capped_cli import agent_dir, run_capped
from fakes.pi_probe import PI_CLI, pi_installed
from scripted_server import Reply, ScriptedServer

TRAILING = ('{{"providers": {{"lab": {{"baseUrl": "{url}", "api": "openai-completions", "apiKey": "sk-lab",\n'
            '  "models": [{{"id": "m", "contextWindow": 32000, "maxTokens": 1000,}},],}},}},}}\n')


def test_a_megabyte_of_unclosed_comments_and_quotes_is_read_at_once(tmp_path: Path,
                                                                    scripted_server: ScriptedServer) -> None:
    agent = agent_dir(tmp_path)
    hostile = '{"providers": {' + "/*" * 250_000 + '"\\' * 249_000
    (agent / "models.json").write_text(hostile, encoding="utf-8")
    scripted_server.enqueue(Reply(text="fine"))
    done = run_capped(tmp_path, ["--model", "openai/scripted", "--api-base", scripted_server.base_url, "--api-key",
                                 "k", "--context-window", "32000", "--no-session", "-p", "hi"],
                      cwd=tmp_path, timeout=40)  # the code before took minutes
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fine"
    assert f"Ignoring {agent / 'models.json'}: invalid JSON at line 1, column 16" in done.stderr


def test_a_models_json_with_trailing_commas_is_used(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    agent = agent_dir(tmp_path)
    (agent / "models.json").write_text(TRAILING.format(url=scripted_server.base_url), encoding="utf-8")
    scripted_server.enqueue(Reply(text="fine"))
    done = run_capped(tmp_path, ["--model", "lab/m", "--no-session", "-p", "hi"], cwd=tmp_path)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "fine", "")
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-lab"


@pytest.mark.skipif(not pi_installed(), reason="pi 0.73.1 is not installed in node_modules")
@pytest.mark.parametrize(("text", "answers"), [
    (TRAILING, True),
    ('{{"providers": {{/* lab */ "lab": {{"baseUrl": "{url}", "api": "openai-completions", "apiKey": "sk-lab", '
     '"models": [{{"id": "m"}}]}}}}}}', False),
])
def test_pi_and_we_answer_with_the_same_models_json_or_both_ignore_it(
    tmp_path: Path, scripted_server: ScriptedServer, text: str, answers: bool
) -> None:
    agent = agent_dir(tmp_path)
    (agent / "models.json").write_text(text.format(url=scripted_server.base_url), encoding="utf-8")
    (agent / "settings.json").write_text(json.dumps({"quietStartup": True, "retry": {"enabled": False}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "OPENAI_", "ANTHROPIC_"))}
    env.update(HOME=str(tmp_path / "home"), PI_CODING_AGENT_DIR=str(agent), PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1")
    scripted_server.enqueue(Reply(text="fine"), Reply(text="fine"))
    pi = subprocess.run(["node", str(PI_CLI), "--provider", "lab", "--model", "m", "--no-session", "--no-extensions",
                         "--no-skills", "--no-context-files", "-p", "hi"],
                        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    ours = run_capped(tmp_path, ["--model", "lab/m", "--no-session", "-p", "hi"], cwd=tmp_path)
    assert (pi.stdout.strip() == "fine") is answers, pi.stderr
    assert (ours.stdout.strip() == "fine") is answers, ours.stderr
    assert len(scripted_server.requests) == (2 if answers else 0)
