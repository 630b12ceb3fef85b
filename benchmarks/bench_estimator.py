"""How far the token estimators are from real BPE token counts, per kind of text (offline).

Corpora are built from files already on the machine, cut at line boundaries into samples:
- chinese / japanese (the targets), chinese_traditional, korean: the ``msgstr`` texts of the
  ``/usr/share/locale/{zh_CN,ja,zh_TW,ko}/LC_MESSAGES/*.mo`` catalogs (technical text mixed with
  options and ``%s``), ~4000-character samples;
- chinese_prose / japanese_prose / korean_prose: vim's tutor in that language (prose with commands),
  ~1000-character samples, because each tutor holds only 20-45 KB;
- english: licenses in ``/usr/share/common-licenses`` and CPython's help topics (``pydoc_data``);
- code: one chunk of each of 150 ``.py`` files of the running interpreter's site-packages.
A corpus whose source files are missing is skipped (and listed as missing).

Exact counts come from tiktoken with the BPE files litellm bundles (``o200k_base``: the GPT-4o/4.1/5
family; ``cl100k_base``: GPT-4 and litellm's fallback for unknown models), so no network is needed.
Every figure is the mean absolute percentage error per sample, with the mean signed error (bias) in
brackets, over the held-out half (odd-numbered samples); weights are fitted on the even half only
(``--fit``). Target: ``auto`` within 15 % on Chinese and Japanese for both encodings; ``auto`` must
equal ``chars4`` on every sample without CJK characters.

Usage: ``python benchmarks/bench_estimator.py [--fit] [--json]``
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import random
import statistics
import struct
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_compact.compaction.tokens import _KANA, _WIDE, KANA_WEIGHT_PERCENT, _count, estimate_text_tokens
from pi_compact.jstext import js_len

ENCODINGS = ("o200k_base", "cl100k_base")
TARGET_CORPORA = ("chinese", "japanese")
TARGET_MAPE = 15.0
SEED = 20250101
LOCALES = {"chinese": "zh_CN", "japanese": "ja", "chinese_traditional": "zh_TW", "korean": "ko"}
TUTORS = {"chinese_prose": "zh_cn", "japanese_prose": "ja", "korean_prose": "ko"}
LICENSES = ("GPL-3", "Apache-2.0", "MPL-2.0", "GFDL-1.3", "LGPL-2.1", "Artistic")


def load_encodings() -> dict[str, Any]:
    """tiktoken encodings from litellm's bundled BPE files (litellm itself is not imported)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("litellm is not installed: its bundled BPE files are needed for exact counts.")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(
        Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
    )
    import tiktoken

    return {name: tiktoken.get_encoding(name) for name in ENCODINGS}


# ---- corpora -------------------------------------------------------------------------------------


def mo_strings(path: str) -> list[str]:
    """The translated strings of a compiled gettext catalog (plural forms split, header skipped)."""
    data = Path(path).read_bytes()
    order = "<" if struct.unpack("<I", data[:4])[0] == 0x950412DE else ">"
    _, count, originals, translations = struct.unpack(order + "4I", data[4:20])
    strings: list[str] = []
    for i in range(count):
        original_length, _ = struct.unpack(order + "2I", data[originals + 8 * i : originals + 8 * i + 8])
        length, offset = struct.unpack(order + "2I", data[translations + 8 * i : translations + 8 * i + 8])
        if original_length == 0:
            continue  # the catalog's metadata entry
        try:
            strings.extend(data[offset : offset + length].decode("utf-8").split("\x00"))
        except UnicodeDecodeError:
            continue
    return strings


def cut(text: str, size: int) -> list[str]:
    """Consecutive samples of about ``size`` characters, cut after a line."""
    samples: list[str] = []
    lines: list[str] = []
    length = 0
    for line in text.split("\n"):
        lines.append(line)
        length += len(line) + 1
        if length >= size:
            samples.append("\n".join(lines))
            lines, length = [], 0
    return samples


def build_corpora(rng: random.Random) -> tuple[dict[str, list[str]], list[str]]:
    corpora: dict[str, list[str]] = {}
    missing: list[str] = []
    for name, locale in LOCALES.items():
        files = sorted(glob.glob(f"/usr/share/locale/{locale}/LC_MESSAGES/*.mo"))
        texts = [s for f in files for s in mo_strings(f)]
        if texts:
            corpora[name] = cut("\n".join(texts), 4000)
        else:
            missing.append(f"{name} (no {locale} .mo catalogs)")
    for name, language in TUTORS.items():
        tutor = Path(f"/usr/share/vim/vim90/tutor/tutor.{language}.utf-8")
        if tutor.is_file():
            corpora[name] = cut(tutor.read_text(encoding="utf-8"), 1000)
        else:
            missing.append(f"{name} ({tutor} missing)")
    english = [Path("/usr/share/common-licenses", n) for n in LICENSES]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in english if p.is_file()]
    try:
        from pydoc_data.topics import topics

        texts += [topics[k] for k in sorted(topics)]
    except ImportError:
        pass
    samples = cut("\n".join(texts), 4000)
    corpora["english"] = rng.sample(samples, min(150, len(samples)))
    site = Path(sysconfig.get_paths()["purelib"])
    sources = sorted(p for p in site.rglob("*.py") if p.stat().st_size > 4000)
    code: list[str] = []
    for path in rng.sample(sources, min(150, len(sources))):
        chunks = cut(path.read_text(encoding="utf-8", errors="replace"), 4000)
        if chunks:
            code.append(rng.choice(chunks))
    corpora["code"] = code
    return corpora, missing


