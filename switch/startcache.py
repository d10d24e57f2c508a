"""Content-addressed cache of what loading a program computes: the front-end's output
(IR and P4Info) and the native executor's generated C, so that a switch starting a
program it ran before does not compile it again.

Why a cache and not a faster compiler alone: ``p4/innet.p4`` at ``INNET_K=2048`` is
660,000 tokens after the preprocessor, and front-end, P4Info and code generation take
tens of seconds at every start (and every start of every switch of a testbed). Their
results are pure functions of the preprocessed source and of innet's code, so they are
cached by exactly that:

- the key of a program is a SHA-256 of the *preprocessed* single-file source (what the
  includes and ``-D`` defines produced: a changed include file or define is another key)
  and the name it is compiled under (it appears in locations);
- every key also covers innet's version and a digest of the source files of
  ``innet.switch`` (a changed front-end or generator can never load an old result);
- entries are pickles written to a temporary file and renamed into place, so concurrent
  starts never read half an entry; an unreadable entry is a miss.

Entries live in ``$INNET_START_CACHE`` or ``<native build cache>/start``
(``innet.native_build.cache_dir``); ``INNET_START_CACHE=off`` disables the cache (cold
compile measurements).
"""

from __future__ import annotations

import contextlib
import copyreg
import dataclasses
import functools
import gc
import hashlib
import io
import logging
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

LOG = logging.getLogger(__name__)
CACHE_ENV = "INNET_START_CACHE"
"""A directory for the entries, or ``off``."""


def cache_dir() -> Path | None:
    """Where entries live, None when the cache is off."""
    value = os.environ.get(CACHE_ENV, "")
    if value.lower() in ("off", "0", "no"):
        return None
    if value:
        return Path(value)
    from innet.native_build import cache_dir as native_cache

    return native_cache() / "start"


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """innet's version and a digest of every ``innet.switch`` source file."""
    from innet import __version__

    root = Path(__file__).resolve().parent
    h = hashlib.sha256(__version__.encode())
    for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.lark")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def key(*parts: str) -> str:
    """The key of an entry made from ``parts`` (and ``code_version``)."""
    h = hashlib.sha256(code_version().encode())
    for part in parts:
        h.update(b"\0\1")
        h.update(part.encode())
    return h.hexdigest()[:32]


FREEZE_MIN_OBJECTS = 100_000
"""Objects a ``no_gc(keep=True)`` block must leave behind to be frozen (a K=2048
``innet.p4`` leaves about a million; a test's small program a few thousand)."""

_frozen = False
"""Whether ``no_gc(keep=True)`` froze objects that a later load must unfreeze."""


@contextlib.contextmanager
def no_gc(keep: bool = False) -> Iterator[None]:
    """The cyclic garbage collector off for a block that builds a program's long-lived
    objects (a loaded IR, its compiled control plane): every collection in between would
    scan up to a million new objects that are all still in use (2-3x the CPU time).

    ``keep``: the block builds what the process keeps (a switch's loaded program), so when
    it leaves many objects they are frozen (``gc.freeze``) instead of handed to the
    collector: re-enabled, it would scan them all at its next three collections (young,
    middle, then full generation: ~0.9 s for K=2048, most of a warm switch start) and at
    every full collection after. Frozen objects are still freed by reference counting; so
    that the cycles of a program replaced later are not kept for good, the next
    ``keep`` block first unfreezes and collects (a reload pays one full collection)."""
    global _frozen
    collecting = gc.isenabled()
    if keep and _frozen:
        gc.unfreeze()
        _frozen = False
        gc.collect()
    gc.disable()
    ok = False
    try:
        yield
        ok = True
    finally:
        if keep and ok and gc.get_count()[0] >= FREEZE_MIN_OBJECTS:
            gc.freeze()
            _frozen = True
        if collecting:
            gc.enable()


_PLANS: dict[type, tuple[tuple[str, ...], bool] | None] = {}


def _plan(cls: type) -> tuple[tuple[str, ...], bool] | None:
    """(field names, frozen) of a dataclass with slots whose fields are all ``__init__``
    parameters; None for anything else (pickled the default way)."""
    if cls not in _PLANS:
        plan = None
        params = getattr(cls, "__dataclass_params__", None)
        if params is not None and "__slots__" in cls.__dict__:
            fields = dataclasses.fields(cls)
            if all(f.init for f in fields):
                plan = (tuple(f.name for f in fields), bool(params.frozen))
        _PLANS[cls] = plan
    return _PLANS[cls]


_PLAIN = (str, int, bool)
"""Field types of a frozen value that may stand for every equal one (``_Pickler``)."""


def _same(value: Any) -> Any:
    """The unpickler's stand-in for a frozen value equal to one it has already built."""
    return value


class _Pickler(pickle.Pickler):
    """Pickles the IR's slotted dataclasses so that unpickling runs in C: mutable ones as
    ``object.__new__`` plus a slot-state dict (the unpickler sets it with setattr), frozen
    ones as a call of the class. (dataclasses' own ``__setstate__`` for slotted classes
    is Python that recomputes ``fields()`` per object: seconds for a big program.)

    A frozen value of plain fields (``Loc``, ``BitT``) equal to one pickled before is
    pickled as that one: a K=2048 program's 239,000 locations are 156,000 distinct values
    and its 33,000 ``bit<W>`` types a few dozen, each of which the unpickler would build
    through the class's Python ``__init__``. (Frozen dataclasses compare by value; no
    code tells two equal ones apart.)"""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._values: dict[tuple[Any, ...], Any] = {}

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        plan = _plan(cls)
        if plan is None:
            return NotImplemented
        names, frozen = plan
        if frozen:
            args = tuple(getattr(obj, n) for n in names)
            if all(type(a) in _PLAIN for a in args):  # exact types: True and 1 stay apart
                first = self._values.setdefault((cls, args, tuple(type(a) for a in args)), obj)
                if first is not obj:
                    return _same, (first,)
            return cls, args
        return copyreg.__newobj__, (cls,), (None, {n: getattr(obj, n) for n in names})  # type: ignore[attr-defined]


def _path(kind: str, k: str) -> Path | None:
    root = cache_dir()
    return None if root is None else root / f"{kind}-{k}.pickle"


def load(kind: str, k: str) -> Any | None:
    """The entry ``kind``/``k``, or None (a miss, a disabled cache, an unreadable entry)."""
    path = _path(kind, k)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, 20000))
        with no_gc():
            return pickle.loads(data)
    except Exception as error:  # a truncated or foreign file: recompute
        LOG.warning("start-up cache: ignoring unreadable entry %s (%s)", path, error)
        return None
    finally:
        sys.setrecursionlimit(limit)


def store(kind: str, k: str, value: Any) -> None:
    """Keep ``value`` as ``kind``/``k``; a failure (no space, an unpicklable or too deep
    value) only costs the next start its compile."""
    path = _path(kind, k)
    if path is None:
        return
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, 20000))  # deeply nested IR (long statement chains)
        buf = io.BytesIO()
        _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
        data = buf.getvalue()
    except (RecursionError, pickle.PicklingError, TypeError, AttributeError) as error:
        LOG.warning("start-up cache: %s %s not cached (%s)", kind, k, error)
        return
    finally:
        sys.setrecursionlimit(limit)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{kind}-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)  # atomic: a concurrent start reads the old entry or this one
        tmp = None
    except OSError as error:
        LOG.warning("start-up cache: cannot write %s (%s)", path, error)
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
