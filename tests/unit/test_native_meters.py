"""Meters, direct meters and their P4Runtime configuration on both executors.

The colours are worked out by hand from RFC 2698 (trTCM, BMv2's meter) for
``native_diff/meters.p4``: an indexed byte meter ``Ing.mb`` (colour into ``c1``) and a
packet direct meter on table ``Ing.t`` (colour into ``c2``). The meters run on an
injected clock, set through the same target calls the P4Runtime server makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.native_build import compiler_path
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.p4runtime.target_api import BoundAction, MeterRates, TernaryMatch

PROGRAM = Path(__file__).parent / "native_diff" / "meters.p4"
GREEN, YELLOW, RED = 0, 1, 2
PAD = bytes(80)  # 6 header bytes + 80: a packet of 86 bytes


@pytest.fixture(params=["python", "native"])
def target(request: pytest.FixtureRequest) -> tuple[object, object, list[float]]:
    if request.param == "native" and compiler_path() is None:
        pytest.skip("native executor needs a C compiler (cc/gcc)")
    loaded = InnetTarget(executor=request.param).load(None, PROGRAM.read_bytes())
    target = loaded.pipeline
    pl = target.pipeline  # type: ignore[attr-defined]
    assert type(pl).__name__ == ("NativePipeline" if request.param == "native" else "Pipeline")
    now = [5_000_000.0]  # us
    for m in list(pl.meters.values()) + [m for m, _ in pl.compiled.direct_meters.values()]:
        m.clock = lambda: now[0]
    return target, pl, now


def colours(pl: object, k: int, idx: int) -> tuple[int, int]:
    out = pl.process(0, bytes([k, idx, 0, 0, 0, 0]) + PAD)  # type: ignore[attr-defined]
    assert len(out) == 1
    return out[0][1][2], out[0][1][3]


def test_indexed_meter_marks_green_red_then_yellow(target: tuple[object, object, list[float]]) -> None:
    tgt, pl, now = target
    # cir 1000 B/s = 0.001 B/us, cburst 100; pir 2000 B/s, pburst 150
    tgt.meter_set("Ing.mb", 0, MeterRates(1000, 100, 2000, 150))  # type: ignore[attr-defined]
    assert colours(pl, 0x40, 0)[0] == GREEN  # tc 100, tp 150 -> 14, 64
    assert colours(pl, 0x40, 0)[0] == RED  # tp 64 < 86
    now[0] += 20_000  # tc 14 + 20 = 34, tp 64 + 40 = 104
    assert colours(pl, 0x40, 0)[0] == YELLOW  # tp 104 -> 18
    assert colours(pl, 0x40, 1)[0] == GREEN  # an unconfigured index
    cell = pl.meter("Ing.mb").cells[0]  # type: ignore[attr-defined]
    assert (cell.tc, cell.tp, cell.last_us) == (34.0, 18.0, 5_020_000.0)
    tgt.meter_set("Ing.mb", 0, None)  # type: ignore[attr-defined]
    assert colours(pl, 0x40, 0)[0] == GREEN


def test_direct_meter_entry_config(target: tuple[object, object, list[float]]) -> None:
    tgt, pl, now = target
    h = tgt.table_insert("Ing.t", (TernaryMatch(0x01, 0xFF),), 10,  # type: ignore[attr-defined]
                         BoundAction("Ing.colour", (1,)))
    # 1 packet/us committed with a burst of 1, peak burst 2: G, Y, R at one instant
    tgt.direct_meter_set("Ing.t", h, MeterRates(1000, 1, 1000, 2))  # type: ignore[attr-defined]
    assert [colours(pl, 0x01, 7)[1] for _ in range(3)] == [GREEN, YELLOW, RED]
    now[0] += 1000  # tc 0 + 1 = 1, tp 0 + 1 = 1
    assert colours(pl, 0x01, 7)[1] == GREEN
    with pl.lock:  # type: ignore[attr-defined]
        e = pl.tables["Ing.t"].list_entries()[0]  # type: ignore[attr-defined]
        assert (e.packets, e.meter.tc, e.meter.tp) == (4, 0.0, 0.0)
    tgt.direct_meter_set("Ing.t", h, None)  # type: ignore[attr-defined]
    assert colours(pl, 0x01, 7)[1] == GREEN


def test_target_reads_entry_state_the_datapath_wrote(target: tuple[object, object, list[float]]) -> None:
    """Direct counters and last-hit stamps read through the target (the P4Runtime server's
    calls) show the packets just processed, on both executors: on the native one they live
    in C until the control plane takes the pipeline lock."""
    tgt, pl, now = target
    h = tgt.table_insert("Ing.t", (TernaryMatch(0x01, 0xFF),), 10,  # type: ignore[attr-defined]
                         BoundAction("Ing.plain", (2,)))
    before = tgt.table_last_hits("Ing.t", [h])[0]  # type: ignore[attr-defined]
    for _ in range(3):
        colours(pl, 0x01, 7)
    assert tgt.direct_counter_read("Ing.t", h) == (3 * 86, 3)  # type: ignore[attr-defined]
    assert tgt.table_last_hits("Ing.t", [h])[0] >= before  # type: ignore[attr-defined]
    tgt.direct_counter_write("Ing.t", h, 0, 0)  # type: ignore[attr-defined]
    colours(pl, 0x01, 7)
    assert tgt.direct_counter_read("Ing.t", h) == (86, 1)  # type: ignore[attr-defined]
