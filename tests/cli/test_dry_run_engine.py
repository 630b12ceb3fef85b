"""``compact --dry-run`` names the engine the compaction would run first, and why (issue 45): its compactor is
built as headless ``compact FILE`` and the terminal build theirs (``session_compactor.build_compactor``), from the
model's facts alone (no litellm, no request). A session is written the terminal's way on the fake Anthropic server,
so the provider still holds its prefix when the dry run prices the engines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from agent_harness import padded
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, Compaction, text_reply

from pi_compact.agent.compaction import engines
from pi_compact.agent.compaction.offline import OfflineJob, OfflineListener, OfflineOutcome
from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import session_tools
from pi_compact.cli.compact import compact_command
from pi_compact.cli.compact_run import FlagModels
from pi_compact.cli.wiring import system_prompt_for
from pi_compact.clock import now_ms
from pi_compact.compaction.plan import prepare_compaction
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.providers import ANTHROPIC_COMPACTION
from pi_compact.session.store import SessionStore
from pi_compact.settings import RetrySettings, Settings

ROOT = Path(__file__).resolve().parents[2]  # the code under test, whatever the venv installed
SONNET = "anthropic/claude-sonnet-4-6"
WINDOW = 200_000
PASTE = "PASTED " + "word " * 60_000  # ~75,000 tokens: over the API's 50,000-token trigger
SETTINGS = Settings(retry=RetrySettings(enabled=False))


@dataclass
class Written:
    server: FakeAnthropicServer
    cwd: Path
    path: Path


def route(body: dict[str, object]) -> AnthropicReply:
    edits = (body.get("context_management") or {}).get("edits") or []  # type: ignore[union-attr]
    if any(edit.get("pause_after_compaction") for edit in edits):
        return AnthropicReply(blocks=(Compaction("The user pasted a long word list; it was acknowledged."),))
    return text_reply("Noted.")


@pytest.fixture
def written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Written]:
    """A large paste and a short second turn on Sonnet 4.6, sent as the terminal in ``cwd`` sends them."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # ``compact`` builds the system prompt of a session in the current directory
    path = tmp_path / "session.jsonl"
    with FakeAnthropicServer(min_cache_tokens=0).start() as server:
        server.route = route
        store = SessionStore.create(path, str(cwd), 1_700_000_000_000)
        tools = session_tools(store, SETTINGS)
        info = resolve_model(SONNET, settings=SETTINGS, context_window=WINDOW)
        session = AgentSession(store=store, model=create_model(info, api_base=server.base_url, api_key="k",
                                                              settings=SETTINGS),
                               settings=SETTINGS, tools=tools, system_prompt=system_prompt_for(cwd, tools, print),
                               cwd=cwd, emit=lambda event: None, auto_compact=False)
        session.prompt(PASTE)
        session.prompt(padded("SECOND", 21_000))  # the kept part (over keepRecentTokens)
        session.close()
        yield Written(server, cwd, path)


def dry_run(written: Written, capsys: pytest.CaptureFixture[str], model: str = SONNET) -> str:
    code = compact_command(written.path, dry_run=True, model=model, api_base=written.server.base_url,
                           api_key="k", context_window=WINDOW)
    out = capsys.readouterr().out
    assert code == 0, out
    [line] = [line for line in out.splitlines() if line.startswith("engine: ")] or [out]
    return line


def test_dry_run_names_the_provider_engine_where_auto_expects_it_to_cost_no_more(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    line = dry_run(written, capsys)
    assert line.startswith(f"engine: provider ({ANTHROPIC_COMPACTION}) — auto: the provider's is expected")


def test_the_engine_the_dry_run_names_is_the_one_compact_file_then_runs(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    named = dry_run(written, capsys)
    sent = len(written.server.records)
    assert compact_command(written.path, model=SONNET, api_base=written.server.base_url, api_key="k",
                           context_window=WINDOW) == 0
    entries = [json.loads(line) for line in written.path.read_text(encoding="utf-8").splitlines()]
    [entry] = [e for e in entries if e["type"] == "compaction"]
    assert named.startswith(f"engine: provider ({entry['details']['engine']})")
    assert len(written.server.records) == sent + 1  # the dry run asked nothing; the compaction one request


def test_dry_run_names_the_local_engine_when_the_setting_says_local(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    (written.cwd / ".pi").mkdir()
    (written.cwd / ".pi" / "settings.json").write_text(json.dumps({"compaction": {"engine": "local"}}))
    line = dry_run(written, capsys)
    assert line in ("engine: prefix — compaction.engine is local.", "engine: serialized — compaction.engine is local.")


def test_dry_run_says_the_model_lacks_the_feature_where_it_does(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    line = dry_run(written, capsys, model="anthropic/claude-sonnet-4-5")
    assert line.endswith("— anthropic/claude-sonnet-4-5 has no server-side compaction.")


def test_dry_run_naming_the_engine_imports_no_litellm(written: Written) -> None:
    code = (
        "import sys\nfrom pathlib import Path\nfrom pi_compact.cli.compact import compact_command\n"
        f"code = compact_command(Path({str(written.path)!r}), dry_run=True, model={SONNET!r}, "
        f"api_base={written.server.base_url!r}, api_key='k', context_window={WINDOW})\n"
        "print('litellm' in sys.modules, code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=written.cwd, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}, timeout=120)
    assert "engine: provider" in done.stdout, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "False 0"


def test_compact_file_and_the_terminal_build_an_equal_engine_chain(written: Written) -> None:
    from pi_compact.agent.compaction.offline import _prepare  # (the compaction's own preparation, run no further)

    store = SessionStore.open(written.path, str(written.cwd), 1_700_000_000_000, hold=False)
    job = OfflineJob(written.path, written.cwd, context_window=WINDOW)
    models = FlagModels(SONNET, written.server.base_url, "k", WINDOW)
    quiet = OfflineListener(lambda _w: None, lambda _w: None, lambda _e: None)
    prepared = _prepare(store, job, SETTINGS, models, lambda tools: system_prompt_for(written.cwd, tools, print),
                        quiet)
    assert not isinstance(prepared, OfflineOutcome)
    headless = prepared.compactor
    store.close()
    # The terminal resuming the same file in the same directory, before its first turn.
    resumed = SessionStore.open(written.path, str(written.cwd), 1_700_000_000_000)
    tools = session_tools(resumed, SETTINGS)
    session = AgentSession(store=resumed, model=models.build(models.resolve(SETTINGS), SETTINGS), settings=SETTINGS,
                           tools=tools, system_prompt=system_prompt_for(written.cwd, tools, print),
                           cwd=written.cwd, emit=lambda event: None, auto_compact=False)
    terminal = session._compactions._compactor(session.model, session.plan)
    chains, at = [], now_ms()
    for compactor in (headless, terminal):
        branch = resumed.branch_tail()
        plan = prepare_compaction(branch, compactor.settings.compaction, keep_newest=True)
        assert plan is not None
        for setting in ("auto", "provider", "local"):
            ctx = engines.EngineContext(compactor, "manual", branch, plan, None, at)
            chosen = engines.choose(ctx, setting)
            chains.append((setting, [engine.name for engine in chosen.engines], chosen.why,
                           round(chosen.engines[0].expected(ctx))))
    session.close()
    assert chains[:3] == chains[3:]
    assert chains[0][1] == [ANTHROPIC_COMPACTION, "local"]


def test_a_model_the_compaction_could_not_build_leaves_the_dry_run_whole_and_says_why(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    line = dry_run(written, capsys, model="local")  # with --api-base, which the embedded model refuses
    assert line.startswith("engine: not named — --api-base does not apply to the embedded local model")
