"""The round-5 transcripts (issue 41): five sessions, each written twice, in trained and in held-out words.

    python benchmarks/eval/phrased.py      # rewrite benchmarks/eval/data/r5/ (byte-identical)

What round 4's transcripts lacked, each session has some of: facts that live only in tool output (an
exact error, a version a command printed), only in the assistant's words (a root cause, a decision it
proposed with its reason and the user agreed to, a rename), a user's correction (a later message
overrides an earlier value), a decision whose reason comes two user turns later, user messages in German
or Spanish, and a previous compaction (the update path) with new facts after it (a decision with its
reason, a new function, a changed setting, the next step, a new error) besides the ones its summary holds.

| session | language, work | what it tests |
|---|---|---|
| ``py-tokens`` | Python, security fix | correction; a version only in tool output; user's decision |
| ``go-renew`` | Go, performance fix | root cause,
decision and next step in the assistant's words; rename; late reason |
| ``ts-upgrade-de`` | TypeScript, dependency upgrade | every user message in German; correction |
| ``rust-update`` | Rust, bug hunt | previous compaction; new facts after it; correction across it; late reason |
| ``sql-update-es`` | SQL, data migration | previous compaction; Spanish user messages; root cause; a failed command |

Each is written as ``r5-NAME-t`` (every wording from ``phrasings``' trained half) and ``r5-NAME-h`` (held
out): the same session (values, code, ids, turns), only the words differ. The rules (one regex per fact,
one per probe) are fixed here, before any summary exists. The kept tail is the README detour of
``transcripts.py``, so the cut lands on its user message (keepRecentTokens 1,500, chars/4).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from pathlib import Path

from languages import RUST, SQL, Language
from languages_first import GO_WIDE, PYTHON_WIDE, TYPESCRIPT_WIDE
from phrasings import SPLITS, Split
from script import Script
from sessions_r5 import go_renew, py_tokens, ts_upgrade_de
from update_r5 import rust_update, sql_update_es

DATA = Path(__file__).resolve().parent / "data" / "r5"
# session -> (what writes it, language, the user's language, seed)
SESSIONS: dict[str, tuple[Callable[[Script], None], Language, str, int]] = {
    "py-tokens": (py_tokens, PYTHON_WIDE, "en", 101),
    "go-renew": (go_renew, GO_WIDE, "en", 103),
    "ts-upgrade-de": (ts_upgrade_de, TYPESCRIPT_WIDE, "de", 107),
    "rust-update": (rust_update, RUST, "en", 109),
    "sql-update-es": (sql_update_es, SQL, "es", 113),
}
NAMES = tuple(f"r5-{session}-{split[0]}" for session in SESSIONS for split in SPLITS)


def generate(session: str, split: Split) -> tuple[str, dict[str, object]]:
    """One transcript: (the JSONL text, the facts file's object)."""
    build, lang, user_language, seed = SESSIONS[session]
    rng = random.Random(seed)
    words = random.Random(f"{seed}-{split}")
    s = Script(rng, words, split, lang, user_language)
    build(s)
    name = f"r5-{session}-{split[0]}"
    header_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return s.finish(name, header_id, {"session": session, "flavour": s.lang.name, "seed": seed})


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for session in SESSIONS:
        for split in SPLITS:
            text, info = generate(session, split)
            name = str(info["transcript"]).removesuffix(".jsonl")
            (DATA / f"{name}.jsonl").write_text(text, encoding="utf-8")
            (DATA / f"{name}.facts.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
            facts = len(info["facts"])  # type: ignore[arg-type]
            print(f"{name}: {info['tokens_chars4']} tokens (chars/4), {facts} facts, cut at {info['cut_entry_id']}")


if __name__ == "__main__":
    main()
