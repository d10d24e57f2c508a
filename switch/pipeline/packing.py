"""Byte-level layout of headers for extraction and emission with ``struct``.

A header's fields are grouped into *chunks*: the shortest runs of consecutive fields that
end on a byte boundary. Each chunk is read as one or more big-endian ``struct`` codes
(Q/I/H/B, largest first), combined into one small int, and the fields are cut out of it
with shifts and masks. This keeps per-packet arithmetic on small ints instead of one
big int per header.
"""

from __future__ import annotations

from dataclasses import dataclass

CODES = ((8, "Q"), (4, "I"), (2, "H"), (1, "B"))


@dataclass(frozen=True)
class Chunk:
    """Fields ``(index, shift, width)`` packed in ``nbytes`` bytes read as ``codes``."""

    codes: tuple[tuple[str, int], ...]  # (struct code, width in bits), most significant first
    fields: tuple[tuple[int, int, int], ...]

    @property
    def width(self) -> int:
        return sum(w for _, w in self.codes)


def _codes(nbytes: int) -> tuple[tuple[str, int], ...]:
    out = []
    for size, code in CODES:
        while nbytes >= size:
            out.append((code, size * 8))
            nbytes -= size
    return tuple(out)


def chunk_plan(widths: list[int]) -> tuple[str, tuple[Chunk, ...]]:
    """The struct format and chunks of a header with fields of ``widths`` (total % 8 == 0)."""
    chunks: list[Chunk] = []
    run: list[tuple[int, int]] = []
    run_bits = 0
    for i, w in enumerate(widths):
        run.append((i, w))
        run_bits += w
        if run_bits % 8 == 0:
            shift = run_bits
            fields = []
            for j, fw in run:
                shift -= fw
                fields.append((j, shift, fw))
            chunks.append(Chunk(_codes(run_bits // 8), tuple(fields)))
            run, run_bits = [], 0
    if run:
        raise ValueError("header width is not a whole number of bytes")
    fmt = "!" + "".join(c for ch in chunks for c, _ in ch.codes)
    return fmt, tuple(chunks)
