"""Overflow errors as real servers send them, end to end: the agent compacts and retries exactly once.

Each case is one HTTP error (status and body shaped as that server shapes it) returned once by the
scripted server to a real AgentSession on the real litellm path. Sources are cited per case: issue
trackers quoting the server's answer, the servers' source, litellm's exception mapping
(``litellm_core_utils/exception_mapping_utils.py``) and pi's own pattern list. Numbers in the texts are
the ones the source quoted where it quoted any.

The look-alikes (rate limits, quota, output-length and payload-size limits) must never be taken for
an overflow: no compaction, the error is reported as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_harness import assert_compactions_paired, make_harness, summary_reply, two_finished_turns
from scripted_server import Reply, ScriptedServer

from pi_compact.agent.events import CompactionStart
from pi_compact.llm.overflow import is_overflow_error_text, stated_window


def openai_error(message: str, code: str | None = None, kind: str = "invalid_request_error",
                 param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def vllm_error(message: str) -> dict[str, Any]:
    """vLLM and SGLang answer with a top-level ``message`` (``{"object": "error", ...}``)."""
    return {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}


@dataclass(frozen=True)
class Case:
    server: str
    reply: Reply
    window: int | None = None  # the window the message states, if it states one


def http(status: int, body: dict[str, Any]) -> Reply:
    return Reply(status=status, error_body=body)


OVERFLOWS: list[Case] = [
    # webtimemachine/wtm2#579, mckaywrigley/chatbot-ui#102 (OpenAI chat completions)
    Case("OpenAI", http(400, openai_error(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 204308 tokens. "
        "Please reduce the length of the messages.", "context_length_exceeded", param="messages")), 128000),
    # pi's list (OpenAI Responses wording, also sent on chat completions by newer models)
    Case("OpenAI (context window wording)", http(400, openai_error(
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "context_length_exceeded"))),
    # litellm's Azure mapping (azure_error_code == "context_length_exceeded"); Azure relays OpenAI's text
    Case("Azure OpenAI", http(400, openai_error(
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. "
        "Please reduce the length of the messages.", "context_length_exceeded")), 8192),
    # vllm-project/vllm#20409 (vLLM OpenAI server)
    Case("vLLM", http(400, vllm_error(
        "This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the "
        "messages, 10000 in the completion). Please reduce the length of the messages or completion.")), 16384),
    # vLLM v1 engine input check (vllm/v1/engine/processor.py), reached when the server-side check passes
    Case("vLLM engine", http(400, vllm_error(
        "The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens.")), 4096),
    # huggingface/text-generation-inference#628, huggingface/chat-ui#340 (TGI answers 422)
    Case("Hugging Face TGI (input + max_new_tokens)", http(422, {
        "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1244 "
                 "`inputs` tokens and 1000 `max_new_tokens`", "error_type": "validation"}), 2048),
    # huggingface/text-generation-inference#695, h2oai/h2ogpt#373
    Case("Hugging Face TGI (inputs alone)", http(422, {
        "error": "Input validation error: `inputs` must have less than 1024 tokens. Given: 1168",
        "error_type": "validation"}), 1024),
    # litellm's Together AI mapping (TGI-based backend)
    Case("Together AI", http(400, {
        "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8193. Given: 9000 `inputs` "
                 "tokens and 512 `max_new_tokens`"}), 8193),
    # pi's list (Ollama, explicit error; pi #2626)
    Case("Ollama", http(400, openai_error("prompt too long; exceeded max context length by 1184 tokens"))),
    # zettel-system INFRA-001 quoting Ollama (truncate disabled): "the input length exceeds the context length"
    Case("Ollama (truncate off)", http(400, openai_error("the input length exceeds the context length"))),
    # a llama.cpp user's notes quoting llama-server (context-size error handling doc), current server
    Case("llama.cpp server", http(400, {"error": {
        "code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens)",
        "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}}), 4096),
    # pi's list (older llama.cpp wording)
    Case("llama.cpp server (older)", http(400, {"error": {
        "code": 400, "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error"}})),
    # issue 15; lmstudio-ai/lmstudio-bug-tracker#546 and cline/cline#3664 (LM Studio 0.3.13-0.3.15)
    Case("LM Studio 0.3", http(400, {"error": (
        "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with "
        "context length of only 4096 tokens, which is not enough. Try to load the model with a larger context "
        "length, or provide a shorter input")}), 4096),
    # Gitlawb/openclaude#353 (LM Studio, n_keep wording; pi's LM Studio pattern)
    Case("LM Studio (n_keep)", http(400, {"error": (
        "The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= "
        "n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input.")}), 4096),
    # QwenLM/Qwen3#1321 (SGLang OpenAI server)
    Case("SGLang", http(400, vllm_error(
        "The input (61709 tokens) is longer than the model's context length (40960 tokens).")), 40960),
    # sgl-project/sglang#4048
    Case("SGLang (allowed length)", http(400, vllm_error(
        "Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens).")), 59862),
    # litellm's generic list: "requested token count exceeds the model's maximum context length" (SGLang)
    Case("SGLang (requested count)", http(400, vllm_error(
        "Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total "
        "of 5000 tokens: 4000 tokens from the input messages and 1000 tokens for the completion. Please reduce "
        "the number of tokens in the input messages or the completion to fit within the limit.")), 4096),
    # DeepSeek API (vLLM-style wording)
    Case("DeepSeek", http(400, openai_error(
        "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (70000 in the "
        "messages, 0 in the completion). Please reduce the length of the messages or completion.")), 65536),
    # pi's list (Mistral)
    Case("Mistral", http(400, openai_error(
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length")),
        32768),
    # pi's list (Groq)
    Case("Groq", http(400, openai_error(
        "Please reduce the length of the messages or completion.", "context_length_exceeded", param="messages"))),
    # pi's list (xAI)
    Case("xAI", http(400, openai_error(
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens.")), 131072),
    # pi's list (OpenRouter, all backends)
    Case("OpenRouter", http(400, {"error": {"code": 400, "message": (
        "This endpoint's maximum context length is 200000 tokens. However, you requested about 250000 tokens "
        "(250000 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to "
        "compress your prompt automatically.")}}), 200000),
    # pi's list (Anthropic, through an OpenAI-compatible proxy)
    Case("Anthropic", http(400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 213462 tokens > 200000 maximum"}}), 200000),
    # pi's list (Anthropic request bytes, HTTP 413)
    Case("Anthropic (413)", http(413, {"type": "error", "error": {
        "type": "request_too_large", "message": "Request exceeds the maximum size"}})),
    # pi's list (Google Gemini)
    Case("Google Gemini", http(400, openai_error(
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).")), 1048575),
    # pi's list (GitHub Copilot)
    Case("GitHub Copilot", http(400, openai_error(
        "prompt token count of 140000 exceeds the limit of 128000", "model_max_prompt_tokens_exceeded")), 128000),
    # pi's list (Kimi For Coding)
    Case("Kimi", http(400, openai_error("Your request exceeded model token limit: 262144 (requested: 300000)")),
         262144),
    # pi's list (MiniMax)
    Case("MiniMax", http(400, openai_error("invalid params, context window exceeds limit (2013)"))),
    # litellm's generic list ("Current length is X while limit is Y", Cerebras)
    Case("Cerebras", http(400, openai_error("Current length is 9000 while limit is 8192")), 8192),
    # pi's list (Cerebras, empty body)
    Case("Cerebras (no body)", Reply(status=400, raw_error_body="")),
    # pi 0.80.4 (DS4 server)
    Case("DS4 server", http(400, openai_error(
        "Prompt has 5000 tokens, but the configured context size is 4096 tokens")), 4096),
    # LiteLLM proxy relaying a mapped overflow (litellm's ContextWindowExceededError message format)
    Case("LiteLLM proxy", http(400, {"error": {"message": (
        "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - "
        "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens."),
        "type": None, "param": None, "code": "400"}}), 32768),
]

LOOKALIKES: list[Case] = [
    # OpenAI 429 for one request larger than the tokens-per-minute limit
    Case("OpenAI TPM", http(429, openai_error(
        "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested "
        "50000. The input or output tokens must be reduced in order to run successfully.",
        "rate_limit_exceeded", kind="tokens"))),
    # the scripted rate limit that mentions "too many tokens"
    Case("OpenAI rate limit", http(429, openai_error(
        "Rate limit reached: too many tokens per min", "rate_limit_exceeded"))),
    # Anthropic 429
    Case("Anthropic rate limit", http(429, {"type": "error", "error": {"type": "rate_limit_error", "message": (
        "This request would exceed the rate limit for your organization of 40,000 input tokens per minute.")}})),
    # Groq answers 413 when one request is over the TPM limit
    Case("Groq TPM (413)", http(413, openai_error(
        "Request too large for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` "
        "on tokens per minute (TPM): Limit 12000, Requested 15000, please reduce your message size and try again.",
        "rate_limit_exceeded", kind="tokens"))),
    # OpenAI quota
    Case("OpenAI quota", http(429, openai_error(
        "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota"))),
    # Google quota
    Case("Gemini quota", http(429, {"error": {
        "code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}})),
    # OpenAI output limit
    Case("OpenAI max_tokens", http(400, openai_error(
        "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you "
        "provided 100000.", param="max_tokens"))),
    # Anthropic output limit
    Case("Anthropic max_tokens", http(400, {"type": "error", "error": {"type": "invalid_request_error", "message": (
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5")}})),
    # huggingface/transformers#28523 (TGI output limit)
    Case("TGI max_new_tokens", http(422, {
        "error": "Input validation error: `max_new_tokens` must be <= 192. Given: 500", "error_type": "validation"})),
    # DeepSeek output limit
    Case("DeepSeek max_tokens", http(400, openai_error(
        "Invalid max_tokens value, the valid range of max_tokens is [1, 8192]"))),
    # a reverse proxy's payload limit (nginx page)
    Case("nginx 413", Reply(status=413, raw_error_body=(
        "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too "
        "Large</h1></center><hr><center>nginx</center></body></html>"))),
    # Gemini request bytes (litellm maps this to overflow only for Vertex's own route)
    Case("Gemini payload", http(400, openai_error("Request payload size exceeds the limit: 20971520 bytes."))),
    # Anthropic image size
    Case("Anthropic image", http(400, {"type": "error", "error": {"type": "invalid_request_error", "message": (
        "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 5316520 bytes > 5242880 bytes")}})),
    # OpenAI per-string limit (litellm excludes string_above_max_length from its overflow check too)
    Case("OpenAI string length", http(400, openai_error(
        "Invalid 'messages[1].content': string too long. Expected a string with maximum length 10485760, but got "
        "a string with length 12000000 instead.", "string_above_max_length"))),
    # Ollama out of memory (5xx: retried, then reported)
    Case("Ollama memory", http(500, openai_error(
        "model requires more system memory (12.0 GiB) than is available (8.0 GiB)", kind="api_error"))),
]


def _repeating(reply: Reply) -> Reply:
    return Reply(**{**vars(reply), "repeat": True})


@pytest.mark.parametrize("case", OVERFLOWS, ids=[c.server for c in OVERFLOWS])
def test_real_overflow_error_compacts_and_retries_once(
    case: Case, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(case.reply, summary_reply(), Reply(text="RETRY-ANSWER"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.result is not None, e.will_retry) for s, e in pairs] == [("overflow", True, True)]
    assert len(h.agent_requests()) == 4  # 2 earlier turns, the overflowing request and exactly one retry


@pytest.mark.parametrize("case", OVERFLOWS, ids=[c.server for c in OVERFLOWS])
def test_stored_overflow_error_states_the_window_when_the_server_did(
    case: Case, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    scripted_server.enqueue(case.reply)
    h.session.prompt("QUESTION")
    failed = next(e["message"] for e in h.entries() if e["type"] == "message" and e["message"]["role"] == "assistant")
    assert failed["stopReason"] == "error"
    assert stated_window(failed["errorMessage"]) == case.window


@pytest.mark.parametrize("case", LOOKALIKES, ids=[c.server for c in LOOKALIKES])
def test_lookalike_error_is_reported_without_compaction(
    case: Case, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(_repeating(case.reply))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["stopReason"] == "error"
    assert not is_overflow_error_text(final["errorMessage"])
    assert not any(isinstance(e, CompactionStart) for e in h.events)
