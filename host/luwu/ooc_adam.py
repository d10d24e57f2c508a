"""Out-of-core Adam/AdamW: fp32 master parameters and moments in files, processed in blocks.

LuWu keeps the whole optimizer state off the workers, on an optimizer node, and out of the
node's core: parameters, first and second moments live in float32 files, plus
``state.json`` (format, size, first element of the shard, hyperparameters, step counter,
the model the state belongs to, checksums). An update walks its range in blocks of
``block`` elements: it reads one block of each array (``pread``) into a per-thread buffer,
runs the fused step there and writes the block back (``pwrite``), so the resident working
set is ``3 * 4 * block`` bytes per thread plus the gradient piece, whatever the shard size;
the files stay in the page cache as far as the machine has memory to spare, which is the
kernel's business, not the node's RSS. (Mapping the blocks instead was 3-4x slower here:
every first write to a page of a shared file mapping faults to mark it dirty.)

**Two generations.** There are two sets of files, generation 0 and 1
(``params.G.f32``, ``exp_avg.G.f32``, ``exp_avg_sq.G.f32``); the state of committed step
``t`` is generation ``t % 2``. Step ``t + 1`` reads generation ``t % 2`` and writes the
other one, in pieces (one per layer, as gradients arrive); ``commit_step`` copies what no
piece touched, flushes, and only then persists ``step + 1`` (write a temporary file,
fsync, rename). A node killed in the middle of a step therefore restarts on the state of
its last committed step, untouched, and the step can be run again from the same gradients:
the run ends bit-identical to one that was never interrupted. Until the first piece of the
next step is written, the older generation is intact too, so a node can also go back one
step (``rollback``): after a crash, nodes that had committed one step more than a node that
died in the middle of it return to the common step.

**Integrity.** Every written array gets a position-weighted checksum (additive over
pieces, see ``host/luwu/native/adam.c``); ``state.json`` records those of the committed
generation and ``open`` recomputes them, so a corrupt file, a state from another model
(``model`` differs) or another shard is refused with one message naming the file.

The arithmetic is ``torch.optim.Adam``'s (``AdamW``'s with ``decoupled=True``) foreach path
in float32, operation for operation, fused in one pass of C (``host/luwu/native/adam.c``;
a numpy twin when no C compiler is available):

    g = g + wd * p                          (Adam's L2 weight decay)     or
    p = p * (1 - lr * wd)                   (AdamW's decoupled decay)
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)
"""

from __future__ import annotations

import json
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import numpy.typing as npt

FORMAT = "innet-adam/2"
ARRAYS = ("params", "exp_avg", "exp_avg_sq")
"""Parameters, first moment, second moment (float32, native byte order)."""
STATE_FILE = "state.json"
DEFAULT_BLOCK = 1 << 16
"""Elements per block (256 KiB of each array: the three fit in a core's L2 cache)."""
MASK64 = (1 << 64) - 1

F32 = npt.NDArray[np.float32]


class AdamStateError(ValueError):
    """An optimizer state directory or an update is invalid; names the file or range."""


