"""How ``pi-compact`` starts: a positional prompt, text piped on stdin, ``-h``, ``--mode`` values, ``-c``
with nothing to continue, and the hints for mistyped slash commands.

The parsing rules are pure and tested directly; the runs go through the real CLI (``main()`` in a
subprocess for the piped-stdin cases, typer's CliRunner otherwise) against the scripted server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer
from typer.testing import CliRunner
from ui_harness import FakeModel, make_state

from pi_compact.cli.argv import plan_start, split_prompt_words, with_context
from pi_compact.cli.typer_app import build_app
from pi_compact.ui.commands import dispatch

SETTINGS = {"retry": {"maxRetries": 0}, "compaction": {"reserveTokens": 2000, "keepRecentTokens": 150}}


def _model_args(server: ScriptedServer) -> list[str]:
    return ["--model", "openai/scripted", "--api-base", server.base_url, "--api-key", "test",
            "--context-window", "10000"]


def _env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "settings.json").write_text(json.dumps(SETTINGS))
    cwd = tmp_path / "proj"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "HOME": str(tmp_path)})
    return env, cwd


def _user_text(server: ScriptedServer, index: int = -1) -> str:
    content = [m for m in server.requests[index]["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


# ---- parsing ------------------------------------------------------------------------------------


def test_positional_words_are_taken_out_but_option_values_stay() -> None:
    argv = ["--model", "openai/x", "fix", "the failing test", "--session", "s.jsonl"]
    assert split_prompt_words(argv) == (["--model", "openai/x", "--session", "s.jsonl"], ["fix", "the failing test"])


def test_the_compact_subcommand_is_left_to_typer() -> None:
    argv = ["compact", "--dry-run", "s.jsonl"]
    assert split_prompt_words(argv) == (argv, [])


def test_words_after_a_double_dash_are_prompt_text_even_with_dashes() -> None:
    assert split_prompt_words(["--", "-x", "means what?"]) == ([], ["-x", "means what?"])


def test_piped_text_without_p_is_one_printed_prompt() -> None:
    assert plan_start(None, [], "hi\n").print_prompt == "hi"
    assert plan_start(None, [], None).print_prompt is None


def test_a_positional_prompt_opens_the_terminal_with_it_as_the_first_message() -> None:
    plan = plan_start(None, ["fix the failing test"], None)
    assert (plan.print_prompt, plan.first_message) == (None, "fix the failing test")


def test_p_with_piped_text_sends_the_question_then_the_text_as_context() -> None:
    assert plan_start("why", [], "line 1\nline 2\n").print_prompt == "why\n\n<stdin>\nline 1\nline 2\n</stdin>"
    assert with_context("", "only text\n") == "only text"


# ---- through the real CLI -----------------------------------------------------------------------


def test_p_reads_piped_stdin_as_context(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    scripted_server.enqueue(Reply(text="The test imports a missing module."))
    env, cwd = _env(tmp_path)
    command = [sys.executable, "-m", "pi_compact", *_model_args(scripted_server), "--no-session",
               "-p", "why does this fail"]
    done = subprocess.run(command, cwd=cwd, env=env, input="E   ModuleNotFoundError: foo\n", capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "The test imports a missing module.\n"), done.stderr
    assert _user_text(scripted_server) == "why does this fail\n\n<stdin>\nE   ModuleNotFoundError: foo\n</stdin>"


def test_piped_stdin_without_p_runs_that_one_prompt_and_exits(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    scripted_server.enqueue(Reply(text="Hello there."))
    env, cwd = _env(tmp_path)
    command = [sys.executable, "-m", "pi_compact", *_model_args(scripted_server), "--no-session"]
    done = subprocess.run(command, cwd=cwd, env=env, input="hi\n", capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "Hello there.\n", "")
    assert _user_text(scripted_server) == "hi"


def test_dash_h_prints_the_help_like_dash_dash_help() -> None:
    short = CliRunner().invoke(build_app(), ["-h"])
    long = CliRunner().invoke(build_app(), ["--help"])
    assert short.exit_code == 0
    assert short.output == long.output
    assert "--continue" in short.output


def test_the_help_lists_the_values_of_mode() -> None:
    done = CliRunner().invoke(build_app(), ["--help"])
    assert "--mode [text|json]" in done.output


def test_continue_with_nothing_to_continue_says_so(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(Reply(text="ok"))
    env, cwd = _env(tmp_path)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", env["PI_CODING_AGENT_DIR"])
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.chdir(cwd)
    sessions = tmp_path / "sessions"
    done = CliRunner().invoke(build_app(), [*_model_args(scripted_server), "-c", "--session-dir", str(sessions),
                                            "-p", "hello"])
    assert done.exit_code == 0, done.output
    assert f"pi-compact: No session to continue in {sessions}; starting a new one." in done.output


# ---- slash command hints ------------------------------------------------------------------------


def test_a_mistyped_command_suggests_the_closest_one(project: Path) -> None:
    model = FakeModel()
    state, buffer = make_state(project, model)
    assert dispatch(state, "/compac") == "continue"
    assert "Unknown command /compac; did you mean /compact? Nothing was sent to the model." in buffer.getvalue()
    assert model.requests == []


def test_an_argument_to_a_command_that_takes_none_gets_a_hint_and_runs_nothing(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    assert dispatch(state, "/new please") == "continue"
    assert "/new takes no arguments; type /new alone. Nothing was run." in buffer.getvalue()
    assert "fresh" not in buffer.getvalue().lower() and state.session.store.path == project / "s.jsonl"


def test_every_option_of_the_main_command_that_takes_a_value_is_known_to_the_prompt_splitter() -> None:
    import typer.main

    from pi_compact.cli.argv import VALUE_OPTIONS

    command = typer.main.get_command(build_app())
    takes_value = {name for param in command.params if not getattr(param, "is_flag", True)
                   for name in param.opts if name.startswith("-")}
    assert takes_value == VALUE_OPTIONS


def test_every_subcommand_of_the_cli_is_left_to_typer() -> None:
    from pi_compact.cli.flags import SUBCOMMANDS
    from pi_compact.cli.typer_app import build_app

    names = {command.name or command.callback.__name__ for command in build_app().registered_commands
             if command.callback is not None}
    assert names == set(SUBCOMMANDS)
    for name in sorted(names):
        assert split_prompt_words([name, "s.jsonl"]) == ([name, "s.jsonl"], [])


def test_the_start_flags_are_the_main_commands_flags() -> None:
    """typer hands ``start`` one ``StartFlags`` built from the flag table: a flag added there has its field."""
    from dataclasses import fields

    from pi_compact.cli.flags import MAIN
    from pi_compact.cli.start import StartFlags

    assert {f.name for f in fields(StartFlags)} == {flag.dest for flag in MAIN} - {"version"}
    assert StartFlags().mode == next(flag.default for flag in MAIN if flag.dest == "mode")
