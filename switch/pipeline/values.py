"""Bit-exact value helpers for P4 ``bit<W>``/``int<W>`` arithmetic.

Values are stored as Python ints: ``bit<W>`` in ``[0, 2**W)``, ``int<W>`` in
``[-2**(W-1), 2**(W-1))``. The code generator inlines most of these operations as
expressions; the functions here are the reference semantics (and are used directly
where inlining does not pay off).
"""

from __future__ import annotations


def mask(width: int) -> int:
    """All-ones value of ``width`` bits."""
    return (1 << width) - 1


def wrap(value: int, width: int, signed: bool = False) -> int:
    """``value`` reduced modulo ``2**width``; for ``signed`` mapped into two's complement range."""
    v = value & ((1 << width) - 1)
    if signed and v >> (width - 1):
        v -= 1 << width
    return v


def to_signed(value: int, width: int) -> int:
    """Reinterpret the unsigned ``width``-bit pattern ``value`` as two's complement."""
    return wrap(value, width, True)


def to_unsigned(value: int, width: int) -> int:
    """The ``width``-bit pattern of ``value`` (any Python int) as an unsigned number."""
    return value & ((1 << width) - 1)


def sat_add(a: int, b: int, width: int, signed: bool) -> int:
    """``a |+| b``: the sum clamped to the range of the type."""
    return _clamp(a + b, width, signed)


def sat_sub(a: int, b: int, width: int, signed: bool) -> int:
    """``a |-| b``: the difference clamped to the range of the type."""
    return _clamp(a - b, width, signed)


def _clamp(v: int, width: int, signed: bool) -> int:
    if signed:
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    else:
        lo, hi = 0, (1 << width) - 1
    return lo if v < lo else hi if v > hi else v


def shl(a: int, amount: int, width: int, signed: bool) -> int:
    """``a << amount`` in a ``width``-bit type; amounts >= width give 0."""
    if amount >= width:
        return 0
    return wrap(a << amount, width, signed)


def shr(a: int, amount: int, width: int, signed: bool) -> int:
    """``a >> amount``: arithmetic for ``int<W>`` (fills with the sign bit), logical for ``bit<W>``.

    Python's ``>>`` on the stored representation already does both: a negative ``int<W>``
    shifted by any amount >= width gives -1, a ``bit<W>`` gives 0.
    """
    return a >> amount


def concat(a: int, b: int, b_width: int) -> int:
    """``a ++ b`` on unsigned patterns (``b`` is ``b_width`` bits wide)."""
    return (a << b_width) | (b & ((1 << b_width) - 1))


def slice_get(value: int, hi: int, lo: int) -> int:
    """``value[hi:lo]`` as an unsigned pattern."""
    return (value >> lo) & ((1 << (hi - lo + 1)) - 1)


def slice_set(value: int, hi: int, lo: int, new: int, width: int, signed: bool = False) -> int:
    """``value`` with bits ``[hi:lo]`` replaced by ``new``; result wrapped to ``width``."""
    m = ((1 << (hi - lo + 1)) - 1) << lo
    return wrap((value & ~m) | ((new << lo) & m), width, signed)


def div(a: int, b: int) -> int:
    """Unsigned ``a / b``; division by zero gives 0 (BMv2 would fault; documented choice)."""
    return a // b if b else 0


def mod(a: int, b: int) -> int:
    """Unsigned ``a % b``; modulo by zero gives 0."""
    return a % b if b else 0