@dataclass(frozen=True)
class AdamConfig:
    """Hyperparameters (``torch.optim.Adam`` / ``AdamW`` names and defaults)."""

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    decoupled: bool = False
    """AdamW: decay the parameters directly instead of adding ``wd * p`` to the gradient."""

    def __post_init__(self) -> None:
        for name in ("lr", "eps", "weight_decay"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise AdamStateError(f"adam {name}={value!r}: must be finite and >= 0")
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise AdamStateError(f"adam {name}={value!r}: must be within [0, 1)")


def file_name(array: str, generation: int) -> str:
    return f"{array}.{generation}.f32"


@dataclass(frozen=True)
class _Meta:
    format: str
    size: int
    first: int
    """Global index of the shard's first element."""
    step: int
    config: dict[str, float | bool]
    model: str | None = None
    """What the state belongs to (the node's model and shard); None: not recorded."""
    checksums: list[str] = field(default_factory=list)
    """Hex checksums of the committed generation's three arrays."""
    previous: list[str] | None = None
    """Checksums of the other generation while it still holds step ``step - 1`` intact."""


# -- the kernel: C, or its numpy twin --------------------------------------------------------

def checksum_numpy(values: npt.NDArray[Any], index0: int) -> int:
    w = np.ascontiguousarray(values).view(np.uint32).astype(np.uint64)
    k = np.arange(index0, index0 + w.size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    with np.errstate(over="ignore"):
        return int((w * k).sum(dtype=np.uint64))


def _fma32(a: Any, b: Any, c: Any) -> F32:
    """float32 fused multiply-add, through float64 (the product is exact there)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(np.float32)


@dataclass(frozen=True)
class _Scalars:
    decay: np.float32
    wd: np.float32
    w1: np.float32
    b2: np.float32
    omb2: np.float32
    c2: np.float32
    eps: np.float32
    neg_step: np.float32

    def native(self, ffi: Any) -> Any:
        """The kernel's ``innet_adam_params`` (made once per update, not per block)."""
        cached = self.__dict__.get("_native")
        if cached is None:
            cached = ffi.new("innet_adam_params *", {k: float(getattr(self, k)) for k in
                                                     ("decay", "wd", "w1", "b2", "omb2", "c2", "eps", "neg_step")})
            object.__setattr__(self, "_native", cached)
        return cached

    @classmethod
    def of(cls, c: AdamConfig, t: int) -> "_Scalars":
        f = np.float32
        return cls(decay=f(1 - c.lr * c.weight_decay) if c.decoupled else f(1.0),
                   wd=f(0.0) if c.decoupled else f(c.weight_decay), w1=f(1 - c.beta1), b2=f(c.beta2),
                   omb2=f(1 - c.beta2), c2=f(math.sqrt(1 - c.beta2 ** t)), eps=f(c.eps),
                   neg_step=f((c.lr / (1 - c.beta1 ** t)) * -1))


class _Kernel:
    """One block's step and checksums, in C when it builds, else numpy (same operations)."""

    def __init__(self, native: bool | None = None) -> None:
        self.lib: Any = None
        if native is not False:
            from innet.native_build import NativeBuildError
            from innet.host.luwu.native import adamlib

            try:
                self.lib = adamlib.load()
            except NativeBuildError:
                if native:
                    raise
        self.native = self.lib is not None

    def step(self, src: tuple[Any, Any, Any], g: F32, dst: tuple[Any, Any, Any], s: _Scalars,
             index0: int) -> tuple[int, int, int]:
        if self.lib is not None:
            ffi, lib = self.lib.ffi, self.lib.lib
            a = s.native(ffi)
            sums = ffi.new("uint64_t[3]")
            f = [ffi.from_buffer("float[]", x) for x in src] + [ffi.from_buffer("float[]", g)]
            o = [ffi.from_buffer("float[]", x, require_writable=True) for x in dst]
            lib.innet_adam_step(*f, *o, g.size, a, index0, sums)
            return int(sums[0]), int(sums[1]), int(sums[2])
        p, m, v = (np.array(x, np.float32) for x in src)
        if s.wd != 0:
            g = _fma32(s.wd, p, g)
        p = (p * s.decay).astype(np.float32)
        if s.w1 < 0.5:
            m = _fma32(s.w1, g - m, m)
        else:
            m = _fma32(s.w1 - np.float32(1), g - m, g)
        v = _fma32((s.omb2 * g).astype(np.float32), g, (v * s.b2).astype(np.float32))
        d = (np.sqrt(v) / s.c2 + s.eps).astype(np.float32)
        p = (p + (s.neg_step * m) / d).astype(np.float32)
        for out, x in zip(dst, (p, m, v)):
            out[:] = x
        return checksum_numpy(p, index0), checksum_numpy(m, index0), checksum_numpy(v, index0)

    def checksum(self, values: Any, index0: int) -> int:
        if self.lib is not None:
            ffi = self.lib.ffi
            return int(self.lib.lib.innet_checksum(ffi.cast("const uint32_t *", ffi.from_buffer(values)),
                                                   len(values), index0))
        return checksum_numpy(np.asarray(values), index0)


# -- the state -------------------------------------------------------------------------------

def _pread(fd: int, out: F32, start: int) -> None:
    """Fill ``out`` with elements ``start..`` of the float32 file ``fd``."""
    view, offset = out.data.cast("B"), 4 * start
    while view:
        got = os.preadv(fd, [view], offset)
        if got <= 0:
            raise AdamStateError(f"optimizer state: file ended at byte {offset} (truncated?)")
        view, offset = view[got:], offset + got


def _pwrite(fd: int, data: F32, start: int) -> None:
    view, offset = np.ascontiguousarray(data).data.cast("B"), 4 * start
    while view:
        done = os.pwritev(fd, [view], offset)
        view, offset = view[done:], offset + done


class _Buffers(threading.local):
    """Per-thread block buffers, reused (a fresh large array faults its pages in every time)."""

    def __init__(self) -> None:
        self.arrays: list[F32] = []

    def get(self, n: int) -> list[F32]:
        if not self.arrays or self.arrays[0].size < n:
            self.arrays = [np.empty(n, np.float32) for _ in ARRAYS]
        return [x[:n] for x in self.arrays]


class AdamState:
    """One shard's out-of-core Adam state (see module docstring)."""

    def __init__(self, directory: Path, meta: _Meta, block: int, threads: int = 1,
                 native: bool | None = None) -> None:
        if block < 1:
            raise AdamStateError(f"adam block {block}: must be >= 1 element")
        self.directory = directory
        self.size = meta.size
        self.first = meta.first
        self.step = meta.step
        self.model = meta.model
        self.config = AdamConfig(**meta.config)  # type: ignore[arg-type]
        self.block = block
        self.threads = max(1, threads)
        self._checksums = [int(h, 16) for h in meta.checksums]
        self._previous = None if meta.previous is None else [int(h, 16) for h in meta.previous]
        self._kernel = _Kernel(native)
        self._pending: list[tuple[int, int]] = []
        """Ranges written into the next generation in the current step."""
        self._sums = [0, 0, 0]
        self._fds: dict[Path, int] = {}
        self._buffers = _Buffers()
        self.durable = True
        """fsync the written generation before a commit (off: only for benchmarks of the arithmetic)."""

    @property
    def native(self) -> bool:
        """The C kernel runs the updates (else numpy)."""
        return self._kernel.native

    def path(self, array: str, generation: int | None = None) -> Path:
        g = self.step % 2 if generation is None else generation
        return self.directory / file_name(array, g)

    def _fd(self, path: Path) -> int:
        fd = self._fds.get(path)
        if fd is None:
            try:
                fd = self._fds[path] = os.open(path, os.O_RDWR)
            except OSError as error:
                raise AdamStateError(f"optimizer state {path}: {error.strerror}") from None
        return fd

    def close(self) -> None:
        """Close the state's files (a closed state reopens them when used again)."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, initial: npt.ArrayLike, config: AdamConfig, first: int = 0,
               block: int = DEFAULT_BLOCK, model: str | None = None, threads: int = 1,
               native: bool | None = None) -> "AdamState":
        """A new state at step 0 from ``initial`` parameters (moments zero); refuses a
        directory that holds one already (open it instead)."""
        directory = Path(directory)
        if (directory / STATE_FILE).exists():
            raise AdamStateError(f"optimizer state {directory}: exists already (open it to resume)")
        values = np.asarray(initial, dtype=np.float32).ravel()
        directory.mkdir(parents=True, exist_ok=True)
        kernel = _Kernel(native)
        sums = [0, 0, 0]
        for generation in (0, 1):
            for a in ARRAYS:
                with open(directory / file_name(a, generation), "wb") as f:
                    if a == "params" and generation == 0:
                        for i in range(0, values.size, DEFAULT_BLOCK):
                            piece = np.ascontiguousarray(values[i:i + DEFAULT_BLOCK])
                            f.write(piece.tobytes())
                            sums[0] = (sums[0] + kernel.checksum(piece, i)) & MASK64
                        os.fsync(f.fileno())
                    else:
                        f.truncate(4 * values.size)  # sparse zeros
        meta = _Meta(FORMAT, int(values.size), first, 0, asdict(config), model, [f"{s:016x}" for s in sums])
        state = cls(directory, meta, block, threads, native)
        state._write_meta()
        return state

    @classmethod
    def open(cls, directory: Path, block: int = DEFAULT_BLOCK, model: str | None = None, verify: bool = True,
             threads: int = 1, native: bool | None = None) -> "AdamState":
        """Reopen a state written by ``create``/``commit_step`` (a restarted node). With
        ``model``, refuse a state written for another one; with ``verify``, recompute the
        committed generation's checksums."""
        directory = Path(directory)
        path = directory / STATE_FILE
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise TypeError(f"a JSON {type(data).__name__}, not an object")
            if data.get("format") != FORMAT:
                raise AdamStateError(f"optimizer state {path}: format {data.get('format')!r}, expected {FORMAT!r}")
            meta = _Meta(**data)
            AdamConfig(**meta.config)  # type: ignore[arg-type]
            if not (isinstance(meta.size, int) and isinstance(meta.step, int) and len(meta.checksums) == 3):
                raise TypeError("size, step or checksums missing")
        except FileNotFoundError:
            raise AdamStateError(f"optimizer state {directory}: no {STATE_FILE}") from None
        except (ValueError, TypeError, AttributeError) as error:
            if isinstance(error, AdamStateError):
                raise
            raise AdamStateError(f"optimizer state {path}: not an {FORMAT} file ({error})") from None
        if model is not None and meta.model != model:
            raise AdamStateError(f"optimizer state {path}: belongs to model {meta.model!r}, this node's is {model!r}")
        state = cls(directory, meta, block, threads, native)
        for generation in (0, 1):
            for a in ARRAYS:
                f = directory / file_name(a, generation)
                have = f.stat().st_size if f.exists() else None
                if have != 4 * meta.size:
                    raise AdamStateError(f"optimizer state {f}: expected {4 * meta.size} bytes, "
                                         f"found {'none (missing)' if have is None else have}")
        if verify:
            for a, want in zip(ARRAYS, state._checksums):
                got = state._file_checksum(state.path(a))
                if got != want:
                    raise AdamStateError(f"optimizer state {state.path(a)}: checksum {got:016x} is not the "
                                         f"committed {want:016x} (the file is corrupt)")
        return state

    @classmethod
    def open_or_create(cls, directory: Path, initial: npt.ArrayLike | None, config: AdamConfig,
                       first: int = 0, block: int = DEFAULT_BLOCK, model: str | None = None,
                       threads: int = 1) -> "AdamState":
        if (Path(directory) / STATE_FILE).exists():
            return cls.open(directory, block, model=model, threads=threads)
        if initial is None:
            raise AdamStateError(f"optimizer state {directory}: none to resume and no initial parameters")
        return cls.create(directory, initial, config, first, block, model=model, threads=threads)

    def _write_meta(self) -> None:
        meta = _Meta(FORMAT, self.size, self.first, self.step, asdict(self.config), self.model,
                     [f"{s:016x}" for s in self._checksums],
                     None if self._previous is None else [f"{s:016x}" for s in self._previous])
        tmp = self.directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(meta)))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / STATE_FILE)
        dfd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    # -- access ---------------------------------------------------------------------------

    def _blocks(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        for a in range(start, stop, self.block):
            yield a, min(stop, a + self.block)

    def _file_checksum(self, path: Path) -> int:
        total = 0
        fd = self._fd(path)
        for a, b in self._blocks(0, self.size):
            buf = self._buffers.get(b - a)[0]
            _pread(fd, buf, a)
            total = (total + self._kernel.checksum(buf, a)) & MASK64
        return total

    def _check(self, start: int, n: int) -> None:
        if not (0 <= start and start + n <= self.size):
            raise AdamStateError(f"optimizer state {self.directory}: range {start}..{start + n - 1} is "
                                 f"outside the shard's 0..{self.size - 1}")

    def read(self, start: int = 0, stop: int | None = None) -> F32:
        """A copy of the committed parameters ``start..stop-1`` (shard-local indexes)."""
        stop = self.size if stop is None else stop
        self._check(start, stop - start)
        out = np.empty(stop - start, np.float32)
        _pread(self._fd(self.path("params")), out, start)
        return out

    @property
    def next_generation(self) -> int:
        """The generation ``update`` writes (the committed one after ``commit_step``)."""
        return (self.step + 1) % 2

    def read_written(self, start: int, stop: int, generation: int) -> F32:
        """A copy of parameters ``start..stop-1`` of ``generation``: what ``update`` wrote there
        before ``commit_step`` (a node broadcasts a piece as soon as it is updated). The caller
        reads a range before the step after the next one overwrites it."""
        self._check(start, stop - start)
        out = np.empty(stop - start, np.float32)
        _pread(self._fd(self.path("params", generation)), out, start)
        return out

    def read_moments(self) -> tuple[F32, F32]:
        """Both committed moments in full (for tests and inspection of small shards)."""
        out = []
        for name in ARRAYS[1:]:
            values = np.empty(self.size, np.float32)
            _pread(self._fd(self.path(name)), values, 0)
            out.append(values)
        return out[0], out[1]

    # -- the optimizer ---------------------------------------------------------------------

    def update(self, start: int, grad: npt.ArrayLike) -> None:
        """Apply step ``self.step + 1`` to elements ``start..start+len(grad)-1`` (shard-local),
        writing the next generation; each element at most once per step."""
        g_all = np.ascontiguousarray(grad, dtype=np.float32).ravel()
        n = g_all.size
        self._check(start, n)
        if not np.all(np.isfinite(g_all)):
            raise AdamStateError(f"optimizer state {self.directory}: non-finite gradient in "
                                 f"{start}..{start + n - 1}")
        for a, b in self._pending:
            if a < start + n and start < b:
                raise AdamStateError(f"optimizer state {self.directory}: range {start}..{start + n - 1} overlaps "
                                     f"{a}..{b - 1}, already updated in step {self.step + 1}")
        if n == 0:
            return
        if self._previous is not None:  # the older generation is about to be overwritten
            self._previous = None
            self._write_meta()
        s = _Scalars.of(self.config, self.step + 1)
        cur, nxt = self.step % 2, (self.step + 1) % 2

        src_fds = [self._fd(self.path(x, cur)) for x in ARRAYS]
        dst_fds = [self._fd(self.path(x, nxt)) for x in ARRAYS]

        def one(a: int, b: int) -> tuple[int, int, int]:
            bufs = self._buffers.get(b - a)
            for fd, buf in zip(src_fds, bufs):
                _pread(fd, buf, a)
            lo = a - start
            block = (bufs[0], bufs[1], bufs[2])
            sums = self._kernel.step(block, g_all[lo:lo + b - a], block, s, a)  # in place in the buffers
            for fd, buf in zip(dst_fds, bufs):
                _pwrite(fd, buf, a)
            return sums

        for sums in self._map(one, list(self._blocks(start, start + n))):
            self._sums = [(x + y) & MASK64 for x, y in zip(self._sums, sums)]
        self._pending.append((start, start + n))

    def _map(self, fn: Callable[[int, int], tuple[int, int, int]],
             blocks: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
        if self.threads == 1 or len(blocks) == 1 or not self._kernel.native:
            return [fn(a, b) for a, b in blocks]
        with ThreadPoolExecutor(self.threads) as pool:  # the C kernel runs off the GIL
            return list(pool.map(lambda ab: fn(*ab), blocks))

    def _gaps(self) -> list[tuple[int, int]]:
        out, at = [], 0
        for a, b in sorted(self._pending):
            if a > at:
                out.append((at, a))
            at = max(at, b)
        if at < self.size:
            out.append((at, self.size))
        return out

    def commit_step(self) -> int:
        """Every piece of the step is applied: copy what no piece touched, flush the new
        generation, persist the step counter; the new step."""
        if self._previous is not None:
            self._previous = None
            self._write_meta()
        cur, nxt = self.step % 2, (self.step + 1) % 2
        for gap_a, gap_b in self._gaps():
            for a, b in self._blocks(gap_a, gap_b):
                buf = self._buffers.get(b - a)[0]
                for i, x in enumerate(ARRAYS):
                    _pread(self._fd(self.path(x, cur)), buf, a)
                    self._sums[i] = (self._sums[i] + self._kernel.checksum(buf, a)) & MASK64
                    _pwrite(self._fd(self.path(x, nxt)), buf, a)
        if self.durable:
            for x in ARRAYS:
                os.fsync(self._fd(self.path(x, nxt)))
        self._previous, self._checksums = self._checksums, self._sums
        self._sums, self._pending = [0, 0, 0], []
        self.step += 1
        self._write_meta()
        return self.step

    def rollback(self) -> int:
        """Go back to step ``step - 1`` (its generation is still intact: nothing of the next
        step was written since the commit); the step."""
        if self._previous is None or self._pending or self.step == 0:
            raise AdamStateError(f"optimizer state {self.directory / STATE_FILE}: step {self.step} cannot go "
                                 f"back to {self.step - 1} (the older generation is no longer intact)")
        self.step -= 1
        self._checksums, self._previous = self._previous, None
        self._write_meta()
        return self.step

    # -- reporting ------------------------------------------------------------------------

    @property
    def bytes_on_disk(self) -> int:
        """Allocated bytes of the state files (sparse zeros not counted)."""
        total = 0
        for g in (0, 1):
            for name in ARRAYS:
                total += (self.directory / file_name(name, g)).stat().st_blocks * 512
        return total + (self.directory / STATE_FILE).stat().st_blocks * 512

    @property
    def working_set_bytes(self) -> int:
        """The block buffers an update holds at once (3 arrays x one block per thread)."""
        return 3 * 4 * min(self.block, self.size) * self.threads
