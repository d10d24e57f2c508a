"""Values wider than 64 bits in the native executor: their slot layout and C runtime.

Why a layout of its own: a C slot is one ``uint64_t``, so a ``bit<W>``/``int<W>`` with
W > 64 takes ``limbs(W)`` consecutive slots, least significant limb first (the python
executor keeps one Python int per slot). Every other value takes the slots the python
layout gives it, so programs without wide values get the same layout and the same C as
before, and their 64-bit fast path is untouched.

In expressions a wide value is a ``wv`` (a struct of ``WK`` limbs, ``WK`` the most limbs
any type of the program needs), passed by value to the ``w_*`` helpers of
:data:`WIDE_RUNTIME`; like 64-bit values it is a W-bit pattern (``int<W>`` too), and
every helper that can leave W bits takes W and masks.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..frontend import ir
from ..lowering.fields import field_slot, slot_count
from ..lowering.types import bits
from ..pipeline import layout as pylayout
from .errors import NativeUnsupported


def wide_width(t: ir.Type) -> int:
    """The width of a wide scalar type (W > 64), else 0."""
    if isinstance(t, ir.BitT) and t.width > 64:
        return t.width
    if isinstance(t, ir.EnumT) and t.underlying is not None and t.underlying.width > 64:
        return t.underlying.width
    return 0


def word_bits(t: ir.Type, node: Any = None) -> tuple[int, bool]:
    """(W, signed) of a value on a 64-bit code path; a wide one must have taken its wide
    path (``wide_width``), so meeting one here is a generator bug, refused by name."""
    try:
        w, s = bits(t)
    except TypeError:
        raise NativeUnsupported(f"value of type {t}", getattr(node, "loc", None)) from None
    if w > 64:
        raise NativeUnsupported(f"{t} value in a 64-bit code path (a wide case the generator misses)",
                                getattr(node, "loc", None))
    return w, s


def limbs(t: ir.Type) -> int:
    """Slots a scalar of type ``t`` takes: ``ceil(W / 64)`` for a wide one, else 1."""
    w = wide_width(t)
    return (w + 63) // 64 if w else 1


def limbs_of(width: int) -> int:
    return (width + 63) // 64 if width > 64 else 1


def split(value: int, width: int) -> list[int]:
    """A W-bit pattern as its 64-bit limbs, least significant first."""
    v = value & ((1 << width) - 1)
    return [(v >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(limbs_of(width))]


def join(words: Any, width: int, signed: bool) -> int:
    """The value of limbs (least significant first) of a W-bit pattern."""
    v = 0
    for i, x in enumerate(words):
        v |= int(x) << (64 * i)
    v &= (1 << width) - 1
    return v - (1 << width) if signed and v >> (width - 1) else v


def nslots(t: ir.Type) -> int:
    """Slots a value of type ``t`` takes in the native layout."""
    return slot_count(t, limbs)


def header_offsets(t: ir.HeaderT) -> list[int]:
    """Slot offset of each field of a header value (its validity is at offset 0)."""
    if len(t.fields) > _BIG:
        return list(_field_index(t)[0])
    out, off = [], 1
    for f in t.fields:
        out.append(off)
        off += limbs(f.type)
    return out


_BIG = 32
"""Aggregates with more fields than this get a field index (``_field_index``)."""
_INDEXES: "OrderedDict[int, tuple[ir.Type, tuple[int, ...], dict[str, tuple[int, ir.Type]]]]" = OrderedDict()


def _field_index(t: ir.Type) -> tuple[tuple[int, ...], dict[str, tuple[int, ir.Type]]]:
    """Each field's slot offset, and field name -> (offset, type), of a big header, struct or
    union, built once: the generator asks for a field of p4/examples/agg2048's 2048-field
    header once per access, and scanning the fields each time made generating its C take
    seconds (``innet.switch.pipeline.layout`` indexes the python layout the same way). Keyed
    by identity and holding the type (so an id is never reused while its entry lives); the
    last 64 aggregates are kept."""
    hit = _INDEXES.get(id(t))
    if hit is not None and hit[0] is t:
        _INDEXES.move_to_end(id(t))
        return hit[1], hit[2]
    header = isinstance(t, ir.HeaderT)
    offsets: list[int] = []
    index: dict[str, tuple[int, ir.Type]] = {}
    off = 1 if header else 0
    for f in t.fields:  # type: ignore[attr-defined]
        offsets.append(off)
        index.setdefault(f.name, (off, f.type))
        off += limbs(f.type) if header else nslots(f.type)
    _INDEXES[id(t)] = (t, tuple(offsets), index)
    if len(_INDEXES) > 64:
        _INDEXES.popitem(last=False)
    return tuple(offsets), index


def field_offset(t: ir.Type, name: str) -> tuple[int, ir.Type]:
    """Slot offset and type of field ``name`` of a header/struct/union value."""
    if isinstance(t, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)) and len(t.fields) > _BIG:
        hit = _field_index(t)[1].get(name)
        if hit is not None:
            return hit
        if not isinstance(t, ir.HeaderT):
            raise KeyError(f"type {t} has no field {name!r}")
    return field_slot(t, name, header_offsets, nslots)


def default_values(t: ir.Type) -> list[Any]:
    """Initial slot values, as the python layout's, a wide scalar as its zero limbs."""
    if isinstance(t, ir.HeaderT):
        return [False] + [v for f in t.fields for v in default_values(f.type)]
    if isinstance(t, (ir.StructT, ir.HeaderUnionT)):
        return [v for f in t.fields for v in default_values(f.type)]
    if isinstance(t, ir.StackT):
        return [0] + default_values(t.elem) * t.size
    if isinstance(t, ir.TupleT):
        return [v for e in t.elems for v in default_values(e)]
    if wide_width(t):
        return [0] * limbs(t)
    return pylayout.default_values(t)


