"""What a summary keeps by construction, whatever the model wrote (pure; no model call).

One table of kinds (``table.KINDS``), applied in one place after the model's answer
(``summarize.summarize``): each kind is a tagged block after the model's prose, its items quoted as data.

| block | items | module |
|---|---|---|
| ``<user-messages>`` | what the user typed, word for word, newest first, within 4 % of the window | ``user_messages`` |
| ``<tool-outcomes>`` | each edit/write (applied or FAILED), test run and failed call, newest first | ``outcomes`` |
| ``<read-files>`` / ``<modified-files>`` | pi's file lists, plus files succeeded shell commands wrote | ``files`` |

The helpers: ``blocks`` (the block format and quoting), ``calls`` (each call with its result and exit
status), ``errors`` (a failure's line, chosen by what the output is), ``runner`` (a test run: a runner's
command and its tally), ``names`` (what an edit defines), ``shell_writes``/``shell_lex`` (what a command
line writes). Nothing here reads a sentence for its wording.
"""

from __future__ import annotations

from pi_compact.compaction.kept.table import KINDS, TAGS, Kept, for_model, keep, with_blocks, without_blocks

__all__ = ["KINDS", "TAGS", "Kept", "for_model", "keep", "with_blocks", "without_blocks"]
