"""What the generated code calls at run time: the control-flow exceptions of v1model
(``exit``, parser errors, failed assertions) and the arithmetic and hashing helpers that
are bound into every generated module under the names in ``HELPERS``."""

from __future__ import annotations

import logging
from typing import Any

from . import hashing

log = logging.getLogger("innet.switch.pipeline")


class Exit(Exception):
    """``exit`` statement: ends the current top-level control."""


class ParserErr(Exception):
    """A parser error: ends parsing, sets ``standard_metadata.parser_error``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
        self.pos: int | None = None  # position at the error when raised inside a sub-parser


class AssertFail(Exception):
    """A failed ``assert``/``assume`` (or a runtime fault): the packet is dropped."""


def _shl(a: int, b: int, w: int, s: int) -> int:
    if b >= w:
        return 0
    v = (a << b) & ((1 << w) - 1)
    if s and v >> (w - 1):
        v -= 1 << w
    return v


def _div(a: int, b: int) -> int:
    return a // b if b else 0


def _mod(a: int, b: int) -> int:
    return a % b if b else 0


def _wrap(v: int, w: int, s: bool) -> int:
    v &= (1 << w) - 1
    if s and v >> (w - 1):
        v -= 1 << w
    return v


def _log_msg(msg: str, values: tuple[Any, ...]) -> None:
    if log.isEnabledFor(logging.DEBUG):
        parts = msg.split("{}")
        text = parts[0] + "".join(str(v) + p for v, p in zip(values, parts[1:]))
        log.debug("log_msg: %s", text)


def _vl_bytes(parts: tuple[tuple[int, int], ...]) -> bytes:
    """``(width, value)`` pairs (fixed fields and ``varbit`` slots) packed MSB first and
    padded with zero bits to a whole byte: the bytes of a header or field list whose
    width is only known at run time."""
    acc = 0
    n = 0
    for w, v in parts:
        acc = (acc << w) | (v & ((1 << w) - 1))
        n += w
    pad = -n % 8
    return (acc << pad).to_bytes((n + pad) >> 3, "big")


HELPERS: dict[str, Any] = {
    "_shl": _shl, "_div": _div, "_vl_bytes": _vl_bytes, "_mod": _mod, "_wrap": _wrap, "_log_msg": _log_msg,
    "_csum16_int": hashing.csum16_int, "_crc16": hashing.crc16, "_crc32": hashing.crc32,
    "_csum16": hashing.csum16, "_xor16": hashing.xor16, "_identity": hashing.identity,
    "_hash_result": hashing.hash_result, "_Exit": Exit, "_PErr": ParserErr, "_AssertFail": AssertFail,
}
