"""Compile one C translation unit with the system compiler, cache the shared object, load it with cffi.

Why this module exists: the switch's native executor (``innet.switch.native``) and the host
agent's C fast path (``innet.host``) and the C tools under ``innet.testbed`` all ship C
source inside the Python package and build it at load time. One helper keeps them on one
build system: no setuptools/distutils step, no Python headers needed (cffi's ABI mode over
a shared object we compile ourselves), and a cache so that a program is compiled once per
(source, compiler, flags).

Interface (stable; other packages copy it)::

    from innet.switch.native.build import load_library, find_compiler, NativeBuildError

    ffi, lib = load_library(source, cdef, name="innet_switch", flags=DEFAULT_FLAGS)

``source`` is a complete C translation unit; ``cdef`` the declarations cffi should see
(functions and types you call from Python, in ``ffi.cdef`` syntax). The object lands in
``cache_dir() / f"{name}-{sha256[:16]}.so"`` where the hash covers the source, the cdef,
the compiler's ``--version`` text and the flags; a build writes to a temporary file and
renames it into place, so concurrent loaders never see a half-written object. Calls into
``lib`` release the GIL (cffi does so for every C call), so C loops run off the GIL.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

DEFAULT_FLAGS: tuple[str, ...] = ("-O2", "-shared", "-fPIC", "-std=gnu11", "-fno-strict-aliasing")
"""Flags of every build (the hash covers them, so changing them rebuilds)."""

CACHE_ENV = "INNET_NATIVE_CACHE"
"""Environment variable overriding the cache directory (tests point it at a temp dir)."""


class NativeBuildError(Exception):
    """No C compiler, or the compiler rejected the source (the message carries its first
    error lines)."""


def cache_dir() -> Path:
    """``$INNET_NATIVE_CACHE``, else ``$XDG_CACHE_HOME/innet/native``, else ``~/.cache/innet/native``."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "innet" / "native"


def find_compiler() -> str | None:
    """Path of the C compiler (``$CC``, else ``cc``, ``gcc``, ``clang``), or None."""
    cand = [os.environ["CC"]] if os.environ.get("CC") else []
    for name in cand + ["cc", "gcc", "clang"]:
        path = shutil.which(name)
        if path:
            return path
    return None


@functools.lru_cache(maxsize=8)
def compiler_version(cc: str) -> str:
    """The compiler's ``--version`` text (part of the cache key)."""
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as error:
        raise NativeBuildError(f"C compiler {cc} cannot run: {error}") from None
    return out.stdout.strip() or out.stderr.strip()


def build_key(source: str, cdef: str, cc: str, flags: Sequence[str]) -> str:
    """Content hash of (source, cdef, compiler version, flags)."""
    h = hashlib.sha256()
    for part in (source, cdef, compiler_version(cc), " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def build_shared_object(source: str, *, name: str, cdef: str = "", flags: Sequence[str] = DEFAULT_FLAGS,
                        libs: Sequence[str] = ()) -> Path:
    """The cached shared object of ``source``, compiled now when absent."""
    cc = find_compiler()
    if cc is None:
        raise NativeBuildError("no C compiler found (set CC, or install gcc)")
    flags = tuple(flags)
    key = build_key(source, cdef, cc, flags + tuple(libs))
    out_dir = cache_dir()
    so = out_dir / f"{name}-{key[:16]}.so"
    if so.is_file():
        return so
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=out_dir) as tmp:
        src = Path(tmp) / f"{name}.c"
        src.write_text(source)
        obj = Path(tmp) / f"{name}.so"
        cmd = [cc, *flags, "-o", str(obj), str(src), *libs]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            errors = [ln for ln in proc.stderr.splitlines() if "error" in ln][:5] or proc.stderr.splitlines()[:5]
            raise NativeBuildError(f"{Path(cc).name} failed on generated {name}.c: " + " | ".join(errors))
        os.replace(obj, so)
    return so


def load_library(source: str, cdef: str, *, name: str, flags: Sequence[str] = DEFAULT_FLAGS,
                 libs: Sequence[str] = ()) -> tuple[Any, Any]:
    """``(ffi, lib)`` for ``source`` compiled (or taken from the cache) and opened with
    cffi in ABI mode; ``cdef`` declares what Python may call."""
    import cffi

    so = build_shared_object(source, name=name, cdef=cdef, flags=flags, libs=libs)
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    return ffi, ffi.dlopen(str(so))


__all__ = ["DEFAULT_FLAGS", "CACHE_ENV", "NativeBuildError", "cache_dir", "find_compiler", "compiler_version",
           "build_key", "build_shared_object", "load_library"]
