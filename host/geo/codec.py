"""Messages between stages: a tag and named tensors (dense, int8 per row, top-k, per-row top-k
with float or int8 values, or a gradient masked by the forward top-k), as bytes.

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
from typing import Any, Mapping, TypeAlias, Union

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


def column_dtype(width: int) -> np.dtype:
    """The narrowest unsigned integer that indexes a row of ``width`` elements."""
    return np.dtype(np.uint8 if width <= 1 << 8 else np.uint16 if width <= 1 << 16 else np.uint32)


def _quantise(values: Array) -> tuple[Array, Array]:
    """int8 per row of ``values`` (rows, per) and the float32 scale of each row."""
    amax = np.abs(values).max(axis=-1, keepdims=True).astype(np.float32) if values.shape[-1] else \
        np.zeros((*values.shape[:-1], 1), np.float32)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
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

    @classmethod
    def of(cls, x: Array, cols: Array, int8: bool, referenced: bool = False) -> "TopkRows":
        """Keep columns ``cols`` (rows, per) of ``x`` viewed as rows."""
        vals = np.take_along_axis(x.reshape(-1, x.shape[-1]), cols.astype(np.intp), axis=1)
        narrow = cols.astype(column_dtype(x.shape[-1]))
        if int8:
            q, scale = _quantise(vals)
            return cls(tuple(x.shape), narrow, q, scale, x.dtype.str, referenced)
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
        return int(cols + self.values.nbytes + (self.scale.nbytes if self.scale is not None else 0))


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

    @classmethod
    def of(cls, g: Array, cols: Array, int8: bool) -> "MaskedRows":
        vals = np.take_along_axis(g.reshape(-1, g.shape[-1]), cols.astype(np.intp), axis=1)
        if int8:
            q, scale = _quantise(vals)
            return cls(tuple(g.shape), q, scale, g.dtype.str)
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
        return int(self.values.nbytes + (self.scale.nbytes if self.scale is not None else 0))


Tensor: TypeAlias = Union[Array, Sparse, Int8Rows, TopkRows, MaskedRows]


def codec_name(t: Tensor) -> str:
    """What a tensor is sent as, in the words the benchmark's rows use."""
    if isinstance(t, Int8Rows):
        return "int8"
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
        elif isinstance(t, TopkRows):
            mask = _as_mask(t)
            entries.append({"name": name, "kind": "topk-rows", "dtype": t.dtype, "shape": list(t.shape),
                            "per": int(t.cols.shape[1]), "q8": t.scale is not None, "ref": t.referenced,
                            "mask": mask is not None})
            buffers += [np.ascontiguousarray(t.cols).tobytes() if mask is None else mask.tobytes(),
                        np.ascontiguousarray(t.values).tobytes()]
            if t.scale is not None:
                buffers.append(np.ascontiguousarray(t.scale, np.float32).tobytes())
        elif isinstance(t, MaskedRows):
            entries.append({"name": name, "kind": "masked-rows", "dtype": t.dtype, "shape": list(t.shape),
                            "per": int(t.values.shape[1]), "q8": t.scale is not None})
            buffers.append(np.ascontiguousarray(t.values).tobytes())
            if t.scale is not None:
                buffers.append(np.ascontiguousarray(t.scale, np.float32).tobytes())
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
            scale = take(np.dtype(np.float32), rows) if e["q8"] else None
            if cols is not None:
                if cols.size and int(cols.max()) >= shape[-1]:
                    raise CodecError(f"geo message tensor {e['name']!r}: column {int(cols.max())} "
                                     f"outside rows of {shape[-1]}")
                tk = TopkRows(shape, cols, vals, scale, dtype.str, bool(e.get("ref", False)))
                out[e["name"]] = tk.dense() if densify and not tk.referenced else tk
            else:
                out[e["name"]] = MaskedRows(shape, vals, scale, dtype.str)
        elif e["kind"] == "q8":
            q = take(np.dtype(np.int8), int(np.prod(shape))).reshape(shape)
            qt = Int8Rows(q, take(np.dtype(np.float32), int(np.prod(shape[:-1]))).reshape(shape[:-1]), dtype.str)
            out[e["name"]] = qt.dense() if densify else qt
        else:
            out[e["name"]] = take(dtype, int(np.prod(shape))).reshape(shape)
    tag = header["tag"]
    return (tuple(tag) if isinstance(tag, list) else tag), out
