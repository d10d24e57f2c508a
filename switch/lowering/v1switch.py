"""The v1model package both executors lay out: its six blocks, the three structs the
parser's parameters name (headers, metadata, standard_metadata), and the binding of
every block's parameters of those types to their one copy in the slot array."""

from __future__ import annotations

from typing import Any, Callable

from ..frontend import ir
from .errors import Unsupported


def v1switch_blocks(program: ir.Program, unsupported: Unsupported
                    ) -> tuple[list[Any], tuple[ir.Type, ir.Type, ir.Type]]:
    """The six blocks of ``V1Switch(...)`` (parser, verify, ingress, egress, compute,
    deparser: a parser, then five controls) and the types of the parser's headers, metadata and standard_metadata."""
    assert program.main is not None, "a program without a main package reached the executor"
    blocks = [a.decl for a in program.main.args]
    if len(blocks) != 6 or any(b is None for b in blocks):
        raise unsupported("V1Switch needs six parser/control instances", program.main)
    parser = blocks[0]
    if not isinstance(parser, ir.Parser) or len(parser.params) != 4:
        raise unsupported("a v1model parser must have 4 parameters", parser)
    if not all(isinstance(b, ir.Control) for b in blocks[1:]):
        raise unsupported("V1Switch arguments 2..6 must be controls", program.main)
    h, m, sm = (p.type for p in parser.params[1:])
    return blocks, (h, m, sm)


def bind_parameters(blocks: list[Any], bases: dict[ir.Type, int], bind: Callable[[int, int], None]) -> None:
    """Bind each block parameter whose type is in ``bases`` to that slot (every block sees
    the one headers/metadata/standard_metadata value)."""
    for b in blocks:
        for p in b.params:
            base = bases.get(p.type)
            if base is not None:
                bind(p.uid, base)


def field_starts(t: ir.StructT, base: int, nslots: Callable[[ir.Type], int]) -> dict[str, int]:
    """The first slot of each field of the struct at ``base`` (standard_metadata's, by name)."""
    out = {}
    off = base
    for f in t.fields:
        out[f.name] = off
        off += nslots(f.type)
    return out
