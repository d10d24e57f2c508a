"""Fused register layout (innet.switch.native.fuse): which register arrays the analysis
puts together, that the target's register API and the data path agree on every layout,
and that the per-element loops of p4/innet come out vectorised."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from innet.native_build import compiler_path, find_compiler
from innet.switch.frontend import compile_file, compile_source
from innet.switch.native import cgen
from innet.switch.native.fuse import FUSE_ENV, FuseModeError, fuse_mode, register_groups

REPO = Path(__file__).resolve().parents[2]
needs_cc = pytest.mark.skipif(compiler_path() is None, reason="native executor needs a C compiler (cc/gcc)")

TWO_INDEXES = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> a; bit<32> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in p, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(16) x;
    register<bit<32>>(16) y;
    register<bit<32>>(16) z;
    register<bit<16>>(16) w;
    apply {
        bit<32> v;
        x.read(v, hdr.h.a); hdr.h.b = v;
        y.read(v, hdr.h.a); hdr.h.b = hdr.h.b + v;
        z.read(v, hdr.h.b); z.write(hdr.h.b, v + 1);
        w.write(hdr.h.a, 1);
        sm.egress_spec = 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out p, in headers hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_groups_are_found_from_accesses_not_names() -> None:
    program = compile_file(str(REPO / "p4" / "innet.p4"), defines={"INNET_K": "4"})
    groups = register_groups(program, "auto")
    for kind in ("acc", "param", "mom"):
        assert groups[f"MyIngress.innet_{kind}_0"] == tuple(f"MyIngress.innet_{kind}_{i}" for i in range(4))
    for alone in ("innet_bitmap", "innet_count", "innet_epoch"):
        assert f"MyIngress.{alone}" not in groups
    assert register_groups(program, "off") == {}


def test_arrays_read_at_different_indexes_stay_apart_unless_forced() -> None:
    program = compile_source(TWO_INDEXES)
    assert register_groups(program, "auto") == {"I.x": ("I.x", "I.y"), "I.y": ("I.x", "I.y")}
    forced = register_groups(program, "all")
    assert forced["I.x"] == forced["I.y"] == forced["I.z"] == ("I.x", "I.y", "I.z")
    assert "I.w" not in forced  # bit<16>: another element type


def test_mode_comes_from_the_argument_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FUSE_ENV, raising=False)
    assert fuse_mode() == "auto" and fuse_mode("off") == "off"
    monkeypatch.setenv(FUSE_ENV, "all")
    assert fuse_mode() == "all"
    monkeypatch.setenv(FUSE_ENV, "yes")
    with pytest.raises(FuseModeError, match=r"\$INNET_NATIVE_FUSE='yes': expected one of auto, all, off"):
        fuse_mode()


@needs_cc
@pytest.mark.parametrize("mode", ["auto", "all", "off"])
def test_register_api_and_data_path_agree(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target's register API (what P4Runtime register reads and writes call) on agg64:
    a cell written over the API is what the packet adds to, and the packet's sums are what
    the API reads back, in every column of the fused block."""
    from innet.switch.p4runtime.embedded_target import InnetTarget
    from innet.switch.stf import read_stf

    monkeypatch.setenv(FUSE_ENV, mode)
    loaded = InnetTarget(executor="native").load(None, (REPO / "p4" / "examples" / "agg64.p4").read_bytes())
    target = loaded.pipeline
    assert target.pipeline.executor == "native"
    frame = next(d for _, _, d in read_stf(REPO / "p4" / "examples" / "agg64.stf").packets if len(d) > 300)
    slot = int.from_bytes(frame[42:46], "big")
    for i in range(64):
        target.register_write(f"MyIngress.r{i:02d}", slot, 1000 * i)
    target.register_write("MyIngress.r07", slot + 1, 5)  # a neighbour row stays untouched
    (_, out), = target.process(1, frame)
    for i in range(64):
        sent = int.from_bytes(frame[46 + 4 * i:50 + 4 * i], "big")
        got = int.from_bytes(out[46 + 4 * i:50 + 4 * i], "big")
        assert got == sent + 1000 * i
        assert target.register_read(f"MyIngress.r{i:02d}", slot) == got
    assert target.register_read("MyIngress.r07", slot + 1) == 5


@needs_cc
@pytest.mark.parametrize("mode", ["auto", "all", "off"])
def test_register_ranges_read_and_write_one_column(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """P4Runtime register ranges (``register_read_range``/``register_write_range``) on a
    fused column touch that column only: the neighbouring registers of the block keep
    their cells, and single-cell reads see what the range wrote (agg64, 64 columns)."""
    from innet.switch.p4runtime.embedded_target import InnetTarget

    monkeypatch.setenv(FUSE_ENV, mode)
    loaded = InnetTarget(executor="native").load(None, (REPO / "p4" / "examples" / "agg64.p4").read_bytes())
    target = loaded.pipeline
    size = target.pipeline.register("MyIngress.r07").size
    for name in ("MyIngress.r06", "MyIngress.r08"):
        target.register_write_range(name, 0, [7] * size)
    values = [(i * 2654435761) & 0xFFFFFFFF for i in range(size - 3)]
    target.register_write_range("MyIngress.r07", 2, [v - (1 << 32) if v >> 31 else v for v in values])
    assert target.register_read_range("MyIngress.r07", 2, len(values)) == values
    assert target.register_read_range("MyIngress.r07", 0, 2) == [0, 0]
    assert [target.register_read("MyIngress.r07", 2 + i) for i in (0, 1, len(values) - 1)] == \
        [values[0], values[1], values[-1]]
    for name in ("MyIngress.r06", "MyIngress.r08"):
        assert target.register_read_range(name, 0, size) == [7] * size
    assert target.register_read_range("MyIngress.r07", 5, 0) == []


@needs_cc
def test_innet_element_loops_are_vectorised(tmp_path: Path) -> None:
    """gcc reports the per-element loops of innet.p4 (K=64: load result, add partial, store,
    sgd and momentum steps) as vectorised with the switch's build flags."""
    from innet.switch.native.pipeline import build_flags

    compiler = find_compiler()
    if "clang" in compiler.version.lower():
        pytest.skip(f"vectorisation report needs gcc (-fopt-info-vec), found {compiler.version}")
    program = compile_file(str(REPO / "p4" / "innet.p4"), defines={"INNET_K": "64"})
    source, meta = cgen.generate(program, "auto")
    assert sorted(stride for _, stride in meta.blocks if stride > 1) == [64, 64, 64]
    src = tmp_path / "innet64.c"
    src.write_text(source)
    flags, _ = build_flags()
    done = subprocess.run([compiler.path, *[f for f in flags if f not in ("-shared",)], "-c", "-o",
                           str(tmp_path / "innet64.o"), str(src), "-fopt-info-vec-optimized"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = {int(m.split(":")[1]) for m in done.stderr.splitlines() if "loop vectorized" in m}
    text = source.splitlines()
    loops = [i + 1 for i, ln in enumerate(text) if "for (int _r" in ln and "< 64;" in ln
             and any("sw_blk_" in x for x in text[i - 6:i])]
    assert len(loops) >= 5, loops
    assert all(n in lines for n in loops), f"not vectorised: {sorted(set(loops) - lines)} (vectorised: {sorted(lines)})"
