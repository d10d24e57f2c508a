"""Messages between stages: a tag and named tensors (dense, int8 or int4 per row, top-k, per-row
top-k with float or int8 values, or a gradient masked by the forward top-k), as bytes.

Layout: 4-byte big-endian header length, a JSON header (tag, and per tensor its name, kind,
dtype, shape and element count), then the buffers in header order. Sparse tensors carry
``uint32`` indices into the flattened tensor and their values; the receiver scatters them
into zeros. The format is deliberately framework-free so that sites need not share an ML
framework version (FusionLLM's point about RAD across heterogeneous software).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, TypeAlias, Union

import numpy as np

from innet.host.geo.ops import Array


class CodecError(ValueError):
    """A message could not be decoded; says what was wrong."""


@dataclass(frozen=True)
class Sparse:
    """The top-k part of a tensor: flat indices and values, plus the dense shape."""

    shape: tuple[int, ...]
    indices: Array
    """uint32 flat indices, ascending."""
    values: Array

    def dense(self) -> Array:
        out = np.zeros(int(np.prod(self.shape)), self.values.dtype)
        out[self.indices] = self.values
        return out.reshape(self.shape)

    @property
    def nbytes(self) -> int:
        return int(self.indices.nbytes + self.values.nbytes)


@dataclass(frozen=True)
class Int8Rows:
    """A tensor as int8 per row (last axis) with one float32 scale per row: 1 byte per element
    instead of 4, no indices; the receiver gets ``q * scale`` in ``dtype``."""

    q: Array
    """int8, the tensor's shape."""
    scale: Array
    """float32, one per row (the shape without its last axis)."""
    dtype: str

    @classmethod
    def of(cls, x: Array) -> "Int8Rows":
        amax = np.abs(x).max(axis=-1, keepdims=True).astype(np.float32)
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        q = np.clip(np.rint(x / scale), -127, 127).astype(np.int8)
        return cls(q, scale[..., 0], x.dtype.str)

    def dense(self) -> Array:
        return (self.q.astype(np.float32) * self.scale[..., None]).astype(np.dtype(self.dtype))

    @property
    def nbytes(self) -> int:
        return int(self.q.nbytes + self.scale.nbytes)


def bf16_bits(x: Array) -> Array:
    """float32 values rounded to nearest bfloat16 (the upper 16 bits of a float32): uint16."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits: Array) -> Array:
    """The float32 values of bfloat16 ``bits``."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


