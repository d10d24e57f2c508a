"""The ``bmv2`` switch backend: p4lang's ``simple_switch_grpc`` with the same P4 and controller.

* tools: ``simple_switch_grpc`` and ``simple_switch_CLI`` in ``INNET_BMV2_BIN`` (the binary
  or its directory), on PATH, or in ``/opt/p4tools/bin`` (the README's "Real BMv2" section;
  ``INNET_P4_PREFIX`` names another prefix), ``p4c-bm2-ss`` likewise with ``INNET_P4C``; a
  missing one is one line saying which and how to get it (:class:`Bmv2Missing`);
* compile: ``p4c-bm2-ss --arch v1model --p4runtime-files DIR/p4info.txtpb -o DIR/NAME.json``
  (p4c's own core.p4/v1model.p4, never innet's copies), or a given directory with the JSON
  and P4Info (``PipelineConfig.from_dir``);
* start: ``simple_switch_grpc --device-id N -i PORT@IFACE... --thrift-port T --no-p4 --
  --grpc-server-addr A --cpu-port C`` (target options after ``--``, as BMv2 parses them);
* control: the same controller, with ``SwitchEndpoint(thrift_port=T, registers="thrift")``: BMv2's
  P4Runtime answers UNIMPLEMENTED to RegisterEntry, so registers go through Thrift only.

BMv2 has no UDP ports: the backend needs Linux interfaces (Mininet, root).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

SWITCH_IMPLS = ("innet", "bmv2")
BMV2_TOPOLOGIES = ("star", "rail-only", "rail-optimized", "geo")
"""The generated topologies whose P4 switches can all be simple_switch_grpc processes."""
GET_BMV2 = ("install BMv2 built with PI (p4lang's packages for Debian/Ubuntu, the p4lang/behavioral-model "
            "image, or github.com/p4lang/behavioral-model built --with-pi)")
GET_P4C = "install p4c (p4lang's packages, the p4lang/p4c image, or github.com/p4lang/p4c from source)"
BMV2_CPU_PORT = 510
"""``--cpu-port`` of testbed switches: P4Runtime packet I/O, as innet-switch's; innet.p4 sends nothing there."""

BMV2_HEADROOM = 512
"""Bytes simple_switch may add to a packet it received (``receive_`` gives the packet buffer
``len + 512``; beyond it the process aborts on an assertion in ``PacketBuffer::push``)."""
LUWU_K = 64
"""K of LuWu on BMv2: REDUCE answers the owner's header-only request with the sum, BCAST a
worker's with the values, so a frame grows by 4K bytes: 256 at K=64, 1024 at K=256."""


def check_growth(k: int) -> None:
    """Bmv2Error unless a header-only frame answered with ``k`` values fits BMv2's headroom."""
    if 4 * k > BMV2_HEADROOM:
        raise Bmv2Error(f"K={k} with REDUCE/BCAST on BMv2: a header-only request answered with {k} values "
                        f"grows by {4 * k} bytes, simple_switch adds at most {BMV2_HEADROOM} to a packet "
                        f"(use K={LUWU_K})")


def impl_list(text: str) -> tuple[str, ...]:
    """``--switch-impl`` of a benchmark: ``innet``, ``bmv2`` or both comma-separated (one
    measurement each, same run, rows labelled by it)."""
    import argparse

    impls = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [i for i in impls if i not in SWITCH_IMPLS]
    if bad or not impls or len(set(impls)) != len(impls) or len(impls) != len(text.split(",")):
        raise argparse.ArgumentTypeError(f"{text!r}: expected innet, bmv2 or innet,bmv2")
    return impls


class Bmv2Missing(RuntimeError):
    """A BMv2 or p4c binary is not there (names it, where it was looked for, how to get it)."""


class Bmv2Error(RuntimeError):
    """Compiling or starting BMv2 failed (names the command and its last output line)."""


@dataclass(frozen=True)
class Bmv2Tools:
    """Where the binaries are."""

    switch: Path
    """``simple_switch_grpc``."""
    cli: Path | None
    """``simple_switch_CLI`` (registers over Thrift); None when absent."""
    p4c: Path | None
    """``p4c-bm2-ss``; None when absent (then the program must be precompiled)."""


