"""The remembered trust answers are never lost (issue 42, item 5). Two terminals answering at once lost 37 of 80
answers, and a file cut short, then one new answer, dropped the three answers left in it with no copy. Writers
now take turns and merge, and a file that does not parse is set aside, not overwritten."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from terminal_harness import CLI, LONG, Terminal

from pi_compact.settings.files import load_settings
from pi_compact.settings.trust import TrustPolicy
from pi_compact.settings.trust_store import project_key, store_path

WORKERS, EACH = 8, 10
# One terminal answering "ignore" for its projects, one after the other, once every worker is ready.
ANSWERING = """
import sys, time
from pathlib import Path
from pi_compact.settings.files import load_settings
from pi_compact.settings.trust import TrustPolicy
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
for project in sys.argv[2:]:
    load_settings(Path(project), trust=TrustPolicy(ask=lambda cwd, claims: "ignore"))
"""


def _project(root: Path, name: str) -> Path:
    project = root / name
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": "/tmp/elsewhere"}), encoding="utf-8")
    return project


@pytest.fixture()
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return agent


def _answers() -> dict[str, str]:
    data = json.loads(store_path().read_text(encoding="utf-8"))
    return {path: entry["answer"] for path, entry in data["projects"].items()}


def test_answers_given_in_many_terminals_at_once_are_all_kept(tmp_path: Path, agent: Path) -> None:
    go = tmp_path / "go"
    projects = [[_project(tmp_path, f"p{w}-{n}") for n in range(EACH)] for w in range(WORKERS)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    workers = [subprocess.Popen([sys.executable, "-c", ANSWERING, str(go), *map(str, mine)], env=env,
                                stderr=subprocess.PIPE, text=True) for mine in projects]
    go.touch()
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    expected = {project_key(p): "ignore" for mine in projects for p in mine}
    assert _answers() == expected  # all 80


def test_a_file_cut_short_is_set_aside_whole_before_a_new_answer_is_kept(tmp_path: Path, agent: Path) -> None:
    earlier = [_project(tmp_path, f"old{n}") for n in range(3)]
    for project in earlier:
        load_settings(project, trust=TrustPolicy(ask=lambda cwd, claims: "ignore"))
    whole = store_path().read_bytes()
    store_path().write_bytes(whole[: len(whole) - 40])  # cut short (a full disk, a crash of another program)
    cut = store_path().read_bytes()
    new = _project(tmp_path, "new")
    loaded = load_settings(new, trust=TrustPolicy(ask=lambda cwd, claims: "ignore"))
    kept = [p for p in agent.iterdir() if p.name.startswith("pi-compact-trust.json.unreadable-")]
    assert len(kept) == 1 and kept[0].read_bytes() == cut
    assert oct(kept[0].stat().st_mode & 0o777) == "0o600"
    assert _answers() == {project_key(new): "ignore"}
    note = [w for w in loaded.warnings if "could not be read" in w]
    assert note == [f"Ignoring this project's risky settings (sessionDir) in {new / '.pi'}: they could send your "
                    "keys or conversation elsewhere or run code; you chose to ignore them (remembered in "
                    f"{store_path()}); --trust-project uses them. {store_path()} could not be read (it is not valid "
                    f"JSON ({_json_error(cut)})), so it was kept as {kept[0]} and a new one started: directories "
                    "answered in it will be asked again."]


def _json_error(raw: bytes) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        return str(exc)
    raise AssertionError("the cut file parses")


@pytest.mark.terminal
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_in_the_terminal_an_answer_given_over_a_cut_file_keeps_the_old_file_and_says_so(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"retry": {"maxRetries": 0}}))
    cut = b'{\n  "version": 2,\n  "projects": {\n    "/home/me/work": {\n      "answer": "ignore",\n      "cla'
    (agent / "pi-compact-trust.json").write_bytes(cut)
    term = Terminal(tmp_path, scripted_server, settings={"sessionDir": str(tmp_path / "theirs")},
                    with_session_flag=False)
    try:
        term.wait_for("Trust this directory?", timeout=LONG)
        term.type("i")
        term.wait_for("pi>", timeout=LONG)
    finally:
        term.close()
    kept = [p for p in agent.iterdir() if p.name.startswith("pi-compact-trust.json.unreadable-")]
    assert len(kept) == 1 and kept[0].read_bytes() == cut
    said = term.stderr_file.read_text(encoding="utf-8")  # the terminal's stderr (the harness keeps it in a file)
    assert "could not be read (it is not valid JSON" in said and f"so it was kept as {kept[0]}" in said, said
    data = json.loads((agent / "pi-compact-trust.json").read_text(encoding="utf-8"))
    assert [entry["answer"] for entry in data["projects"].values()] == ["ignore"]
