"""Start-up cache (innet.switch.startcache): a program built before skips the front-end
and code generation; a changed include, define or innet version misses; entries are
written atomically and an unreadable one is recomputed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from innet.switch import device_config, startcache
from innet.switch.frontend import compile_source as real_compile_source

REPO = Path(__file__).resolve().parents[2]
PROGRAM = """
#include <core.p4>
#include <v1model.p4>
#include "sizes.p4"
header h_t { bit<32> a; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in p, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(CELLS) r;
    apply { r.write(0, hdr.h.a); sm.egress_spec = 1; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(startcache.CACHE_ENV, str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    (src / "prog.p4").write_text(PROGRAM)
    (src / "sizes.p4").write_text("#ifndef CELLS\n#define CELLS 16\n#endif\n")
    return src


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the programs the front-end really compiled (cache misses)."""
    seen: list[str] = []

    def counting(text: str, filename: str = "<string>", *a: object, **kw: object) -> object:
        seen.append(filename)
        return real_compile_source(text, filename, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr("innet.switch.frontend.compile_source", counting)
    return seen


def _cells(build: device_config.Build) -> int:
    (inst,) = [i for c in build.program.reachable_controls() for i in c.instances if i.name == "r"]
    return int(inst.ctor_args[0].value)  # type: ignore[attr-defined]


def test_a_second_build_is_a_hit(project: Path, compiles: list[str]) -> None:
    first = device_config.build(project / "prog.p4")
    second = device_config.build(project / "prog.p4")
    assert len(compiles) == 1
    assert second.config == first.config and second.p4info == first.p4info
    assert second.program.cache_key == first.program.cache_key != ""


def test_changed_include_or_define_misses(project: Path, compiles: list[str]) -> None:
    assert _cells(device_config.build(project / "prog.p4")) == 16
    (project / "sizes.p4").write_text("#ifndef CELLS\n#define CELLS 32\n#endif\n")
    assert _cells(device_config.build(project / "prog.p4")) == 32
    assert _cells(device_config.build(project / "prog.p4", defines={"CELLS": "64"})) == 64
    assert _cells(device_config.build(project / "prog.p4", defines={"CELLS": "64"})) == 64
    assert len(compiles) == 3


def test_another_innet_version_misses(project: Path, compiles: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    device_config.build(project / "prog.p4")
    monkeypatch.setattr(startcache, "code_version", lambda: "another innet")
    device_config.build(project / "prog.p4")
    assert len(compiles) == 2


def test_off_writes_nothing(project: Path, compiles: list[str], monkeypatch: pytest.MonkeyPatch,
                            tmp_path: Path) -> None:
    monkeypatch.setenv(startcache.CACHE_ENV, "off")
    device_config.build(project / "prog.p4")
    device_config.build(project / "prog.p4")
    assert len(compiles) == 2 and not (tmp_path / "cache").exists()


def test_unreadable_entry_is_recomputed(project: Path, compiles: list[str], tmp_path: Path) -> None:
    device_config.build(project / "prog.p4")
    (entry,) = (tmp_path / "cache").glob("frontend-*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])  # a torn file
    assert _cells(device_config.build(project / "prog.p4")) == 16
    assert len(compiles) == 2 and len(entry.read_bytes()) > 100


def test_concurrent_writers_never_expose_half_an_entry(project: Path) -> None:
    value = {"payload": bytes(range(256)) * 4096}
    errors: list[str] = []

    def writer() -> None:
        for _ in range(20):
            startcache.store("test", "k", value)

    def reader() -> None:
        for _ in range(200):
            got = startcache.load("test", "k")
            if got is not None and got != value:
                errors.append("partial entry")

    threads = [threading.Thread(target=writer) for _ in range(3)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and startcache.load("test", "k") == value
    assert not [p for p in (project.parent / "cache").iterdir() if p.name.startswith(".")]


def test_native_code_generation_is_cached(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from innet.native_build import compiler_path

    if compiler_path() is None:
        pytest.skip("native executor needs a C compiler (cc/gcc)")
    from innet.switch.native import cgen
    from innet.switch.native.pipeline import NativePipeline

    calls: list[str] = []
    real = cgen.generate
    monkeypatch.setattr(cgen, "generate", lambda p, *a: calls.append("gen") or real(p, *a))
    program = device_config.build(project / "prog.p4").program
    frame = bytes(range(4))
    outs = [NativePipeline(program, fuse=mode).process(0, frame) for mode in ("auto", "auto", "off")]
    assert outs[0] == outs[1] == outs[2] == [(1, frame)]
    assert calls == ["gen", "gen"]  # auto generated once, then taken from the cache; off is another key



def test_control_body_walks_come_with_the_cached_program(project: Path, compiles: list[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from innet.switch.pipeline import compiler

    first = device_config.build(project / "prog.p4").program
    walked: list[object] = []
    real = compiler.body_uses
    monkeypatch.setattr(compiler, "body_uses", lambda body: walked.append(body) or real(body))
    second = device_config.build(project / "prog.p4").program
    assert len(compiles) == 1 and second is not first
    bodies = [c.body for c in second.reachable_controls()]
    assert {id(b) for b in second.body_uses} == {id(b) for b in bodies}  # the loaded program's own nodes
    for body in bodies:
        fresh = real(body)
        assert len(second.body_uses[body]) == len(fresh) and all(a is b for a, b in zip(second.body_uses[body], fresh))
    assert any(second.body_uses[b] for b in bodies)  # the register write
    compiler.ProgramCompiler(second, packet_code=False).compile()
    assert walked == []  # loading it walks no body
    other = device_config.build(project / "prog.p4", defines={"CELLS": "64"}).program  # another key: compiled
    assert len(compiles) == 2 and all(c.body in other.body_uses for c in other.reachable_controls())


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_kept_objects_are_frozen_and_a_later_load_frees_their_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import weakref

    monkeypatch.setattr(startcache, "FREEZE_MIN_OBJECTS", 1000)
    gc.unfreeze()  # whatever an earlier test's load froze
    monkeypatch.setattr(startcache, "_frozen", False)
    try:
        with startcache.no_gc(keep=True):
            program = [_Cycle() for _ in range(2000)]
            assert not gc.isenabled()
        assert gc.isenabled() and gc.get_freeze_count() >= 2000  # no collection scans them again
        first = weakref.ref(program[0])
        del program
        assert first() is not None  # a replaced program's cycles wait for the next load...
        with startcache.no_gc(keep=True):
            small = [_Cycle() for _ in range(10)]
        assert first() is None  # ...which frees them
        assert gc.get_freeze_count() == 0 and small  # too few objects to freeze
        with pytest.raises(RuntimeError):
            with startcache.no_gc(keep=True):
                failed = [_Cycle() for _ in range(2000)]
                raise RuntimeError(str(len(failed)))
        assert gc.get_freeze_count() == 0 and gc.isenabled()  # a failed load keeps nothing
    finally:
        gc.unfreeze()
        monkeypatch.setattr(startcache, "_frozen", False)


def test_equal_frozen_values_are_stored_once(project: Path) -> None:
    from innet.switch.frontend import ir

    here, again, bit, flag = ir.Loc("a.p4", 7, 3), ir.Loc("a.p4", 7, 3), ir.BitT(8, True), ir.BitT(8, 1)  # type: ignore[arg-type]
    startcache.store("test", "values", [here, again, ir.Loc("a.p4", 7, 4), bit, flag, ir.BitT(8, True)])
    got = startcache.load("test", "values")
    assert got == [here, again, ir.Loc("a.p4", 7, 4), bit, flag, bit]
    assert got[0] is got[1] and got[2] is not got[0] and got[3] is got[5]
    assert got[4] is not got[3] and type(got[4].signed) is int  # True and 1 are equal, not the same value


def test_a_hit_gives_the_front_end_warnings_again(project: Path, compiles: list[str],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A user who compiles a program twice sees the same warnings, though the second build
    skips the front-end."""
    (project / "warns.p4").write_text(PROGRAM.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; m.w = 300;")
                                      .replace("struct meta_t { }", "struct meta_t { bit<8> w; }"))
    seen = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level("WARNING", logger=device_config.FRONTEND_LOGGER):
            build = device_config.build(project / "warns.p4")
        seen.append([r.getMessage() for r in caplog.records if r.name == device_config.FRONTEND_LOGGER])
    assert len(compiles) == 1
    assert seen[0] and all(": warning: " in m and "300" in m for m in seen[0]), seen[0]
    assert seen[1] == seen[0]
    assert build.program.warnings == tuple(seen[0])
