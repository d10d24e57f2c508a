"""P4Info generation: the control-plane API of a program, with p4c's ids and names.

Public API::

    info = build_p4info(program)          # p4.config.v1.P4Info from an ir.Program
    text = to_text(info)                  # p4info.txtpb content, as p4c writes it
    write_p4info(info, Path("out.txtpb")) # format chosen from the suffix (.txt/.txtpb/.json/.bin)

Ids follow p4c's algorithm (docs/design.md, "P4Info ids"; see :mod:`.ids`); the order of repeated fields follows p4c's
block traversal (see :mod:`.collect`). The file formats live in
:mod:`innet.switch.p4rt_codec.p4info_files` (the controller reads P4Info files without
the front-end) and are re-exported here.
"""

from __future__ import annotations

from innet.switch.p4rt_codec.p4info_files import (
    TEXT_HEADER,
    P4InfoFormat,
    format_for_path,
    parse_p4info,
    serialize,
    to_text,
    write_p4info,
)

from .build import P4InfoError, build_p4info, format_annotation
from .ids import IdError, Prefix, SymbolTable, hashed_id, jenkins_one_at_a_time

__all__ = [
    "IdError",
    "P4InfoError",
    "P4InfoFormat",
    "Prefix",
    "SymbolTable",
    "TEXT_HEADER",
    "build_p4info",
    "format_annotation",
    "format_for_path",
    "hashed_id",
    "jenkins_one_at_a_time",
    "parse_p4info",
    "serialize",
    "to_text",
    "write_p4info",
]
