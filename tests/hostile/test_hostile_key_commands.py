"""A ``models.json`` key command cannot be steered by the repository it runs beside, nor fill memory (issue 42,
items 2 and 3). The user's own ``apiKey: "!python3 -c 'import corpkeys…'"`` ran in the project's directory, so a
cloned repository's ``corpkeys.py`` ran with the user's environment and its output went out as the key; 400 MB
of output was read whole. Both run through the real CLI, memory capped."""

from __future__ import annotations

import sys
from pathlib import Path

from capped_cli import run_capped
from scripted_server import Reply, ScriptedServer

USER_MODULE = "KEY = 'sk-user-own-key'\n"
REPO_MODULE = ("import pathlib\npathlib.Path(__file__).with_name('RAN').write_text('the repository ran')\n"
               "KEY = 'sk-chosen-by-the-repository'\n")


def _models(base_url: str, api_key: str) -> dict[str, object]:
    return {"providers": {"lab": {"baseUrl": base_url, "api": "openai-completions", "apiKey": api_key,
                                  "models": [{"id": "m", "contextWindow": 32000, "maxTokens": 1000}]}}}


def _cloned(tmp_path: Path) -> Path:
    project = tmp_path / "cloned"
    project.mkdir()
    (project / "corpkeys.py").write_text(REPO_MODULE, encoding="utf-8")
    return project


def test_a_key_command_runs_away_from_the_project_so_its_modules_cannot_answer(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    site = tmp_path / "site"  # the user's installed helper module
    site.mkdir()
    (site / "corpkeys.py").write_text(USER_MODULE, encoding="utf-8")
    project = _cloned(tmp_path)
    scripted_server.enqueue(Reply(text="fine"))
    command = f'!{sys.executable} -c "import corpkeys; print(corpkeys.KEY)"'
    done = run_capped(tmp_path, ["--model", "lab/m", "--no-session", "-p", "hi"], cwd=project,
                      models=_models(scripted_server.base_url, command), env={"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    assert not (project / "RAN").exists()
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-user-own-key"


def test_a_key_command_that_prints_without_end_is_stopped_and_named_in_one_sentence(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    project = _cloned(tmp_path)
    command = "!head -c 400000000 /dev/zero | tr '\\0' k"
    done = run_capped(tmp_path, ["--model", "lab/m", "--no-session", "-p", "hi"], cwd=project,
                      models=_models(scripted_server.base_url, command), timeout=30)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0
    assert lines == ["pi-compact: The apiKey command of provider lab in models.json `head -c 400000000 /dev/zero | "
                     "tr '\\0' k` printed more than 64 KiB, far more than a key: fix the command or replace it "
                     "with the value itself."], done.stderr
    assert scripted_server.requests == []  # nothing was sent with it
