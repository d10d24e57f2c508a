"""Out-of-core Adam/AdamW: fp32 master parameters and moments in memory-mapped files.

LuWu keeps the whole optimizer state off the workers, on an optimizer node, and out of the
node's core: parameters, first and second moments live in three float32 files
(``params.f32``, ``exp_avg.f32``, ``exp_avg_sq.f32``) plus ``state.json`` (size, first
element of the shard, hyperparameters, step counter). An update walks its range in blocks
of ``block`` elements and maps only that block of each file (``numpy.memmap`` with an
offset), so the resident working set is bounded by ``3 * 4 * block`` bytes plus the
gradient, whatever the shard size.

The arithmetic is ``torch.optim.Adam``'s (and ``AdamW``'s with ``decoupled=True``), in
float32, the same operations in the same order, so a node and torch agree step by step
within float rounding:

    g = g + wd * p                          (Adam's L2 weight decay)     or
    p = p * (1 - lr * wd)                   (AdamW's decoupled decay)
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

A step may be applied in pieces (one per layer, as gradients arrive): every ``update`` of
step ``t`` uses the bias corrections of ``t = step + 1``; ``commit_step`` flushes the files
and then persists ``step + 1`` (write to a temporary file, rename), so a node that restarts
reopens the files and resumes at the last committed step. A crash in the middle of a step
leaves the pieces already applied in the files (their gradients are gone): the step counter
says which step is the last complete one.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

FORMAT = "innet-adam/1"
FILES = ("params.f32", "exp_avg.f32", "exp_avg_sq.f32")
"""Parameters, first moment, second moment (float32, native byte order)."""
STATE_FILE = "state.json"
DEFAULT_BLOCK = 1 << 18
"""Elements per mapped block (1 MiB of each file)."""

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


@dataclass(frozen=True)
class _Meta:
    format: str
    size: int
    first: int
    """Global index of the shard's first element."""
    step: int
    config: dict[str, float | bool]


