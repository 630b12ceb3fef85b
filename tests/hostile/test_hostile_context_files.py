"""Files a repository ships are read only as regular files inside the project (issue 30, finding 4).

``AGENTS.md`` goes to the provider in the system prompt: linked to ``/proc/self/environ`` or a key file it
would send the user's secrets; linked to ``/dev/zero`` it ate memory, to a FIFO or ``/dev/stdin`` it stalled
start-up, and a non-UTF-8 one crashed with a traceback. The runs go through the real CLI in a subprocess
(memory capped at 1 GiB, a time limit) so a regression fails instead of taking the machine down or hanging.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer

from pi_compact.cli.wiring import project_instructions
from pi_compact.settings.files import load_settings

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _run(tmp_path: Path, server: ScriptedServer, project: Path) -> subprocess.CompletedProcess[str]:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "settings.json").write_text(json.dumps({"retry": {"maxRetries": 0}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent), "HOME": str(tmp_path), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "LITELLM_OFFLINE_MODE": "true", "PYTHONPATH": os.pathsep.join(sys.path)})
    server.enqueue(Reply(text="fine"))
    command = [sys.executable, "-m", "pi_compact.cli", "--model", "openai/scripted", "--api-base", server.base_url,
               "--api-key", "test-key-123", "--context-window", "8000", "--no-session", "-p", "hi"]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, preexec_fn=_limited)


def _system_prompt(server: ScriptedServer) -> str:
    system = [m for m in server.requests[-1]["messages"] if m["role"] in ("system", "developer")]
    content = system[0]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "cloned"
    project.mkdir()
    return project


@pytest.mark.parametrize("target", ["outside", "/dev/zero", "fifo"])
def test_a_linked_or_special_agents_md_is_not_read_and_start_up_goes_on(
    tmp_path: Path, scripted_server: ScriptedServer, target: str
) -> None:
    project = _project(tmp_path)
    agents = project / "AGENTS.md"
    if target == "outside":
        (tmp_path / ".ssh").mkdir()
        (tmp_path / ".ssh" / "id_ed25519").write_text(SECRET)
        agents.symlink_to(Path("..") / ".ssh" / "id_ed25519")
    elif target == "fifo":
        os.mkfifo(agents)  # inside the project, but opening it for reading would wait for a writer forever
    else:
        agents.symlink_to(target)
    done = _run(tmp_path, scripted_server, project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fine"
    assert SECRET not in _system_prompt(scripted_server)
    assert "Project instructions" not in _system_prompt(scripted_server)
    warnings = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and f"Not reading {agents}" in warnings[0], done.stderr
    assert "Traceback" not in done.stderr


def test_agents_md_linked_to_proc_environ_never_reaches_the_prompt(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "AGENTS.md").symlink_to("/proc/self/environ")
    reports: list[str] = []
    assert project_instructions(project, reports.append) is None
    assert len(reports) == 1 and "outside the project" in reports[0]


def test_agents_md_linked_to_stdin_is_not_read(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "AGENTS.md").symlink_to("/dev/stdin")
    reports: list[str] = []
    assert project_instructions(project, reports.append) is None
    assert len(reports) == 1 and reports[0].startswith(f"Not reading {project / 'AGENTS.md'}")


def test_a_non_utf8_agents_md_is_read_with_replacement_and_one_warning(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    project = _project(tmp_path)
    (project / "AGENTS.md").write_bytes(b"Use tabs.\n\xff\xfe caf\xe9 rules\nRun make test.\n")
    done = _run(tmp_path, scripted_server, project)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    prompt = _system_prompt(scripted_server)
    assert "Use tabs." in prompt and "caf\ufffd rules" in prompt and "Run make test." in prompt
    warnings = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and "not valid UTF-8" in warnings[0] and "AGENTS.md" in warnings[0]


def test_an_agents_md_inside_the_project_through_a_link_is_still_read(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    project = _project(tmp_path)
    (project / "docs").mkdir()
    (project / "docs" / "agents.md").write_text("Prefer small commits.")
    (project / "AGENTS.md").symlink_to(Path("docs") / "agents.md")
    done = _run(tmp_path, scripted_server, project)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    assert "Prefer small commits." in _system_prompt(scripted_server)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/stdin", "fifo", "outside"])
def test_a_project_settings_file_linked_to_a_device_pipe_or_outside_is_ignored_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    project = _project(tmp_path)
    (project / ".pi").mkdir()
    settings = project / ".pi" / "settings.json"
    if target == "fifo":
        os.mkfifo(settings)
    elif target == "outside":
        (tmp_path / "theirs.json").write_text(json.dumps({"compaction": {"reserveTokens": 5}}))
        settings.symlink_to(tmp_path / "theirs.json")
    else:
        settings.symlink_to(target)
    loaded = load_settings(project)
    assert loaded.settings.compaction.reserve_tokens == 16384
    assert len(loaded.warnings) == 1 and loaded.warnings[0].startswith(f"Ignoring settings file {settings}: ")


def test_an_agents_md_over_the_size_cap_is_not_read(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "AGENTS.md").write_bytes(b"x" * (1024 * 1024 + 1))
    reports: list[str] = []
    assert project_instructions(project, reports.append) is None
    assert len(reports) == 1 and "more than the 1,048,576 allowed" in reports[0]
