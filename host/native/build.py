"""Compile C sources with the system compiler, cache the result by content, load with cffi.

The native datapath is generated or shipped as C text; compiling it at load time keeps the
distribution a pure-Python wheel. The output is cached under ``$XDG_CACHE_HOME/innet/native``
(else ``~/.cache/innet/native``) by a hash of (source, compiler path and version, flags),
so a second process (every agent of a job) loads the cached object instead of compiling,
and a changed source or compiler can never load a stale object. Files are written to a
temporary name and renamed into place, so concurrent builders never see half a file.

    lib = load_library("agent", source, cdef)       # a cffi lib: lib.innet_quantize(...)
    exe = build_executable("reflector", source)     # Path of a cached executable
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHARED_FLAGS = ("-O2", "-shared", "-fPIC")
"""Flags of a shared object (the issue asks for -O2)."""
EXECUTABLE_FLAGS = ("-O2",)
"""Flags of a testbed tool."""


class NativeBuildError(RuntimeError):
    """No compiler, a compile error, or a library that cannot be loaded; the message is one
    line naming the unit and the reason; ``details`` holds the compiler's full output."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


@dataclass(frozen=True)
class Compiler:
    """The C compiler a build uses."""

    path: str
    """Absolute path of the compiler executable."""
    version: str
    """First line of ``--version`` (part of the cache key)."""


def cache_dir() -> Path:
    """Where compiled objects are kept: ``$XDG_CACHE_HOME/innet/native`` or ``~/.cache/...``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "innet" / "native"


@functools.lru_cache(maxsize=8)
def _compiler(name: str) -> Compiler:
    path = shutil.which(name)
    if path is None:
        raise NativeBuildError(f"no C compiler {name!r} on PATH (set CC or install gcc)")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NativeBuildError(f"C compiler {path}: cannot run it ({error})") from None
    lines = (out.stdout or out.stderr).splitlines()
    return Compiler(path, lines[0].strip() if lines else "unknown")


def find_compiler() -> Compiler:
    """The compiler named by ``$CC`` (default ``cc``); raises NativeBuildError."""
    return _compiler(os.environ.get("CC") or "cc")


def cache_key(source: str, compiler: Compiler, flags: tuple[str, ...]) -> str:
    """Hex digest naming a build: any change of source, compiler or flags changes it."""
    h = hashlib.sha256()
    for part in (source, compiler.path, compiler.version, "\0".join(flags)):
        h.update(part.encode())
        h.update(b"\0\1")
    return h.hexdigest()[:20]


def _first_error(output: str) -> str:
    for line in output.splitlines():
        if "error" in line:
            return line.strip()
    lines = output.strip().splitlines()
    return lines[0].strip() if lines else "no output"


def compile_cached(name: str, source: str, flags: tuple[str, ...], suffix: str = ".so",
                   libs: tuple[str, ...] = ()) -> Path:
    """Compile ``source`` (C) with ``flags`` unless the cache has it; the output's path.

    Raises NativeBuildError naming ``name`` and the first compiler error line."""
    compiler = find_compiler()
    all_flags = tuple(flags) + tuple(libs)
    target = cache_dir() / f"{name}-{cache_key(source, compiler, all_flags)}{suffix}"
    if target.exists():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise NativeBuildError(f"native build of {name!r}: cache directory {target.parent}: "
                               f"{error.strerror}") from None
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name}-") as tmp:
        src = Path(tmp) / f"{name}.c"
        src.write_text(source)
        out = Path(tmp) / f"{name}{suffix}"
        cmd = [compiler.path, *flags, "-o", str(out), str(src), *libs]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise NativeBuildError(f"native build of {name!r}: {compiler.path} did not run "
                                   f"({error})") from None
        if done.returncode != 0:
            raise NativeBuildError(f"native build of {name!r}: {Path(compiler.path).name} failed: "
                                   f"{_first_error(done.stderr)}", done.stderr)
        os.replace(out, target)  # atomic: a concurrent builder renames the same bytes
    return target


def build_shared(name: str, source: str, flags: tuple[str, ...] = SHARED_FLAGS,
                 libs: tuple[str, ...] = ("-lm",)) -> Path:
    """A cached shared object of ``source`` (``-O2 -shared -fPIC``)."""
    return compile_cached(name, source, flags, ".so", libs)


def build_executable(name: str, source: str, flags: tuple[str, ...] = EXECUTABLE_FLAGS) -> Path:
    """A cached executable of ``source`` (a testbed tool)."""
    return compile_cached(name, source, flags, "", ())


@dataclass(frozen=True)
class NativeLibrary:
    """A loaded shared object: ``ffi`` for buffers and types, ``lib`` for the functions."""

    name: str
    path: Path
    ffi: Any
    lib: Any


@functools.lru_cache(maxsize=16)
def load_library(name: str, source: str, cdef: str) -> NativeLibrary:
    """Build (or take from the cache) and load ``source`` with cffi in ABI mode.

    ``cdef`` declares what Python calls (cffi's C-declaration syntax). cffi releases the
    GIL during every call, so a long C loop does not stall other Python threads. Loaded
    once per process and arguments. Raises NativeBuildError."""
    try:
        import cffi
    except ImportError:
        raise NativeBuildError("the cffi package is not installed (pip install cffi)") from None
    path = build_shared(name, source)
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    try:
        lib = ffi.dlopen(str(path))
    except OSError as error:
        raise NativeBuildError(f"native library {path}: cannot load it ({error})") from None
    return NativeLibrary(name, path, ffi, lib)
