"""Compile C with the system compiler, cache the result by content, load it with cffi.

The switch's native executor (``innet.switch.native``), the host agent's C datapath
(``innet.host.agent.native``) and the C tools under ``innet.testbed.microbench.native`` all ship C source
inside the Python package and build it at load time: the distribution stays pure Python,
no Python headers are needed (cffi's ABI mode over a shared object built here), and one
build system serves all three. Outputs are cached under ``$INNET_NATIVE_CACHE``, else
``$XDG_CACHE_HOME/innet/native``, else ``~/.cache/innet/native``, named by a hash of
(source, compiler path and version, flags), so every agent of a job loads one object and a
changed source or compiler can never load a stale one. A build writes a temporary file and
renames it into place, so concurrent builders never see half a file.

    lib = load_library("innet-agent", source, cdef)   # lib.lib.innet_quantize(...), lib.ffi
    exe = build_executable("reflector", source)      # Path of a cached executable

cffi releases the GIL for every C call, so C loops run off the GIL.
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

SHARED_FLAGS: tuple[str, ...] = ("-O2", "-shared", "-fPIC", "-std=gnu11", "-fno-strict-aliasing")
"""Flags of a shared object (part of the cache key: changing them rebuilds)."""
EXECUTABLE_FLAGS: tuple[str, ...] = ("-O2",)
"""Flags of a testbed tool."""
CACHE_ENV = "INNET_NATIVE_CACHE"
"""Environment variable overriding the cache directory (tests point it at a temp dir)."""


@functools.lru_cache(maxsize=1)
def host_cpu() -> str | None:
    """The CPU model and a digest of its feature flags (/proc/cpuinfo), or None.

    Why: the switch unit and the agent library are built with ``-march=native`` (AVX2/AVX-512
    for the switch's rerolled per-element loops, 2-4x fewer instructions than SSE2 on jumbo
    frames; for the agent's quantization), so the object depends on the CPU, which the build
    cache's key (source, compiler, flags) does not see; this string goes into the source
    (:func:`for_this_cpu`), so another CPU never loads this object."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    model = flags = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and not model:
            model = value.strip()
        elif key.strip() in ("flags", "Features") and not flags:
            flags = value.strip()
    if not flags:
        return None
    return f"{model} flags {hashlib.sha256(flags.encode()).hexdigest()[:16]}"


def for_this_cpu(flags: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """``flags`` plus ``-march=native`` when the CPU can be named, and the comment line the
    source must start with (it names the CPU, so the cache key does)."""
    cpu = host_cpu()
    if cpu is None:
        return flags, "/* generic build */"
    return flags + ("-march=native",), f"/* -march=native on {cpu.replace('*/', '')} */"


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
    """Where compiled objects are kept (see the module docstring)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "innet" / "native"


def compiler_path() -> str | None:
    """The C compiler to use (``$CC``, else ``cc``, ``gcc``, ``clang`` on PATH), or None."""
    names = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


@functools.lru_cache(maxsize=8)
def _compiler(path: str) -> Compiler:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NativeBuildError(f"C compiler {path}: cannot run it ({error})") from None
    lines = (out.stdout or out.stderr).splitlines()
    return Compiler(path, lines[0].strip() if lines else "unknown")


def find_compiler() -> Compiler:
    """The compiler of :func:`compiler_path`; raises NativeBuildError when there is none."""
    path = compiler_path()
    if path is None:
        wanted = os.environ.get("CC") or "cc, gcc or clang"
        raise NativeBuildError(f"no C compiler ({wanted}) on PATH: set CC or install gcc")
    return _compiler(path)


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
    """A cached shared object of ``source``."""
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
def load_library(name: str, source: str, cdef: str, flags: tuple[str, ...] = SHARED_FLAGS,
                 libs: tuple[str, ...] = ("-lm",)) -> NativeLibrary:
    """Build (or take from the cache) and load ``source`` with cffi in ABI mode; ``cdef``
    declares what Python calls (cffi's C-declaration syntax). Loaded once per process and
    arguments. Raises NativeBuildError."""
    try:
        import cffi
    except ImportError:
        raise NativeBuildError("the cffi package is not installed (pip install cffi)") from None
    path = build_shared(name, source, flags, libs)
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    try:
        lib = ffi.dlopen(str(path))
    except OSError as error:
        raise NativeBuildError(f"native library {path}: cannot load it ({error})") from None
    return NativeLibrary(name, path, ffi, lib)


__all__ = ["CACHE_ENV", "EXECUTABLE_FLAGS", "SHARED_FLAGS", "Compiler", "NativeBuildError", "NativeLibrary",
           "build_executable", "build_shared", "cache_dir", "cache_key", "compile_cached", "compiler_path",
           "find_compiler", "load_library"]
