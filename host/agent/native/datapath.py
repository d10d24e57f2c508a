"""Which datapath an agent runs: the native (C) one, or the Python reference.

``AgentConfig.datapath`` is ``"native"`` (the default) or ``"python"``. ``select`` loads the
C library for ``"native"``; when it cannot (no compiler, a failed build, no cffi, a
transport the C loop cannot drive) the agent falls back to python and prints one line on
stderr saying why. ``Codec`` gathers what differs between the two: quantization of the
agent's inputs, dequantization of its results, and the aggregator.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Literal, TextIO

import numpy as np
import numpy.typing as npt

from innet.wire import quantize as qz
from innet.native_build import NativeBuildError, NativeLibrary
from innet.host.agent.aggregator import Aggregator, JobConfig, Timing
from innet.host.agent.transport import Transport

Datapath = Literal["native", "python"]
DATAPATHS: tuple[Datapath, ...] = ("native", "python")


def check_datapath(value: str) -> Datapath:
    """``value`` if it names a datapath; ValueError naming the choices otherwise."""
    if value not in DATAPATHS:
        raise ValueError(f"agent datapath {value!r}: expected one of {', '.join(DATAPATHS)}")
    return value  # type: ignore[return-value]


def load_native() -> NativeLibrary:
    """The agent's C library; raises NativeBuildError."""
    from innet.host.agent.native import agentlib

    return agentlib.load()


def _check_out(out: npt.NDArray[np.int32] | None, n: int, what: str) -> None:
    if out is not None and (out.dtype != np.int32 or not out.flags.c_contiguous or out.size != n):
        raise ValueError(f"quantize {what}: out must be contiguous int32 of {n} values, "
                         f"got {out.dtype} {out.shape}")


def _into(q: qz.Quantized, out: npt.NDArray[np.int32] | None) -> qz.Quantized:
    """``q`` with its values copied into ``out`` (checked by ``_check_out``), or ``q``."""
    if out is None:
        return q
    out.reshape(-1)[:] = q.values
    return qz.Quantized(out, q.saturated)