class AdamState:
    """One shard's out-of-core Adam state (see module docstring)."""

    def __init__(self, directory: Path, meta: _Meta, block: int) -> None:
        if block < 1:
            raise AdamStateError(f"adam block {block}: must be >= 1 element")
        self.directory = directory
        self.size = meta.size
        self.first = meta.first
        self.step = meta.step
        self.config = AdamConfig(**meta.config)  # type: ignore[arg-type]
        self.block = block

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, initial: npt.ArrayLike, config: AdamConfig, first: int = 0,
               block: int = DEFAULT_BLOCK) -> "AdamState":
        """A new state at step 0 from ``initial`` parameters (moments zero); refuses a
        directory that holds one already (open it instead)."""
        directory = Path(directory)
        if (directory / STATE_FILE).exists():
            raise AdamStateError(f"optimizer state {directory}: exists already (open it to resume)")
        values = np.ascontiguousarray(initial, dtype=np.float32).ravel()
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in zip(FILES, (values, None, None)):
            with open(directory / name, "wb") as f:
                if data is None:
                    f.truncate(4 * values.size)  # sparse zeros
                else:
                    for i in range(0, values.size, DEFAULT_BLOCK):
                        f.write(data[i:i + DEFAULT_BLOCK].tobytes())
        meta = _Meta(FORMAT, int(values.size), first, 0, asdict(config))
        state = cls(directory, meta, block)
        state._write_meta()
        return state

    @classmethod
    def open(cls, directory: Path, block: int = DEFAULT_BLOCK) -> "AdamState":
        """Reopen a state written by ``create``/``commit_step`` (a restarted node)."""
        directory = Path(directory)
        path = directory / STATE_FILE
        try:
            data = json.loads(path.read_text())
            meta = _Meta(**data)
        except FileNotFoundError:
            raise AdamStateError(f"optimizer state {directory}: no {STATE_FILE}") from None
        except (ValueError, TypeError) as error:
            raise AdamStateError(f"optimizer state {path}: not an {FORMAT} file ({error})") from None
        if meta.format != FORMAT:
            raise AdamStateError(f"optimizer state {path}: format {meta.format!r}, expected {FORMAT!r}")
        for name in FILES:
            f = directory / name
            if not f.exists() or f.stat().st_size != 4 * meta.size:
                have = f.stat().st_size if f.exists() else "missing"
                raise AdamStateError(f"optimizer state {f}: expected {4 * meta.size} bytes, found {have}")
        return cls(directory, meta, block)

    @classmethod
    def open_or_create(cls, directory: Path, initial: npt.ArrayLike | None, config: AdamConfig,
                       first: int = 0, block: int = DEFAULT_BLOCK) -> "AdamState":
        if (Path(directory) / STATE_FILE).exists():
            return cls.open(directory, block)
        if initial is None:
            raise AdamStateError(f"optimizer state {directory}: none to resume and no initial parameters")
        return cls.create(directory, initial, config, first, block)

    def _write_meta(self) -> None:
        meta = _Meta(FORMAT, self.size, self.first, self.step, asdict(self.config))
        tmp = self.directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(meta)))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / STATE_FILE)

    # -- access ---------------------------------------------------------------------------

    def _map(self, name: str, start: int, stop: int) -> np.memmap:  # type: ignore[type-arg]
        return np.memmap(self.directory / name, dtype=np.float32, mode="r+", offset=4 * start,
                         shape=(stop - start,))

    def _check(self, start: int, n: int) -> None:
        if not (0 <= start and start + n <= self.size):
            raise AdamStateError(f"optimizer state {self.directory}: range {start}..{start + n - 1} is "
                                 f"outside the shard's 0..{self.size - 1}")

    def read(self, start: int = 0, stop: int | None = None) -> F32:
        """A copy of parameters ``start..stop-1`` (shard-local indexes)."""
        stop = self.size if stop is None else stop
        self._check(start, stop - start)
        out = np.empty(stop - start, np.float32)
        for a in range(start, stop, self.block):
            b = min(stop, a + self.block)
            mm = self._map(FILES[0], a, b)
            out[a - start:b - start] = mm
            del mm
        return out

    def read_moments(self) -> tuple[F32, F32]:
        """Both moments in full (for tests and inspection of small shards)."""
        out = []
        for name in FILES[1:]:
            mm = self._map(name, 0, self.size)
            out.append(np.array(mm))
            del mm
        return out[0], out[1]

    # -- the optimizer ---------------------------------------------------------------------

    def update(self, start: int, grad: npt.ArrayLike) -> None:
        """Apply step ``self.step + 1`` to elements ``start..start+len(grad)-1`` (shard-local)."""
        g_all = np.ascontiguousarray(grad, dtype=np.float32).ravel()
        self._check(start, g_all.size)
        if not np.all(np.isfinite(g_all)):
            raise AdamStateError(f"optimizer state {self.directory}: non-finite gradient in "
                                 f"{start}..{start + g_all.size - 1}")
        c = self.config
        t = self.step + 1
        bias1 = 1 - c.beta1 ** t
        bias2_sqrt = math.sqrt(1 - c.beta2 ** t)
        step_size = np.float32(c.lr / bias1)
        one_m_b1, b2, one_m_b2 = np.float32(1 - c.beta1), np.float32(c.beta2), np.float32(1 - c.beta2)
        eps, bias2 = np.float32(c.eps), np.float32(bias2_sqrt)
        for a in range(0, g_all.size, self.block):
            b = min(g_all.size, a + self.block)
            lo, hi = start + a, start + b
            p, m, v = (self._map(name, lo, hi) for name in FILES)
            g = g_all[a:b]
            if c.weight_decay:
                if c.decoupled:
                    p *= np.float32(1 - c.lr * c.weight_decay)
                else:
                    g = np.asarray(g + np.float32(c.weight_decay) * p, dtype=np.float32)
            m += one_m_b1 * (g - m)  # torch's lerp(m, g, 1 - beta1)
            v *= b2
            v += one_m_b2 * g * g
            denom = np.sqrt(v) / bias2 + eps
            p -= step_size * (m / denom)
            for mm in (p, m, v):
                mm.flush()
            del p, m, v

    def commit_step(self) -> int:
        """Every piece of the step is applied: persist the step counter; the new step."""
        self.step += 1
        self._write_meta()
        return self.step

    # -- reporting ------------------------------------------------------------------------

    @property
    def bytes_on_disk(self) -> int:
        """Allocated bytes of the state files (sparse zeros not counted)."""
        total = 0
        for name in (*FILES, STATE_FILE):
            st = (self.directory / name).stat()
            total += st.st_blocks * 512
        return total

    @property
    def working_set_bytes(self) -> int:
        """Upper bound of the mapped state an update touches at once (3 files x one block)."""
        return 3 * 4 * min(self.block, self.size)
