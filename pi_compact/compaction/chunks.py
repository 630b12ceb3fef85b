"""Cutting serialized history into pieces that each fit a summary request (pure)."""

from __future__ import annotations

from pi_compact.compaction.tokens import estimate_text_tokens


def split_block(block: str, limit: int) -> list[str]:
    """Cut one oversized block into pieces that each fit ``limit`` tokens."""
    pieces: list[str] = []
    rest = block
    while rest:
        # Python slicing never splits a character: a JavaScript-style slice could cut an emoji's
        # surrogate pair in half, and a lone surrogate cannot even be encoded into the request.
        # Without CJK a character costs at most half a token, with it one token: ``limit`` fits.
        size = max(1, limit * 4 if rest.isascii() else limit)
        piece = rest[:size]
        while estimate_text_tokens(piece) > limit and len(piece) > 1:
            piece = piece[: len(piece) // 2]
        pieces.append(piece)
        rest = rest[len(piece) :]
    return pieces


def take_chunk(blocks: list[str], limit: int) -> tuple[str, list[str]]:
    """The longest run of leading blocks that fits ``limit`` tokens (splitting a block too big alone)."""
    taken: list[str] = []
    size = 0
    for index, block in enumerate(blocks):
        cost = estimate_text_tokens(block) + 1
        if size + cost <= limit:
            taken.append(block)
            size += cost
            continue
        if taken:
            return "\n\n".join(taken), blocks[index:]
        pieces = split_block(block, limit)
        return pieces[0], ["".join(pieces[1:]), *blocks[index + 1 :]]
    return "\n\n".join(taken), []