class WideLayout(pylayout.Layout):
    """The python ``Layout`` allocating native slot ranges (wide scalars: their limbs)."""

    def defaults(self, t: ir.Type) -> list[Any]:
        return default_values(t)


WIDE_RUNTIME = r"""
/* ------------------------------------------------------------------ wide values (W > 64)
   A wv holds WK 64-bit limbs, least significant first; a bit<W>/int<W> value is its
   W-bit pattern and every helper that can set bits at or above W masks them off. */
typedef struct { u64 w[WK]; } wv;
static inline wv w_zero(void) { wv r; memset(&r, 0, sizeof r); return r; }
static inline wv w_u(u64 x) { wv r = w_zero(); r.w[0] = x; return r; }
static inline wv w_mask(wv a, int W) {
    for (int i = 0; i < WK; i++) { int lo = 64 * i; if (lo >= W) a.w[i] = 0; else if (W - lo < 64) a.w[i] &= (1ULL << (W - lo)) - 1; }
    return a;
}
static inline wv w_s64(int64_t x, int W) { wv r; for (int i = 0; i < WK; i++) r.w[i] = x < 0 ? ~0ULL : 0; r.w[0] = (u64)x; return w_mask(r, W); }
static inline wv w_ld(const u64 *p, int k) { wv r = w_zero(); memcpy(r.w, p, (size_t)k * sizeof(u64)); return r; }
static inline void w_st(u64 *p, int k, wv v) { memcpy(p, v.w, (size_t)k * sizeof(u64)); }
static inline u64 w_lo(wv a) { return a.w[0]; }
static inline int w_nz(wv a) { u64 o = 0; for (int i = 0; i < WK; i++) o |= a.w[i]; return o != 0; }
/* An amount or index: the value, or all ones when it does not fit 64 bits. */
static inline u64 w_sat64(wv a) { for (int i = 1; i < WK; i++) if (a.w[i]) return ~0ULL; return a.w[0]; }
static inline int w_eq(wv a, wv b) { for (int i = 0; i < WK; i++) if (a.w[i] != b.w[i]) return 0; return 1; }
static inline int w_ltu(wv a, wv b) { for (int i = WK - 1; i >= 0; i--) if (a.w[i] != b.w[i]) return a.w[i] < b.w[i]; return 0; }
static inline int w_bit(wv a, int i) { return (int)((a.w[i / 64] >> (i % 64)) & 1); }
static inline wv w_flip(wv a, int W) { a.w[(W - 1) / 64] ^= 1ULL << ((W - 1) % 64); return a; }
static inline int w_lts(wv a, wv b, int W) { return w_ltu(w_flip(a, W), w_flip(b, W)); }
static inline wv w_and(wv a, wv b) { for (int i = 0; i < WK; i++) a.w[i] &= b.w[i]; return a; }
static inline wv w_or(wv a, wv b) { for (int i = 0; i < WK; i++) a.w[i] |= b.w[i]; return a; }
static inline wv w_xor(wv a, wv b) { for (int i = 0; i < WK; i++) a.w[i] ^= b.w[i]; return a; }
static inline wv w_inv(wv a) { for (int i = 0; i < WK; i++) a.w[i] = ~a.w[i]; return a; }
static inline wv w_not(wv a, int W) { return w_mask(w_inv(a), W); }
static inline wv w_add(wv a, wv b, int W) {
    wv r; u64 c = 0;
    for (int i = 0; i < WK; i++) { u64 s = a.w[i] + c; c = s < c; u64 t = s + b.w[i]; c += t < s; r.w[i] = t; }
    return w_mask(r, W);
}
static inline wv w_sub(wv a, wv b, int W) {
    wv r; u64 br = 0;
    for (int i = 0; i < WK; i++) { u64 d = a.w[i] - b.w[i]; u64 b1 = a.w[i] < b.w[i]; u64 e = d - br; br = b1 | (d < br); r.w[i] = e; }
    return w_mask(r, W);
}
static inline wv w_neg(wv a, int W) { return w_sub(w_zero(), a, W); }
static inline wv w_mul(wv a, wv b, int W) {
    wv r = w_zero();
    for (int i = 0; i < WK; i++) {
        unsigned __int128 c = 0;
        for (int j = 0; i + j < WK; j++) {
            unsigned __int128 t = (unsigned __int128)a.w[i] * b.w[j] + r.w[i + j] + c;
            r.w[i + j] = (u64)t; c = t >> 64;
        }
    }
    return w_mask(r, W);
}
static inline wv w_shl(wv a, u64 n, int W) {
    if (n >= (u64)W) return w_zero();
    int q = (int)(n / 64), s = (int)(n % 64); wv r = w_zero();
    for (int i = WK - 1; i >= q; i--) { u64 v = a.w[i - q] << s; if (s && i - q - 1 >= 0) v |= a.w[i - q - 1] >> (64 - s); r.w[i] = v; }
    return w_mask(r, W);
}
static inline wv w_shr(wv a, u64 n) {
    if (n >= (u64)(64 * WK)) return w_zero();
    int q = (int)(n / 64), s = (int)(n % 64); wv r = w_zero();
    for (int i = 0; i + q < WK; i++) { u64 v = a.w[i + q] >> s; if (s && i + q + 1 < WK) v |= a.w[i + q + 1] << (64 - s); r.w[i] = v; }
    return r;
}
/* The from-bit pattern a sign-extended to W bits. */
static inline wv w_sext(wv a, int from, int W) {
    if (from < 64 * WK && w_bit(a, from - 1)) a = w_or(a, w_shl(w_inv(w_zero()), (u64)from, 64 * WK));
    return w_mask(a, W);
}
static inline wv w_sshr(wv a, u64 n, int W) {
    wv x = w_sext(a, W, 64 * WK);
    if (!w_bit(x, 64 * WK - 1)) return w_shr(x, n);
    return w_mask(w_inv(w_shr(w_inv(x), n)), W);
}
static wv w_divmod(wv a, wv b, int mod) {
    wv q = w_zero(), r = w_zero();
    if (!w_nz(b)) return q;
    for (int i = 64 * WK - 1; i >= 0; i--) {
        r = w_shl(r, 1, 64 * WK); r.w[0] |= (u64)w_bit(a, i);
        if (!w_ltu(r, b)) { r = w_sub(r, b, 64 * WK); q.w[i / 64] |= 1ULL << (i % 64); }
    }
    return mod ? r : q;
}
static inline wv w_divu(wv a, wv b) { return w_divmod(a, b, 0); }
static inline wv w_modu(wv a, wv b) { return w_divmod(a, b, 1); }
static inline wv w_slice(wv a, int lo, int n) { return w_mask(w_shr(a, (u64)lo), n); }
static inline u64 w_bits(wv a, int lo, int n) { return w_lo(w_slice(a, lo, n)); }
/* base with bits lo .. lo+n-1 replaced by v's low n bits. */
static inline wv w_setslice(wv base, wv v, int lo, int n, int W) {
    wv m = w_shl(w_mask(w_inv(w_zero()), n), (u64)lo, W);
    return w_mask(w_or(w_and(base, w_inv(m)), w_and(w_shl(v, (u64)lo, W), m)), W);
}
static inline wv w_sataddu(wv a, wv b, int W) { wv r = w_add(a, b, W); return w_ltu(r, a) ? w_mask(w_inv(w_zero()), W) : r; }
static inline wv w_satsubu(wv a, wv b, int W) { return w_ltu(a, b) ? w_zero() : w_sub(a, b, W); }
static inline wv w_smax(int W, int neg) { wv m = w_shl(w_u(1), (u64)(W - 1), W); return neg ? m : w_sub(m, w_u(1), W); }
static inline wv w_satadds(wv a, wv b, int W) {
    wv r = w_add(a, b, W); int sa = w_bit(a, W - 1), sb = w_bit(b, W - 1), sr = w_bit(r, W - 1);
    return (sa == sb && sr != sa) ? w_smax(W, sa) : r;
}
static inline wv w_satsubs(wv a, wv b, int W) {
    wv r = w_sub(a, b, W); int sa = w_bit(a, W - 1), sb = w_bit(b, W - 1), sr = w_bit(r, W - 1);
    return (sa != sb && sr != sa) ? w_smax(W, sa) : r;
}
/* W bits at bit offset off of p, most significant first (packet order). */
static inline wv w_get(const u8 *p, u32 off, int W) {
    int first = W % 64 ? W % 64 : 64;
    wv r = w_u(getbits(p, off, (u32)first)); u32 at = off + (u32)first;
    for (int rem = W - first; rem > 0; rem -= 64, at += 64) { r = w_shl(r, 64, 64 * WK); r.w[0] = getbits(p, at, 64); }
    return r;
}
static inline void w_put(u8 *p, u32 off, int W, wv v) {
    int first = W % 64 ? W % 64 : 64;
    putbits(p, off, (u32)first, w_bits(v, W - first, first)); u32 at = off + (u32)first;
    for (int lo = W - first - 64; lo >= 0; lo -= 64, at += 64) putbits(p, at, 64, w_bits(v, lo, 64));
}
"""