@dataclass(frozen=True)
class Codec:
    """Quantization and the aggregator of one datapath (``lib`` None: python)."""

    lib: NativeLibrary | None = None

    @property
    def name(self) -> Datapath:
        return "python" if self.lib is None else "native"

    def quantize(self, x: npt.NDArray[np.float32], frac_bits: int, limit: int,
                 bound: float = 0.0, what: str = "values",
                 out: npt.NDArray[np.int32] | None = None) -> qz.Quantized:
        """``innet.wire.quantize.quantize`` of float32 ``x`` after clipping ``|x| > bound``
        (bound > 0), both clips counted; raises QuantizeError for NaN/inf. ``out`` (contiguous
        int32 of ``x``'s size): where the values go, returned as ``Quantized.values``."""
        _check_out(out, np.size(x), what)
        if self.lib is None:
            arr = np.asarray(x, dtype=np.float64).ravel()
            qz._check_finite(arr, what)
            saturated = 0
            if bound > 0:
                saturated = int(np.count_nonzero(np.abs(arr) > bound))
                if saturated:
                    arr = np.clip(arr, -bound, bound)
            q = qz.quantize(arr, frac_bits, limit, what)
            return _into(qz.Quantized(q.values, saturated + q.saturated), out)
        ffi, lib = self.lib.ffi, self.lib.lib
        src = np.ascontiguousarray(x, dtype=np.float32).ravel()
        if out is None:
            out = np.empty(src.size, np.int32)
        st = ffi.new("innet_qstats *")
        lib.innet_quantize(ffi.from_buffer("float[]", src), src.size, frac_bits, float(bound),
                           limit, ffi.from_buffer("int32_t[]", out), st)
        if st.nonfinite:
            first = int(st.first_bad)
            raise qz.QuantizeError(f"{what}: {st.nonfinite} non-finite values (first at index "
                                   f"{first}: {src[first]})")
        return qz.Quantized(out, int(st.saturated))

    def quantize_sum(self, x: npt.NDArray[np.float32], bound: float,
                     num_workers: int, out: npt.NDArray[np.int32] | None = None) -> tuple[qz.Quantized, int]:
        """``innet.wire.quantize.quantize_sum`` (into ``out``, as ``quantize``)."""
        if self.lib is None:
            _check_out(out, np.size(x), "allreduce input")
            q, f = qz.quantize_sum(x, bound, num_workers)
            return _into(q, out), f
        f = qz.sum_frac_bits(bound, num_workers)
        return self.quantize(x, f, qz.per_worker_limit(num_workers), bound, "allreduce input", out), f

    def grads(self, fmt: qz.FixedPointFormat, g: npt.NDArray[np.float32],
              out: npt.NDArray[np.int32] | None = None) -> qz.Quantized:
        """``FixedPointFormat.grads`` (into ``out``, as ``quantize``)."""
        if self.lib is None:
            _check_out(out, np.size(g), "gradients")
            return _into(fmt.grads(g), out)
        return self.quantize(g, fmt.grad_frac_bits, qz.per_worker_limit(fmt.num_workers),
                             what="gradients", out=out)

    def dequantize(self, q: npt.ArrayLike, frac_bits: int) -> npt.NDArray[np.float32]:
        """``innet.wire.quantize.dequantize``."""
        if self.lib is None:
            return qz.dequantize(q, frac_bits)
        ffi, lib = self.lib.ffi, self.lib.lib
        src = np.ascontiguousarray(q, dtype=np.int32)
        out = np.empty(src.shape, np.float32)
        lib.innet_dequantize(ffi.from_buffer("int32_t[]", src), src.size, frac_bits,
                             ffi.from_buffer("float[]", out))
        return out

    def dequantize_into(self, q: npt.NDArray[np.int32], frac_bits: int, out: npt.NDArray[np.float32]) -> None:
        """``dequantize`` written into ``out`` (contiguous float32 of ``q``'s size)."""
        if self.lib is None:
            out[...] = qz.dequantize(q, frac_bits).reshape(out.shape)
            return
        ffi, lib = self.lib.ffi, self.lib.lib
        src = np.ascontiguousarray(q, dtype=np.int32)
        lib.innet_dequantize(ffi.from_buffer("int32_t[]", src), src.size, frac_bits,
                             ffi.from_buffer("float[]", out))

    def aggregator(self, job: JobConfig, transport: Transport, timing: Timing,
                   wait: Callable[[float], bool] | None = None,
                   control: Callable[[], int] | None = None,
                   on_control: Callable[[], None] | None = None) -> Any:
        """An ``Aggregator`` (python) or ``NativeAggregator``; ``wait`` is the python one's
        wait, ``control``/``on_control`` the native one's control-pipe hooks."""
        if self.lib is None:
            return Aggregator(job, transport, timing, wait=wait)
        from innet.host.agent.native.aggregator import NativeAggregator

        return NativeAggregator(job, transport, timing, self.lib, control, on_control)


def select(datapath: str, transport: object | None = None, who: str = "innet agent",
           stderr: TextIO | None = None) -> Codec:
    """The codec for ``datapath``; ``"native"`` falls back to python with one stderr line
    when the C library cannot be built or loaded or cannot drive ``transport``."""
    if check_datapath(datapath) == "python":
        return Codec(None)
    try:
        lib = load_native()
    except NativeBuildError as error:
        reason = str(error)
    else:
        from innet.host.agent.native.aggregator import supports

        if transport is None or supports(transport):
            return Codec(lib)
        reason = f"transport {type(transport).__name__} is not supported by the C loop"
    print(f"{who}: native datapath unavailable ({reason}); using the python datapath",
          file=stderr or sys.stderr, flush=True)
    return Codec(None)