Which = Callable[[str], str | None]
DEFAULT_PREFIX = Path("/opt/p4tools")
"""Where a toolchain built by hand for innet lives (``bin/`` below it), searched after PATH."""


def _executable(candidate: Path) -> bool:
    return candidate.is_file() and os.access(candidate, os.X_OK)


def _lookup(name: str, env_dir: str | None, which: Which, prefixes: Sequence[Path] = ()) -> Path | None:
    if env_dir:
        p = Path(env_dir)
        candidate = p / name if p.is_dir() else p.with_name(name)
        if _executable(candidate):
            return candidate
    found = which(name)
    if found:
        return Path(found)
    return next((prefix / "bin" / name for prefix in prefixes if _executable(prefix / "bin" / name)), None)


def _in(prefixes: Sequence[Path]) -> str:
    return "".join(f" or in {prefix / 'bin'}" for prefix in prefixes)


def default_prefixes(env: Mapping[str, str]) -> tuple[Path, ...]:
    """``INNET_P4_PREFIX`` if set, else ``/opt/p4tools``."""
    return (Path(env["INNET_P4_PREFIX"]),) if env.get("INNET_P4_PREFIX") else (DEFAULT_PREFIX,)


def find_tools(env: Mapping[str, str] | None = None, which: Which = shutil.which, need_p4c: bool = True,
               need_cli: bool = False, prefixes: Sequence[Path] | None = None) -> Bmv2Tools:
    """The binaries, or Bmv2Missing naming the first one that is missing (``need_cli``: a testbed,
    whose controller reads and writes registers through simple_switch_CLI). ``prefixes``:
    searched after PATH (None: :func:`default_prefixes`)."""
    env = os.environ if env is None else env
    prefixes = default_prefixes(env) if prefixes is None else tuple(prefixes)
    bmv2_dir = env.get("INNET_BMV2_BIN")
    switch: Path | None = None
    if bmv2_dir and Path(bmv2_dir).is_file():
        switch = Path(bmv2_dir)
    switch = switch or _lookup("simple_switch_grpc", bmv2_dir, which, prefixes)
    if switch is None:
        where = (f"INNET_BMV2_BIN={bmv2_dir}" if bmv2_dir else "PATH (or INNET_BMV2_BIN)") + _in(prefixes)
        raise Bmv2Missing(f"bmv2 backend: simple_switch_grpc not found on {where}: {GET_BMV2}")
    cli = _lookup("simple_switch_CLI", str(switch.parent), which, prefixes)
    if cli is None and need_cli:
        raise Bmv2Missing(f"bmv2 backend: simple_switch_CLI not found beside {switch} or on PATH, needed for "
                          f"registers (Thrift): {GET_BMV2}")
    p4c_env = env.get("INNET_P4C")
    p4c = Path(p4c_env) if p4c_env and Path(p4c_env).is_file() else _lookup("p4c-bm2-ss", None, which, prefixes)
    if p4c_env and not Path(p4c_env).is_file():
        raise Bmv2Missing(f"bmv2 backend: INNET_P4C={p4c_env}: no such file: {GET_P4C}")
    if p4c is None and need_p4c:
        raise Bmv2Missing(f"bmv2 backend: p4c-bm2-ss not found on PATH (or INNET_P4C){_in(prefixes)}, needed to compile for "
                          f"BMv2 (or give a compiled directory with the JSON and p4info.txtpb): {GET_P4C}")
    return Bmv2Tools(switch, cli, Path(p4c) if p4c else None)


def compile_command(p4c: Path, source: Path, out_dir: Path, defines: Mapping[str, str | None] = {}) -> list[str]:
    """p4c-bm2-ss for v1model with P4Info in text format beside the JSON."""
    cmd = [str(p4c), "--arch", "v1model", "--std", "p4-16"]
    for name, value in sorted(defines.items()):
        cmd += ["-D", name if value is None else f"{name}={value}"]
    cmd += ["-o", str(out_dir / f"{source.stem}.json"), "--p4runtime-files", str(out_dir / "p4info.txtpb"),
            str(source)]
    return cmd


_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def _sources(source: Path, seen: set[Path] | None = None) -> list[Path]:
    """``source`` and every file it includes with quotes, recursively (``<...>`` ones are p4c's)."""
    seen = set() if seen is None else seen
    source = source.resolve()
    if source in seen or not source.is_file():
        return []
    seen.add(source)
    found = [source]
    for name in _INCLUDE.findall(source.read_text(errors="replace")):
        found += _sources(source.parent / name, seen)
    return found


