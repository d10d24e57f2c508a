"""Messages between stages: a tag and named tensors, dense or top-k sparse, as bytes.

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


Tensor: TypeAlias = Union[Array, Sparse, Int8Rows]


def encode(tag: Any, tensors: Mapping[str, Tensor]) -> bytes:
    entries: list[dict[str, Any]] = []
    buffers: list[bytes] = []
    for name, t in tensors.items():
        if isinstance(t, Int8Rows):
            entries.append({"name": name, "kind": "q8", "dtype": t.dtype, "shape": list(t.q.shape)})
            buffers += [np.ascontiguousarray(t.q, np.int8).tobytes(), np.ascontiguousarray(t.scale, np.float32).tobytes()]
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
    """Tag and tensors; sparse ones are made dense unless ``densify`` is False."""
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
        elif e["kind"] == "q8":
            q = take(np.dtype(np.int8), int(np.prod(shape))).reshape(shape)
            qt = Int8Rows(q, take(np.dtype(np.float32), int(np.prod(shape[:-1]))).reshape(shape[:-1]), dtype.str)
            out[e["name"]] = qt.dense() if densify else qt
        else:
            out[e["name"]] = take(dtype, int(np.prod(shape))).reshape(shape)
    tag = header["tag"]
    return (tuple(tag) if isinstance(tag, list) else tag), out
