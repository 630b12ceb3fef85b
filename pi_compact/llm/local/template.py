"""The chat template the embedded model runs with (Jinja, rendered by llama.cpp's server).

Our own, so that the server turns the tool calls the model writes into native ``tool_calls``, and so
that the part of the prompt that never changes comes first (the reasons are above the template).
"""

from __future__ import annotations

# Why our own: the Qwen2.5-Coder models answer a tool request with a fenced ```json block holding
# ``{"name": ..., "arguments": ...}``, whatever their bundled template asks for (``<tool_call>`` tags),
# so with the bundled template the server returns that block as plain text and never a tool call.
# llama.cpp learns a template's tool-call syntax from how the template renders an assistant tool call;
# this template renders calls as exactly that fenced block, so the server parses what the model writes
# into native, streamed ``tool_calls``. The rest is the models' ChatML layout (``<|im_start|>role``),
# with tool results sent back inside ``<tool_response>`` in a user turn, as the models were trained.
# The tools section also says to answer in plain text once the results suffice: without that line the
# 1.5B model called the same tool again after every result (measured, greedy decoding).
#
# The tools come *before* the system prompt (the models' own templates put them after it): the tool
# list is ~1,500 of the agent's ~1,750 prompt tokens and the same in every directory and on every day,
# while the system prompt ends with the working directory and the date. So the saved prompt prefix of
# one run (``prefix``) still serves a run elsewhere or tomorrow for everything but those lines.
CHAT_TEMPLATE = r"""
{%- set first_is_system = messages and messages[0].role == 'system' -%}
{{- '<|im_start|>system\n' -}}
{%- if tools -%}
  {{- '# Tools\n\nYou can call these functions (one JSON signature per line):\n' -}}
  {%- for tool in tools -%}
    {{- tool | tojson -}}{{- '\n' -}}
  {%- endfor -%}
  {{- '\nTo call a function, reply with one fenced block per call:\n```json\n' -}}
  {{- '{"name": <function name>, "arguments": <arguments object>}\n```\n' -}}
  {{- 'Each result comes back inside <tool_response> tags. Once you have what you need, answer in plain '
      + 'text without calling a function again.\n\n' -}}
{%- endif -%}
{{- messages[0].content if first_is_system else 'You are a helpful assistant.' -}}
{{- '<|im_end|>\n' -}}
{%- for message in messages -%}
  {%- if loop.first and first_is_system -%}
  {%- elif message.role == 'tool' -%}
    {%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
    {{- '\n<tool_response>\n' + (message.content or '') + '\n</tool_response>' -}}
    {%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
  {%- elif message.role == 'assistant' and message.tool_calls -%}
    {{- '<|im_start|>assistant' -}}
    {%- if message.content -%}{{- '\n' + message.content -}}{%- endif -%}
    {%- for call in message.tool_calls -%}
      {%- set function = call.function if call.function is defined else call -%}
      {{- '\n```json\n{"name": "' + function.name + '", "arguments": ' -}}
      {{- function.arguments | tojson -}}
      {{- '}\n```' -}}
    {%- endfor -%}
    {{- '<|im_end|>\n' -}}
  {%- else -%}
    {{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"""

__all__ = ["CHAT_TEMPLATE"]
