"""Casts through enums, decided once for both executors: a serializable enum converts as
its underlying ``bit<W>``/``int<W>``; a cast from or to any other enum is refused."""

from __future__ import annotations

from typing import Any

from ..frontend import ir
from .errors import Unsupported


def without_enum(src: ir.Type, dst: ir.Type, node: Any, unsupported: Unsupported) -> tuple[ir.Type, ir.Type]:
    """(src, dst) with one enum replaced by its underlying type (the target first); call
    again while either is an enum."""
    if isinstance(dst, ir.EnumT):
        if dst.underlying is None:
            raise unsupported(f"cast to non-serializable enum {dst}", node)
        return src, dst.underlying
    if isinstance(src, ir.EnumT):
        if src.underlying is None:
            raise unsupported(f"cast from non-serializable enum {src}", node)
        return src.underlying, dst
    return src, dst