@dataclass(frozen=True)
class Int4Rows:
    """A tensor as 4-bit integers per row (last axis, -7..7, two per byte) with one bfloat16 scale
    per row: a 32-wide float32 row in 18 bytes instead of 128 (int8 per row: 36). The scale is
    bfloat16 because an activation gradient's rows can be far below float16's normal range
    (1e-5 and smaller after the loss is averaged over a step's tokens); bfloat16 keeps float32's
    exponent, and both ends use the rounded scale, so what is sent is exactly ``q * scale``."""

    q: Array
    """int8 holding -7..7, the tensor's shape."""
    scale: Array
    """float32 values of the bfloat16 scales, one per row (the shape without its last axis)."""
    dtype: str

    LEVELS: ClassVar[int] = 7

    @classmethod
    def of(cls, x: Array) -> "Int4Rows":
        amax = np.abs(x).max(axis=-1, keepdims=True).astype(np.float32)
        scale = bf16_values(bf16_bits(np.where(amax > 0, amax / cls.LEVELS, 1.0)))
        scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)  # a scale rounded to 0
        q = np.clip(np.rint(x / scale), -cls.LEVELS, cls.LEVELS).astype(np.int8)
        return cls(q, scale[..., 0], x.dtype.str)

    def dense(self) -> Array:
        return (self.q.astype(np.float32) * self.scale[..., None]).astype(np.dtype(self.dtype))

    def packed(self) -> Array:
        """Two values per byte (value + 8 in each nibble, low nibble first)."""
        u = (self.q.reshape(-1).astype(np.int16) + 8).astype(np.uint8)
        if u.size % 2:
            u = np.append(u, np.uint8(8))
        return (u[0::2] | (u[1::2] << 4)).astype(np.uint8)

    @staticmethod
    def unpack(packed: Array, count: int) -> Array:
        """The int8 values of ``packed`` (the first ``count``)."""
        u = np.empty(packed.size * 2, np.int8)
        u[0::2] = (packed & 0x0F).astype(np.int8) - 8
        u[1::2] = (packed >> 4).astype(np.int8) - 8
        return u[:count]

    @property
    def nbytes(self) -> int:
        return int((self.q.size + 1) // 2 + 2 * self.scale.size)


def column_dtype(width: int) -> np.dtype:
    """The narrowest unsigned integer that indexes a row of ``width`` elements."""
    return np.dtype(np.uint8 if width <= 1 << 8 else np.uint16 if width <= 1 << 16 else np.uint32)


def _quantise(values: Array, scale16: bool = False) -> tuple[Array, Array]:
    """int8 per row of ``values`` (rows, per) and the float32 scale of each row; ``scale16``:
    the scale rounded to bfloat16 first (what the wire then carries, 2 bytes instead of 4)."""
    amax = np.abs(values).max(axis=-1, keepdims=True).astype(np.float32) if values.shape[-1] else \
        np.zeros((*values.shape[:-1], 1), np.float32)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    if scale16:
        scale = bf16_values(bf16_bits(scale))
        scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
    return np.clip(np.rint(values / scale), -127, 127).astype(np.int8), scale[..., 0]


@dataclass(frozen=True)
class TopkRows:
    """Per-row top-k: the same number of elements ``per`` kept in every row (last axis), as the
    column index of each within its row (1 byte for rows up to 256 wide) and its value, either
    in the tensor's float type or as int8 with one float32 scale per row (top-k + int8 values)."""

    shape: tuple[int, ...]
    cols: Array
    """(rows, per) column indices, ascending within a row, ``column_dtype(width)``."""
    values: Array
    """(rows, per): floats, or int8 when ``scale`` is given."""
    scale: Array | None
    """float32 per row for int8 values, else None."""
    dtype: str
    referenced: bool = False
    """The values are deviations from a reference row both link ends keep (compress.RowReference)."""
    scale16: bool = False
    """The int8 values' scales go as bfloat16 (2 bytes per row instead of 4)."""

    @classmethod
    def of(cls, x: Array, cols: Array, int8: bool, referenced: bool = False, scale16: bool = False) -> "TopkRows":
        """Keep columns ``cols`` (rows, per) of ``x`` viewed as rows."""
        vals = np.take_along_axis(x.reshape(-1, x.shape[-1]), cols.astype(np.intp), axis=1)
        narrow = cols.astype(column_dtype(x.shape[-1]))
        if int8:
            q, scale = _quantise(vals, scale16)
            return cls(tuple(x.shape), narrow, q, scale, x.dtype.str, referenced, scale16)
        return cls(tuple(x.shape), narrow, vals.astype(x.dtype), None, x.dtype.str, referenced)

    def kept(self) -> Array:
        """The values as sent (int8 values scaled back), (rows, per)."""
        if self.scale is None:
            return self.values
        return (self.values.astype(np.float32) * self.scale[:, None]).astype(np.dtype(self.dtype))

    def dense(self) -> Array:
        width = self.shape[-1]
        out = np.zeros((len(self.cols), width), np.dtype(self.dtype))
        np.put_along_axis(out, self.cols.astype(np.intp), self.kept(), axis=1)
        return out.reshape(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire (``encode`` sends the columns as a bitmask per row when smaller)."""
        cols = len(self.cols) * column_bytes(self.shape[-1], self.cols.shape[1]) if self.cols.shape[1] else 0
        return int(cols + self.values.nbytes + _scale_bytes(self.scale, self.scale16))


@dataclass(frozen=True)
class MaskedRows:
    """A gradient at the positions the forward top-k kept, without their indices: the receiver
    sent that top-k and still has the columns (the exact gradient of the sparsified forward is
    zero everywhere else). Values float, or int8 with a float32 scale per row."""

    shape: tuple[int, ...]
    values: Array
    """(rows, per)."""
    scale: Array | None
    dtype: str
    scale16: bool = False
    """As ``TopkRows.scale16``."""

    @classmethod
    def of(cls, g: Array, cols: Array, int8: bool, scale16: bool = False) -> "MaskedRows":
        vals = np.take_along_axis(g.reshape(-1, g.shape[-1]), cols.astype(np.intp), axis=1)
        if int8:
            q, scale = _quantise(vals, scale16)
            return cls(tuple(g.shape), q, scale, g.dtype.str, scale16)
        return cls(tuple(g.shape), vals.astype(g.dtype), None, g.dtype.str)

    def dense(self, cols: Array) -> Array:
        """Scattered to the columns ``cols`` (rows, per) the forward kept."""
        if cols.shape != self.values.shape:
            raise CodecError(f"masked gradient of {self.values.shape} values for a forward top-k of {cols.shape}")
        kept = self.values if self.scale is None else self.values.astype(np.float32) * self.scale[:, None]
        out = np.zeros((len(cols), self.shape[-1]), np.dtype(self.dtype))
        np.put_along_axis(out, cols.astype(np.intp), kept.astype(out.dtype), axis=1)
        return out.reshape(self.shape)

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + _scale_bytes(self.scale, self.scale16))


def _scale_bytes(scale: Array | None, scale16: bool) -> int:
    return 0 if scale is None else (2 if scale16 else 4) * int(scale.size)


def _scale_buffer(scale: Array, scale16: bool) -> bytes:
    return bf16_bits(scale).tobytes() if scale16 else np.ascontiguousarray(scale, np.float32).tobytes()


Tensor: TypeAlias = Union[Array, Sparse, Int8Rows, Int4Rows, TopkRows, MaskedRows]


def codec_name(t: Tensor) -> str:
    """What a tensor is sent as, in the words the benchmark's rows use."""
    if isinstance(t, Int8Rows):
        return "int8"
    if isinstance(t, Int4Rows):
        return "int4"
    if isinstance(t, Sparse):
        return "top-k"
    if isinstance(t, TopkRows):
        return "top-k+int8" if t.scale is not None else "top-k"
    if isinstance(t, MaskedRows):
        return "masked+int8" if t.scale is not None else "masked"
    return "dense"


def mask_bytes(width: int) -> int:
    """Bytes of one row's bitmask of kept columns."""
    return (width + 7) // 8


def column_bytes(width: int, per: int) -> int:
    """Bytes per row that say which ``per`` of ``width`` columns a per-row top-k kept: their
    indices, or a bitmask of the row when that is smaller (a quarter of 32 columns: 4 bytes
    instead of 8)."""
    return min(per * column_dtype(width).itemsize, mask_bytes(width))


def _as_mask(t: TopkRows) -> Array | None:
    """The kept columns as a bitmask per row when that is smaller than the indices; only when
    they ascend within each row (the order the values go in, and the order a mask gives back)."""
    rows, per = t.cols.shape
    width = t.shape[-1]
    if per == 0 or mask_bytes(width) >= per * t.cols.dtype.itemsize:
        return None
    if per > 1 and not np.all(np.diff(t.cols.astype(np.int64), axis=1) > 0):
        return None
    bits = np.zeros((rows, width), bool)
    np.put_along_axis(bits, t.cols.astype(np.intp), True, axis=1)
    return np.packbits(bits, axis=1, bitorder="little")


def _from_mask(packed: Array, width: int, per: int, name: str) -> Array:
    bits = np.unpackbits(packed, axis=1, count=width, bitorder="little").astype(bool)
    if not np.all(bits.sum(axis=1) == per):
        raise CodecError(f"geo message tensor {name!r}: a column mask row does not have {per} bits set")
    return (np.flatnonzero(bits).reshape(len(bits), per) % width).astype(column_dtype(width))


def encode(tag: Any, tensors: Mapping[str, Tensor]) -> bytes:
    entries: list[dict[str, Any]] = []
    buffers: list[bytes] = []
    for name, t in tensors.items():
        if isinstance(t, Int8Rows):
            entries.append({"name": name, "kind": "q8", "dtype": t.dtype, "shape": list(t.q.shape)})
            buffers += [np.ascontiguousarray(t.q, np.int8).tobytes(), np.ascontiguousarray(t.scale, np.float32).tobytes()]
        elif isinstance(t, Int4Rows):
            entries.append({"name": name, "kind": "q4", "dtype": t.dtype, "shape": list(t.q.shape)})
            buffers += [t.packed().tobytes(), bf16_bits(t.scale).tobytes()]
        elif isinstance(t, TopkRows):
            mask = _as_mask(t)
            entries.append({"name": name, "kind": "topk-rows", "dtype": t.dtype, "shape": list(t.shape),
                            "per": int(t.cols.shape[1]), "q8": t.scale is not None, "ref": t.referenced,
                            "mask": mask is not None, "s16": t.scale16})
            buffers += [np.ascontiguousarray(t.cols).tobytes() if mask is None else mask.tobytes(),
                        np.ascontiguousarray(t.values).tobytes()]
            if t.scale is not None:
                buffers.append(_scale_buffer(t.scale, t.scale16))
        elif isinstance(t, MaskedRows):
            entries.append({"name": name, "kind": "masked-rows", "dtype": t.dtype, "shape": list(t.shape),
                            "per": int(t.values.shape[1]), "q8": t.scale is not None, "s16": t.scale16})
            buffers.append(np.ascontiguousarray(t.values).tobytes())
            if t.scale is not None:
                buffers.append(_scale_buffer(t.scale, t.scale16))
        elif isinstance(t, Sparse):
            entries.append({"name": name, "kind": "sparse", "dtype": t.values.dtype.str, "shape": list(t.shape),
                            "n": int(len(t.indices))})
            buffers += [np.ascontiguousarray(t.indices, np.uint32).tobytes(), np.ascontiguousarray(t.values).tobytes()]
        else:
            a = np.asarray(t)
            entries.append({"name": name, "kind": "dense", "dtype": a.dtype.str, "shape": list(a.shape)})
            buffers.append(np.ascontiguousarray(a).tobytes())
    header = json.dumps({"tag": tag, "tensors": entries}).encode()
    return struct.pack(">I", len(header)) + header + b"".join(buffers)


def decode(data: bytes, densify: bool = True) -> tuple[Any, dict[str, Tensor]]:
    """Tag and tensors; sparse ones are made dense unless ``densify`` is False (a masked
    gradient, or a top-k relative to a reference, always stays as it is: only the other end of
    the link can complete it)."""
    if len(data) < 4:
        raise CodecError(f"geo message of {len(data)} bytes is shorter than its 4-byte header length")
    (hlen,) = struct.unpack_from(">I", data)
    try:
        header = json.loads(data[4:4 + hlen])
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CodecError(f"geo message header is not JSON: {error}") from None
    offset = 4 + hlen
    out: dict[str, Tensor] = {}

    def take(dtype: np.dtype, count: int) -> Array:
        nonlocal offset
        size = dtype.itemsize * count
        if offset + size > len(data):
            raise CodecError(f"geo message truncated: needs {offset + size} bytes, has {len(data)}")
        a = np.frombuffer(data, dtype, count, offset).copy()
        offset += size
        return a

    for e in header["tensors"]:
        dtype = np.dtype(e["dtype"])
        shape = tuple(e["shape"])
        if e["kind"] == "sparse":
            idx = take(np.dtype(np.uint32), e["n"])
            vals = take(dtype, e["n"])
            sp = Sparse(shape, idx, vals)
            out[e["name"]] = sp.dense() if densify else sp
        elif e["kind"] in ("topk-rows", "masked-rows"):
            rows = int(np.prod(shape[:-1])) if shape else 1
            per = int(e["per"])
            cols = None
            if e["kind"] == "topk-rows" and e.get("mask"):
                cols = _from_mask(take(np.dtype(np.uint8), rows * mask_bytes(shape[-1])).reshape(rows, -1),
                                  shape[-1], per, e["name"])
            elif e["kind"] == "topk-rows":
                cols = take(column_dtype(shape[-1]), rows * per).reshape(rows, per)
            vals = take(np.dtype(np.int8) if e["q8"] else dtype, rows * per).reshape(rows, per)
            s16 = bool(e.get("s16", False))
            scale = (bf16_values(take(np.dtype(np.uint16), rows)) if s16 else take(np.dtype(np.float32), rows)) \
                if e["q8"] else None
            if cols is not None:
                if cols.size and int(cols.max()) >= shape[-1]:
                    raise CodecError(f"geo message tensor {e['name']!r}: column {int(cols.max())} "
                                     f"outside rows of {shape[-1]}")
                tk = TopkRows(shape, cols, vals, scale, dtype.str, bool(e.get("ref", False)), s16)
                out[e["name"]] = tk.dense() if densify and not tk.referenced else tk
            else:
                out[e["name"]] = MaskedRows(shape, vals, scale, dtype.str, s16)
        elif e["kind"] == "q4":
            count, rows = int(np.prod(shape)), int(np.prod(shape[:-1]))
            q = Int4Rows.unpack(take(np.dtype(np.uint8), (count + 1) // 2), count).reshape(shape)
            q4 = Int4Rows(q, bf16_values(take(np.dtype(np.uint16), rows)).reshape(shape[:-1]), dtype.str)
            out[e["name"]] = q4.dense() if densify else q4
        elif e["kind"] == "q8":
            q = take(np.dtype(np.int8), int(np.prod(shape))).reshape(shape)
            qt = Int8Rows(q, take(np.dtype(np.float32), int(np.prod(shape[:-1]))).reshape(shape[:-1]), dtype.str)
            out[e["name"]] = qt.dense() if densify else qt
        else:
            out[e["name"]] = take(dtype, int(np.prod(shape))).reshape(shape)
    tag = header["tag"]
    return (tuple(tag) if isinstance(tag, list) else tag), out
