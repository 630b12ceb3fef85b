"""Files written by shell commands, read from the commands' text (``compaction.kept.shell_writes``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from builders import (
    assistant,
    chain,
    compact_in_process,
    compaction_settings,
    sized,
    structured_summary,
    tool_call,
    tool_result,
    user,
    write_session,
)
from fixtures_path import FIXTURES, needs_fixtures, parity_sessions

from pi_compact.compaction.fileops import with_modified
from pi_compact.compaction.kept.shell_lex import simple_commands
from pi_compact.compaction.kept.shell_writes import known_to_succeed, shell_written_files, written_paths
from pi_compact.session.store import SessionStore

# ---- the writing forms -----------------------------------------------------------------------------


def test_sed_in_place_lists_its_file() -> None:
    assert written_paths("sed -i 's/old/new/' config.yml") == ["config.yml"]


def test_bsd_sed_empty_suffix_is_not_taken_for_the_script() -> None:
    assert written_paths("sed -i '' 's/a/b/' src/app.ts") == ["src/app.ts"]


def test_sed_with_expressions_lists_every_file() -> None:
    assert written_paths("sed -i.bak -e s/a/b/ -e s/c/d/ a.txt b.txt") == ["a.txt", "b.txt"]


def test_sed_long_switches_are_not_taken_for_the_script_or_a_file() -> None:
    assert written_paths("sed --quiet -i s/a/b/ notes.txt") == ["notes.txt"]
    assert written_paths("sed --regexp-extended --posix -i 's/(a)/b/' a.txt b.txt") == ["a.txt", "b.txt"]
    assert written_paths("sed -i -- s/a/b/ plain.txt") == ["plain.txt"]


def test_sed_without_in_place_writes_nothing() -> None:
    assert written_paths("sed -n 1,20p src/app.ts") == []


def test_perl_in_place_lists_its_file() -> None:
    assert written_paths("perl -pi -e 's/x/y/' lib/a.pm") == ["lib/a.pm"]


def test_perl_without_in_place_writes_nothing() -> None:
    assert written_paths("perl -ne 'print if /x/' lib/a.pm") == []


def test_redirect_and_append_list_their_targets() -> None:
    assert written_paths("echo a > out.txt && echo b >> log/run.log") == ["out.txt", "log/run.log"]


def test_redirect_to_dev_null_and_descriptor_copies_write_nothing() -> None:
    assert written_paths("npm test > /dev/null 2>&1 | tail -5; make 2>/dev/null >&2") == []


def test_stderr_redirect_to_a_file_is_a_write() -> None:
    assert written_paths("make 2> build.err") == ["build.err"]


def test_quoted_operators_are_arguments_not_redirects() -> None:
    assert written_paths("grep -n '>' notes.md | grep \"a > b\" && echo 'x' \\> f") == []


def test_tee_lists_its_files_with_or_without_append() -> None:
    assert written_paths("make 2>&1 | tee build.log | tee -a all.log") == ["build.log", "all.log"]


def test_heredoc_into_a_file_is_a_write_and_its_body_is_not_read_as_commands() -> None:
    command = "cat > deploy/app.env <<'EOF'\nMODE=a > b\nrm -rf /important\nEOF"
    assert written_paths(command) == ["deploy/app.env"]


def test_mv_lists_source_and_destination() -> None:
    assert written_paths("mv old.py new.py") == ["old.py", "new.py"]


def test_cp_lists_only_the_destination() -> None:
    assert written_paths("cp -r template.toml pyproject.toml") == ["pyproject.toml"]


def test_copy_of_several_files_lists_them_inside_the_directory() -> None:
    assert written_paths("cp a.txt b.txt backup/") == ["backup/a.txt", "backup/b.txt"]


def test_move_into_the_current_directory_lists_the_file_under_its_name_there() -> None:
    assert written_paths("mv utils/config.ts .") == ["utils/config.ts", "config.ts"]


def test_move_of_a_loop_variable_into_a_directory_lists_nothing() -> None:
    assert written_paths('for f in *.ts; do mv "$f" ../components/; done') == []


def test_a_whole_directory_restored_names_no_file() -> None:
    assert written_paths("cd /repo && git checkout -- .") == []


def test_git_checkout_of_named_files_lists_them() -> None:
    assert written_paths("git checkout -- src/a.py") == ["src/a.py"]


def test_a_target_directory_option_puts_the_files_inside_it() -> None:
    assert written_paths("cp -t dist/ a.js b.js") == ["dist/a.js", "dist/b.js"]


def test_a_target_directory_inside_a_flag_cluster_lists_nothing() -> None:
    assert written_paths("cp -rt dist a.js") == []


def test_rm_lists_each_file() -> None:
    assert written_paths("rm -f a.log b.log") == ["a.log", "b.log"]


def test_touch_lists_its_files_but_not_an_option_value() -> None:
    assert written_paths("touch -d '1 day ago' stamp") == ["stamp"]


def test_mkdir_is_no_file_change() -> None:
    assert written_paths("mkdir -p src/new") == []


def test_git_mv_and_git_rm_list_their_files() -> None:
    assert written_paths("git mv a.py b.py && git rm c.py") == ["a.py", "b.py", "c.py"]


def test_git_rm_cached_changes_no_file() -> None:
    assert written_paths("git rm --cached secrets.env") == []


def test_patch_lists_the_named_file() -> None:
    assert written_paths("patch src/main.c < fix.diff") == ["src/main.c"]


def test_patch_from_a_heredoc_lists_the_diffs_files_stripped() -> None:
    command = "patch -p1 <<'EOF'\n--- a/src/x.c\n+++ b/src/x.c\n@@ -1 +1 @@\n-a\n+b\nEOF"
    assert written_paths(command) == ["src/x.c"]


def test_git_apply_of_a_file_it_cannot_see_lists_nothing() -> None:
    assert written_paths("git apply fix.patch") == []


def test_git_apply_check_changes_nothing() -> None:
    assert written_paths("git apply --check <<EOF\n--- a/q.py\n+++ b/q.py\nEOF") == []


def test_cd_makes_later_paths_relative_to_its_directory() -> None:
    assert written_paths("cd packages/tui && sed -i 's/a/b/' src/x.ts") == ["packages/tui/src/x.ts"]


def test_cd_up_makes_later_paths_relative_to_the_parent() -> None:
    assert written_paths("cd web && cd .. && rm a.txt; cd .. && rm b.txt") == ["a.txt", "../b.txt"]


def test_git_dash_c_makes_its_paths_relative_to_that_directory() -> None:
    assert written_paths("cd repo && git -C sub -C deep rm a.py") == ["repo/sub/deep/a.py"]


def test_cd_to_an_unknown_place_drops_relative_paths_but_keeps_absolute_ones() -> None:
    assert written_paths("cd $WORK && rm notes.txt; rm /tmp/scratch.txt") == ["/tmp/scratch.txt"]


def test_a_command_next_to_or_may_not_have_run_and_is_skipped() -> None:
    assert written_paths("rm stale.lock || true; test -f x || touch x") == []


def test_command_substitution_makes_the_line_unreadable() -> None:
    assert written_paths("echo $(date) > stamp.txt") == []


def test_an_unclosed_quote_makes_the_line_unreadable() -> None:
    assert written_paths("echo 'oops > out.txt") == []


def test_paths_with_variables_or_globs_are_skipped() -> None:
    assert written_paths("rm $TMP/x *.pyc && sed -i s/a/b/ src/*.ts") == []


def test_find_delete_and_xargs_are_not_guessed() -> None:
    assert written_paths("find . -name '*.pyc' -delete; grep -l x . | xargs sed -i s/x/y/") == []


# ---- only a command known to have run and succeeded writes (issue 41) ---------------------------------


@pytest.mark.parametrize(("command", "known"), [
    ("a && b && c", [True, True, True]),
    ("a; b && c", [False, True, True]),
    ("a | b && c", [False, True, True]),
    ("a && b | c", [True, False, True]),
    ("a || b && c", [False, False, True]),
    ("a && b || c", [False, False, False]),
    ("a & b", [False, True]),
    ("a\nb\n", [False, True]),
])
def test_which_commands_of_a_line_that_exited_with_zero_are_known_to_have_succeeded(
        command: str, known: list[bool]) -> None:
    assert known_to_succeed(simple_commands(command)) == known


@pytest.mark.parametrize(("command", "written"), [
    ("false && touch ghost.txt; echo checked", []),
    ("echo x > a.txt; cat a.txt", []),
    ("cd src; sed -i s/a/b/ x.py", []),
    ("cd src && sed -i s/a/b/ x.py && git diff", ["src/x.py"]),
    ("make gen | tee build.log", ["build.log"]),
    ("echo x > a.txt | cat", []),
])
def test_a_line_that_exited_with_zero_writes_only_by_its_commands_known_to_have_succeeded(
        command: str, written: list[str]) -> None:
    assert written_paths(command, succeeded_only=True) == written


def test_a_command_whose_result_reports_a_failing_exit_writes_nothing() -> None:
    messages = [
        assistant(tool_calls=[tool_call("bash", {"command": "touch a.txt"}, "c1"),
                              tool_call("bash", {"command": "touch b.txt"}, "c2")]),
        tool_result("(no output)\n\n[Exit code: 1]", tool_call_id="c1"),
        tool_result("Command exited with code 2", tool_call_id="c2"),
    ]
    assert shell_written_files(messages) == []


# ---- from the history -------------------------------------------------------------------------------


def test_only_bash_calls_that_succeeded_count() -> None:
    messages = [
        assistant(tool_calls=[tool_call("bash", {"command": "sed -i s/a/b/ ok.txt"}, "c1"),
                              tool_call("bash", {"command": "sed -i s/a/b/ failed.txt"}, "c2"),
                              tool_call("bash", {"command": "sed -i s/a/b/ no_result.txt"}, "c3")]),
        tool_result("", tool_call_id="c1"),
        tool_result("sed: can't read failed.txt", tool_call_id="c2", is_error=True),
    ]
    assert shell_written_files(messages) == ["ok.txt"]


def test_a_users_own_shell_run_counts_when_it_exited_with_zero() -> None:
    runs = [{"role": "bashExecution", "command": "echo 1 > a.txt", "exitCode": 0, "output": ""},
            {"role": "bashExecution", "command": "echo 1 > b.txt", "exitCode": 1, "output": ""}]
    assert shell_written_files(runs) == ["a.txt"]


def test_shell_written_files_join_the_modified_list_and_leave_the_read_list() -> None:
    assert with_modified(["conf.yml", "a.py"], ["b.py"], ["conf.yml", "b.py"]) == (
        ["a.py"], ["b.py", "conf.yml"], ["conf.yml"])


def test_a_compaction_lists_shell_written_files_and_records_them(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user("Switch the staging config to the new pool."),
        assistant(tool_calls=[tool_call("bash", {"command": "sed -i 's/pool: a/pool: b/' deploy/staging.yml"},
                                        "call-1")]),
        tool_result("", tool_call_id="call-1"),
        assistant(tool_calls=[tool_call("bash", {"command": "grep -n pool deploy/prod.yml"}, "call-2")]),
        tool_result("3: pool: a", tool_call_id="call-2"),
        assistant("Switched. " + sized(600)),
        user("Good. " + sized(300)),
        assistant("Done. " + sized(300)),
    ))
    entry, _model = compact_in_process(path, tmp_path, structured_summary("pool"))
    assert str(entry["summary"]).endswith("<modified-files>\ndeploy/staging.yml\n</modified-files>")
    assert entry["details"]["modifiedFiles"] == ["deploy/staging.yml"]
    assert {"action": "shellFilesAdded", "files": ["deploy/staging.yml"]} in entry["details"]["qualityGate"]


# ---- over pi's own fixture sessions -----------------------------------------------------------------

# A command is read-only when every part of it starts with one of these and it redirects nothing.
_READ_ONLY = re.compile(
    r"^(?:cd|ls|cat|grep|rg|head|tail|wc|echo|pwd|less|tree|stat|file|which|diff|sort|uniq|"
    r"git (?:diff|log|status|show|branch)|find(?!.*-(?:delete|exec)))\b"
)
_SAFE_REDIRECTS = re.compile(r"\d?>&\d|\d?>\s*/dev/null")


def _fixture_bash_commands() -> Iterator[str]:
    sessions = [*parity_sessions(), *sorted(FIXTURES.glob("*.v3.jsonl"))]
    for session in sessions:
        for line in session.read_text(encoding="utf-8").splitlines():
            message: Mapping[str, Any] = json.loads(line).get("message") or {}
            for block in message.get("content") or () if message.get("role") == "assistant" else ():
                if isinstance(block, dict) and block.get("type") == "toolCall" and block.get("name") == "bash":
                    yield str(block["arguments"].get("command") or "")


def _read_only(command: str) -> bool:
    if ">" in _SAFE_REDIRECTS.sub("", command) or "tee" in command or "-i" in command:
        return False
    return all(_READ_ONLY.match(part.strip()) for part in re.split(r"&&|\|\||;|\||\n", command) if part.strip())


@needs_fixtures
def test_fixture_read_only_commands_write_nothing() -> None:
    read_only = [c for c in _fixture_bash_commands() if _read_only(c)]
    assert len(read_only) > 300  # the property is checked on many real commands
    assert [(c, written_paths(c)) for c in read_only if written_paths(c)] == []


@needs_fixtures
def test_fixture_written_paths_are_named_in_their_command() -> None:
    commands = list(_fixture_bash_commands())
    wrong = [(c, p) for c in commands for p in written_paths(c) if p.rsplit("/", 1)[-1] not in c]
    assert wrong == []
    assert any(written_paths(c) for c in commands)  # some fixture commands do write


@needs_fixtures
@pytest.mark.parametrize("command", ["grep", "cat", "ls", "git diff", "git log", "head", "wc"])
def test_fixture_commands_of_each_read_only_kind_write_nothing(command: str) -> None:
    found = [c for c in _fixture_bash_commands() if _read_only(c) and re.search(rf"(?:^|&& ){command}\b", c)]
    assert all(written_paths(c) == [] for c in found)


@needs_fixtures
def test_fixture_compactions_add_only_files_that_a_writing_command_names() -> None:
    from pi_compact.compaction.kept.files import file_lists
    from pi_compact.compaction.plan import prepare_compaction

    writers = [c for c in _fixture_bash_commands() if not _read_only(c)]
    added_total = 0
    for session in parity_sessions():
        store = SessionStore.open(session, str(session.parent), 0)
        plan = prepare_compaction(store.branch(), compaction_settings(keep=2000).compaction)
        if plan is None:
            continue
        read, modified, added = file_lists(plan)
        added_total += len(added)
        assert set(plan.modified_files) <= set(modified) and set(read) <= set(plan.read_files)
        assert [f for f in added if not any(f.rsplit("/", 1)[-1] in c for c in writers)] == []
    assert added_total > 0
