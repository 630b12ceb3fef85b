"""Names of functions, classes and settings an edit or write added (``compaction.kept.names``), kept on
the edit's line of ``<tool-outcomes>`` through a whole compaction (``compaction.kept``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import (
    assistant,
    chain,
    compact_in_process,
    sized,
    structured_summary,
    tool_call,
    tool_result,
    user,
    write_session,
)

from pi_compact.compaction.kept.blocks import block_lines
from pi_compact.compaction.kept.names import added_names, defined_names, replacements


def test_python_functions_and_classes_are_definitions() -> None:
    assert defined_names("class Bucket:\n    async def refill(self):\n        pass\n") == ["Bucket", "refill"]


def test_a_keyword_at_a_line_end_does_not_name_the_next_line() -> None:
    assert defined_names("over refactor import module\nclass\nmodule\n") == []


def test_a_keyword_in_prose_is_no_definition() -> None:
    assert defined_names("function provider for the session\nclass of problems we saw") == []


def test_dunder_methods_are_not_reported() -> None:
    assert defined_names("    def __init__(self):\n") == []


def test_upper_case_settings_are_definitions_but_comparisons_are_not() -> None:
    text = "MAX_RETRIES = 3\nTIMEOUT_S: float = 2.0\nif MAX_SIZE == 4:\n"
    assert defined_names(text) == ["MAX_RETRIES", "TIMEOUT_S"]


def test_typescript_definitions_are_found_but_indented_locals_are_not() -> None:
    text = ("export function baz() {\n  const local = 3;\n}\nexport const QUX = 1;\nexport interface Props {}\n"
            "export type Mode = 'a' | 'b';\nexport default class Panel {}\n")
    assert defined_names(text) == ["baz", "QUX", "Props", "Mode", "Panel"]


def test_go_and_rust_definitions_are_found() -> None:
    text = "func Quux(a int) error {\nfunc (s *Server) Serve() {\ntype Config struct {\npub fn shard_of(x: u8) {}\n"
    assert defined_names(text) == ["Quux", "Serve", "Config", "shard_of"]


def test_keys_added_to_a_config_file_are_settings() -> None:
    text = 'pool:\n  max_idle: 4\n  "shardCount": 606\nretry.limit = 5\n# note: x\n'
    assert defined_names(text, "deploy/app.yaml") == ["pool", "max_idle", "shardCount", "retry.limit"]


def test_an_env_file_key_is_a_setting() -> None:
    assert defined_names("export BILLING_REGION=eu\nDEBUG=1\n", "config/.env.staging") == ["BILLING_REGION", "DEBUG"]


def test_a_changed_config_value_adds_no_name() -> None:
    assert added_names("edit", {"path": "conf/limits.yml", "oldText": "burst: 5",
                                "newText": "burst: 8\nwindow_ms: 250"}) == ["window_ms"]


def test_a_whole_config_file_written_adds_no_keys() -> None:
    assert added_names("write", {"path": "package.json", "content": '{\n  "name": "x"\n}'}) == []


def test_a_name_already_in_the_old_text_was_not_added() -> None:
    assert added_names("edit", {"path": "a.py", "oldText": "def keep():\n    pass",
                                "newText": "def keep():\n    return 1\n\ndef fresh():\n    pass"}) == ["fresh"]


def test_a_written_files_definitions_are_added() -> None:
    assert added_names("write", {"path": "b.py", "content": "class Store:\n    pass\n"}) == ["Store"]


def test_pis_list_of_edits_is_read_as_well_as_one_old_and_new_text() -> None:
    arguments = {"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "def first(): pass"},
                                           {"oldText": "y = 2", "newText": "def second(): pass"}]}
    assert replacements("edit", arguments) == [("x = 1", "def first(): pass"), ("y = 2", "def second(): pass")]
    assert added_names("edit", arguments) == ["first", "second"]


# ---- through a compaction whose scripted summary omits all of them ---------------------------------


def compact_session(tmp_path: Path) -> dict[str, Any]:
    """Compact a session where the user names a ticket and a version, an edit adds a function and a shell
    command rewrites a config, with a scripted summary that names none of them; the compaction entry."""
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user("PAY-4521: the refill is too slow. Release it as v2.3.1."),
        assistant(tool_calls=[tool_call("edit", {"path": "src/bucket.py", "oldText": "def refill(self):",
                                                 "newText": "def refill_locked(self):"}, "call-1")]),
        tool_result("Successfully replaced text in src/bucket.py.", tool_call_id="call-1", tool_name="edit"),
        assistant(tool_calls=[tool_call("bash", {"command": "sed -i 's/burst: 5/burst: 8/' conf/limits.yml"},
                                        "call-2")]),
        tool_result("", tool_call_id="call-2"),
        assistant("Done. " + sized(600)),
        user("Good. " + sized(300)),
        assistant("Next. " + sized(300)),
    ))
    entry, model = compact_in_process(path, tmp_path, structured_summary("refill"))
    assert len(model.history) == 1  # none of the additions asked the model
    return dict(entry)


def test_a_compaction_keeps_the_name_the_edit_added_on_its_outcome_line(tmp_path: Path) -> None:
    entry = compact_session(tmp_path)
    outcomes = block_lines(str(entry["summary"]), "tool-outcomes")
    assert outcomes == ['edit "src/bucket.py": applied, "def refill(self):" -> "def refill_locked(self):"; '
                        'adds "refill_locked"']
    assert entry["details"]["kept"]["toolOutcomes"] == outcomes


def test_a_failed_edit_adds_no_name(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user("Add the helper. " + sized(50)),
        assistant(tool_calls=[tool_call("edit", {"path": "a.py", "oldText": "x", "newText": "def nope(): pass"})]),
        tool_result("Could not find the exact text in a.py.", tool_name="edit", is_error=True),
        assistant("Done. " + sized(600)), user("Good. " + sized(300)), assistant("Next. " + sized(300)),
    ))
    entry, _ = compact_in_process(path, tmp_path, structured_summary("x"))
    assert block_lines(str(entry["summary"]), "tool-outcomes") == [
        'edit "a.py": FAILED, nothing changed: "Could not find the exact text in a.py."']


def test_a_compaction_lists_the_shell_written_config_beside_the_edited_file(tmp_path: Path) -> None:
    entry = compact_session(tmp_path)
    assert str(entry["summary"]).endswith("<modified-files>\nconf/limits.yml\nsrc/bucket.py\n</modified-files>")
    assert {"action": "shellFilesAdded", "files": ["conf/limits.yml"]} in entry["details"]["qualityGate"]
