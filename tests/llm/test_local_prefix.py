"""Saved prompt prefixes of the embedded model (``llm/local_prefix.py``), against a fake slot endpoint.

The real runtime's save and restore are exercised in ``test_local_real.py``; here the endpoint is a
function that writes (or reads) the file the way the server does, so every rule of the cache shows.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fakes.slot import FakeSlot  # noqa: F401

from pi_compact.llm.local.prefix import KEEP, SAVE_LIMIT, PrefixCache, prefix_key
from pi_compact.llm.protocol import ChatRequest, ToolSpec

READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})




@pytest.fixture()
def slot(tmp_path: Path) -> FakeSlot:
    return FakeSlot(tmp_path)


def request(system: str = "You are a coding agent.", tools: tuple[ToolSpec, ...] = (READ,)) -> ChatRequest:
    return ChatRequest(system, [{"role": "user", "content": "hi", "timestamp": 1}], tools)


def test_the_key_names_the_tools_and_runtime_identity_not_the_system_prompt_behind_them() -> None:
    key = prefix_key("v1|model.gguf|16384", request())
    other_messages = ChatRequest("You are a coding agent.", [], (READ,))
    assert prefix_key("v1|model.gguf|16384", other_messages) == key  # the conversation is not the prefix
    # The template renders the tools first: another directory or date in the system prompt shares them.
    assert prefix_key("v1|model.gguf|16384", request(system="Working directory: /elsewhere")) == key
    assert prefix_key("v1|model.gguf|16384", request(tools=())) != key
    assert prefix_key("v2|model.gguf|16384", request()) != key


def test_without_tools_the_key_names_the_system_prompt() -> None:
    assert prefix_key("v1", request(system="You summarize.", tools=())) != prefix_key(
        "v1", request(system="You write titles.", tools=()))


def test_a_new_prefix_is_saved_after_a_good_reply_under_its_key(tmp_path: Path, slot: FakeSlot) -> None:
    cache = PrefixCache(tmp_path, slot)
    assert cache.before("k1") is False  # nothing saved yet
    assert cache.after("k1", 2_300) is True
    assert (tmp_path / "k1.slot").read_bytes() == b"kv" * 10
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []  # written, then renamed
    assert slot.calls[0][0] == "save" and slot.calls[0][1].endswith(".tmp")


def test_a_saved_prefix_is_not_saved_again(tmp_path: Path, slot: FakeSlot) -> None:
    (tmp_path / "k1.slot").write_bytes(b"old")
    cache = PrefixCache(tmp_path, slot)
    cache.before("k1")
    assert cache.after("k1", 2_300) is False
    assert (tmp_path / "k1.slot").read_bytes() == b"old"


def test_a_long_conversation_is_not_saved(tmp_path: Path, slot: FakeSlot) -> None:
    cache = PrefixCache(tmp_path, slot)
    cache.before("k1")
    assert cache.after("k1", SAVE_LIMIT + 1) is False
    assert slot.calls == []


def test_the_saved_prefix_is_restored_when_the_slot_holds_another_one(tmp_path: Path, slot: FakeSlot) -> None:
    (tmp_path / "chat.slot").write_bytes(b"kv")
    cache = PrefixCache(tmp_path, slot)
    assert cache.before("chat") is True  # a new run: the slot holds nothing
    assert cache.before("chat") is False  # the same conversation: its own cache is longer
    assert cache.before("summary") is False  # the summarizer's prompt, never saved
    assert cache.before("chat") is True  # back to the chat after a compaction
    assert slot.calls == [("restore", "chat.slot"), ("restore", "chat.slot")]


def test_a_failing_endpoint_is_a_cache_miss_and_leaves_no_file(tmp_path: Path, slot: FakeSlot) -> None:
    (tmp_path / "chat.slot").write_bytes(b"kv")
    slot.fail = True
    cache = PrefixCache(tmp_path, slot)
    assert cache.before("chat") is False
    cache.before("new")
    assert cache.after("new", 100) is False
    assert sorted(os.listdir(tmp_path)) == ["chat.slot"]


def test_a_missing_directory_is_a_cache_miss(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path / "gone", FakeSlot(tmp_path / "gone"))
    assert cache.before("k") is False
    assert cache.after("k", 100) is False


def test_only_the_most_recently_used_prefixes_are_kept(tmp_path: Path, slot: FakeSlot) -> None:
    now = time.time()
    for n in range(KEEP):
        (tmp_path / f"old{n}.slot").write_bytes(b"kv")
        os.utime(tmp_path / f"old{n}.slot", (now - 100 + n, now - 100 + n))
    stale_temporary = tmp_path / "crashed.1.2.tmp"
    stale_temporary.write_bytes(b"half")
    os.utime(stale_temporary, (now - 2 * 86_400, now - 2 * 86_400))
    cache = PrefixCache(tmp_path, slot)
    cache.before("old0")  # restored: now the most recently used
    cache.before("new")
    assert cache.after("new", 100) is True
    assert sorted(os.listdir(tmp_path)) == sorted(["old0.slot", f"old{KEEP - 1}.slot", "new.slot"])