# ---- measuring -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One sample's character classes and exact token counts."""

    chars: int  # UTF-16 units, as the estimators count them
    wide: int
    kana: int
    exact: dict[str, int]
    chars4: int
    auto: int


def measure(text: str, encodings: dict[str, Any]) -> Sample:
    return Sample(
        chars=js_len(text), wide=_count(_WIDE, text), kana=_count(_KANA, text),
        exact={name: len(enc.encode(text, disallowed_special=())) for name, enc in encodings.items()},
        chars4=estimate_text_tokens(text, "chars4"), auto=estimate_text_tokens(text, "auto"),
    )


def errors(samples: Sequence[Sample], encoding: str, estimate: Callable[[Sample], int]) -> tuple[float, float]:
    """(mean absolute % error, mean signed % error) of ``estimate`` against the exact count."""
    relative = [(estimate(s) - s.exact[encoding]) / s.exact[encoding] for s in samples if s.exact[encoding]]
    return 100 * statistics.mean(abs(r) for r in relative), 100 * statistics.mean(relative)


def weighted(han_percent: int, kana_percent: int) -> Callable[[Sample], int]:
    """The ``auto`` formula with other weights: ceil(narrow / 4) + ceil(weighted wide characters)."""

    def estimate(s: Sample) -> int:
        narrow = s.chars - s.wide
        wide = -((han_percent * (s.wide - s.kana) + kana_percent * s.kana) // -100)
        return -(narrow // -4) + wide

    return estimate


def fit(data: dict[str, list[Sample]]) -> list[tuple[float, int, int]]:
    """Grid search on the even samples of the target corpora: minimize the worst error over both encodings."""
    train = {name: data[name][0::2] for name in TARGET_CORPORA if name in data}
    scored = []
    for han in range(70, 131):
        for kana in range(60, 121):
            estimate = weighted(han, kana)
            worst = max(errors(s, e, estimate)[0] for s in train.values() for e in ENCODINGS)
            scored.append((worst, han, kana))
    return sorted(scored)[:5]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit the Han / kana weights on the even samples")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)
    out = sys.stderr if args.json else sys.stdout

    started = time.perf_counter()
    encodings = load_encodings()
    corpora, missing = build_corpora(random.Random(SEED))
    data = {name: [measure(text, encodings) for text in texts] for name, texts in corpora.items()}

    results: dict[str, Any] = {}
    head = f"{'corpus':<20} {'n':>4} {'chars':>8}  {'chars/token':>13}  "
    head += "  ".join(f"{m + ' ' + e[:5]:>22}" for e in ENCODINGS for m in ("chars4", "auto"))
    print(head, file=out)
    print("-" * len(head), file=out)
    for name, samples in data.items():
        held_out = samples[1::2]
        row: dict[str, Any] = {"samples": len(samples), "held_out": len(held_out),
                               "chars": sum(s.chars for s in samples)}
        ratios = []
        cells = []
        for e in ENCODINGS:
            ratio = row["chars"] / sum(s.exact[e] for s in samples)
            ratios.append(f"{ratio:.2f}")
            row[f"chars_per_token_{e}"] = round(ratio, 3)
            for label, estimate in (("chars4", lambda s: s.chars4), ("auto", lambda s: s.auto)):
                mape, bias = errors(held_out, e, estimate)
                row[f"{label}_{e}"] = {"mape": round(mape, 1), "bias": round(bias, 1)}
                cells.append(f"{mape:>10.1f}% ({bias:+6.1f})")
        no_cjk = [s for s in samples if s.wide == 0]
        row["auto_differs_from_chars4_without_cjk"] = sum(s.auto != s.chars4 for s in no_cjk)
        results[name] = row
        print(f"{name:<20} {len(samples):>4} {row['chars']:>8}  {'/'.join(ratios):>13}  " + "  ".join(cells), file=out)

    verdicts = []
    for name in TARGET_CORPORA:
        if name in results:
            worst = max(results[name][f"auto_{e}"]["mape"] for e in ENCODINGS)
            verdicts.append(f"{name}: auto worst {worst:.1f}% " + ("ok" if worst <= TARGET_MAPE else "MISSED"))
    differing = sum(row["auto_differs_from_chars4_without_cjk"] for row in results.values())
    verdicts.append(f"auto == chars4 on all {sum(1 for s in sum(data.values(), []) if s.wide == 0)} samples "
                    f"without CJK: {'ok' if differing == 0 else f'NO ({differing} differ)'}")
    print("\n".join([f"target (<= {TARGET_MAPE:.0f}% on both encodings, held-out half):", *verdicts]), file=out)
    if missing:
        print("missing corpora: " + "; ".join(missing), file=out)

    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"), "kana_weight_percent": KANA_WEIGHT_PERCENT,
        "seed": SEED, "corpora": results, "verdicts": verdicts, "missing": missing,
    }
    if args.fit:
        best = fit(data)
        report["fit"] = []
        print("fit on the even samples of chinese + japanese (worst error over both encodings):", file=out)
        for worst, han, kana in best:
            held = {n: {e: round(errors(data[n][1::2], e, weighted(han, kana))[0], 1) for e in ENCODINGS}
                    for n in TARGET_CORPORA if n in data}
            report["fit"].append({"han_percent": han, "kana_percent": kana, "train_worst": round(worst, 1),
                                  "held_out": held})
            print(f"  han {han}%  kana {kana}%  train worst {worst:.1f}%  held-out {held}", file=out)
    print(f"({time.perf_counter() - started:.1f} s)", file=out)
    if args.json:
        print(json.dumps(report, indent=2))
    return 0 if all("MISSED" not in v and "NO (" not in v for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