def compile_key(p4c: Path, source: Path, defines: Mapping[str, str | None]) -> str:
    """Names one compilation: the compiler (path, size, mtime: its own core.p4/v1model.p4 come
    with it), the command line and the text of the program and of every file it includes."""
    h = hashlib.sha256()
    st = p4c.stat()
    h.update(f"{p4c.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    h.update("\0".join(compile_command(p4c, Path(source.name), Path("out"), defines)).encode())
    for path in _sources(source):
        h.update(b"\0\1" + path.read_bytes())
    return h.hexdigest()[:20]


def compile_cache() -> Path:
    """Where compiled programs are kept: beside innet's native builds (``INNET_NATIVE_CACHE``...)."""
    from innet.native_build import cache_dir

    return cache_dir() / "p4c-bm2-ss"


def compile_program(p4c: Path, source: Path, out_dir: Path, defines: Mapping[str, str | None] = {},
                    timeout: float = 600.0, cache: bool = True) -> Path:
    """Compile ``source`` into ``out_dir`` (returned; ``PipelineConfig.from_dir`` reads it).

    p4c-bm2-ss takes one to two minutes for innet.p4 at K=256 on a loaded 2-core machine, once
    per testbed; with ``cache`` the output of the same compiler, command and sources is copied
    from :func:`compile_cache` instead (``cache=False``: always run p4c, e.g. to test it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    names = (f"{source.stem}.json", "p4info.txtpb")
    cached = compile_cache() / compile_key(p4c, source, defines) if cache else None
    if cached is not None and all((cached / n).is_file() for n in names):
        for n in names:
            shutil.copyfile(cached / n, out_dir / n)
        return out_dir
    cmd = compile_command(p4c, source, out_dir, defines)
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Bmv2Error(f"{p4c.name} {source.name}: did not finish within {timeout:g} s") from None
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise Bmv2Error(f"{p4c.name} {source.name} failed (status {result.returncode}): "
                        f"{lines[0] if lines else 'no output'}")
    if cached is not None:
        _store(out_dir, names, cached)
    return out_dir


def _store(out_dir: Path, names: Sequence[str], cached: Path) -> None:
    """Copy a compilation into the cache: a whole directory renamed into place, so a reader
    never sees half of one (a cache that cannot be written is only slower)."""
    import tempfile

    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=cached.parent, prefix=".tmp-"))
        for n in names:
            shutil.copyfile(out_dir / n, tmp / n)
        try:
            tmp.rename(cached)
        except OSError:  # another run stored it first
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        pass


@dataclass(frozen=True)
class Bmv2SwitchConfig:
    """One simple_switch_grpc process."""

    ports: tuple[tuple[int, str], ...]
    """(switch port, interface) pairs: ``-i PORT@IFACE``."""
    device_id: int = 1
    grpc_address: str = "127.0.0.1:9559"
    thrift_port: int = 9090
    cpu_port: int | None = None
    """``--cpu-port`` (PacketIn/Out); None: no CPU port."""
    json: Path | None = None
    """BMv2 JSON to load at start; None: ``--no-p4`` (the controller pushes it)."""
    log_console: bool = False
    """``--log-console`` (per-packet logs; slow)."""


def switch_command(switch: Path, config: Bmv2SwitchConfig) -> list[str]:
    """The simple_switch_grpc argv: general options, then ``--`` and the target's options."""
    cmd = [str(switch), "--device-id", str(config.device_id)]
    for port, iface in config.ports:
        cmd += ["-i", f"{port}@{iface}"]
    cmd += ["--thrift-port", str(config.thrift_port)]
    if config.log_console:
        cmd += ["--log-console"]
    cmd += [str(config.json)] if config.json is not None else ["--no-p4"]
    cmd += ["--", "--grpc-server-addr", config.grpc_address]
    if config.cpu_port is not None:
        cmd += ["--cpu-port", str(config.cpu_port)]
    return cmd


def cli_path(env: Mapping[str, str] | None = None, which: Which = shutil.which) -> str:
    """``simple_switch_CLI`` where :func:`find_tools` looks for it (``INNET_BMV2_BIN``, PATH,
    the toolchain prefix), else the bare name (the register fallback then says it is missing)."""
    env = os.environ if env is None else env
    found = _lookup("simple_switch_CLI", env.get("INNET_BMV2_BIN"), which, default_prefixes(env))
    return str(found) if found else "simple_switch_CLI"


def controller_spec(name: str, config: Bmv2SwitchConfig, timeout: float = 30.0,
                    cli: str | None = None):  # type: ignore[no-untyped-def]
    """The controller's SwitchEndpoint of a BMv2 switch: registers through Thrift only, with
    ``cli`` (default: :func:`cli_path`)."""
    from innet.controller.switch import SwitchEndpoint

    return SwitchEndpoint(name, config.grpc_address, config.device_id, thrift_port=config.thrift_port,
                          registers="thrift", timeout=timeout, thrift_cli=cli or cli_path(), switch_impl="bmv2")


def pipeline(program: Path, tools: Bmv2Tools, work_dir: Path, defines: Mapping[str, str | None] = {}):  # type: ignore[no-untyped-def]
    """The PipelineConfig for BMv2: a compiled directory as is, or a ``.p4`` compiled by p4c-bm2-ss."""
    from innet.controller.errors import PipelineConfigError
    from innet.controller.pipeline import PipelineConfig

    if program.is_dir():
        return PipelineConfig.from_dir(program, "bmv2")
    if program.suffix != ".p4":
        raise PipelineConfigError(f"pipeline {str(program)!r}: give a .p4 file or a p4c-bm2-ss output directory "
                            "(BMv2 JSON + p4info.txtpb)")
    if tools.p4c is None:
        raise Bmv2Missing(f"bmv2 backend: p4c-bm2-ss not found on PATH (or INNET_P4C): {GET_P4C}")
    return PipelineConfig.from_dir(compile_program(tools.p4c, program, work_dir, defines), "bmv2")


def wait_grpc(address: str, deadline: float, alive: Callable[[], bool] = lambda: True) -> None:
    """Poll until a gRPC server accepts connections at ``address`` (Bmv2Error at the deadline)."""
    import time

    import grpc

    end = time.monotonic() + deadline
    while True:
        channel = grpc.insecure_channel(address)
        try:
            grpc.channel_ready_future(channel).result(timeout=0.5)
            return
        except grpc.FutureTimeoutError:
            pass
        finally:
            channel.close()
        if not alive():
            raise Bmv2Error(f"simple_switch_grpc exited before serving P4Runtime on {address}")
        if time.monotonic() > end:
            raise Bmv2Error(f"simple_switch_grpc: no P4Runtime server on {address} within {deadline:g} s")


def check_impl(impl: str, root: bool, backend: str = "auto", topo: str = "star", mode: str = "switch") -> Bmv2Tools | None:
    """For ``--switch-impl``: None for innet; the tools for bmv2 (Bmv2Missing / Bmv2Error otherwise).

    The bmv2 backend runs one ``simple_switch_grpc`` per P4 switch (the star's, every rail switch
    and the spine, every geo site's) in Mininet: BMv2 has no UDP ports (so no loopback testbed).
    Both training modes run on the star: the switch as optimizer, and LuWu (optimizer nodes as
    hosts of the star, REDUCE/BCAST through ``innet_owners``)."""
    if impl not in SWITCH_IMPLS:
        raise Bmv2Error(f"--switch-impl {impl!r}: expected one of {', '.join(SWITCH_IMPLS)}")
    if impl == "innet":
        return None
    if backend == "loopback":
        raise Bmv2Error("--switch-impl bmv2 on the loopback testbed: BMv2 has no UDP ports, so it needs Linux "
                        "interfaces: use Mininet (as root)")
    if topo not in BMV2_TOPOLOGIES:
        raise Bmv2Error(f"--switch-impl bmv2 --topo {topo}: the bmv2 backend brings up "
                        f"{', '.join(BMV2_TOPOLOGIES)}")
    if mode not in ("switch", "luwu"):
        raise Bmv2Error(f"--switch-impl bmv2 --mode {mode}: expected switch or luwu")
    tools = find_tools(need_cli=True)
    if not root:
        raise Bmv2Error("--switch-impl bmv2: BMv2 has no UDP ports, so it needs Linux interfaces: run as root "
                        "(Mininet), not on loopback")
    return tools


