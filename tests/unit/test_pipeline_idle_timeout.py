"""Hit times of entries of ``support_timeout`` tables (innet.switch.pipeline, with an
injected clock): stamped at insertion and by each hitting packet, one clock read per pass,
nothing for tables without idle timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.pipeline import ControlPlaneError, KeySpec, Pipeline

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "tests" / "data" / "idle_timeout.p4"


class Clock:
    """A settable clock that counts its reads."""

    def __init__(self, now: int = 1_000) -> None:
        self.now = now
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.now


def frame(dst: int, src: int, ethertype: int = 0x0800) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ethertype.to_bytes(2, "big") + b"payload"


@pytest.fixture
def setup() -> tuple[Pipeline, Clock]:
    clock = Clock()
    return Pipeline.from_file(PROGRAM, include_dirs=[REPO / "p4" / "include"], clock=clock), clock


def test_insertion_and_hits_stamp_the_entry(setup: tuple[Pipeline, Clock]) -> None:
    pipeline, clock = setup
    flows = pipeline.table("flows")
    entry = flows.insert([KeySpec(0xA)], "fwd", [2])
    assert entry.last_hit == 1_000  # ageing starts at the insertion (BMv2)
    clock.now = 5_000
    assert flows.idle_ns(entry) == 4_000
    assert pipeline.process(1, frame(0xA, 0x1)) != []
    assert entry.last_hit == 5_000 and flows.idle_ns(entry) == 0
    clock.now = 9_000
    pipeline.process(1, frame(0xA, 0x1))  # the cached lookup result stamps too
    assert entry.last_hit == 9_000
    clock.now = 12_000
    assert pipeline.process(1, frame(0xB, 0x1)) == []  # a miss (default drop) stamps nothing
    assert entry.last_hit == 9_000 and flows.idle_ns(entry, now=20_000) == 11_000


def test_one_clock_read_per_packet(setup: tuple[Pipeline, Clock]) -> None:
    pipeline, clock = setup
    flow = pipeline.table("flows").insert([KeySpec(0xA)], "fwd", [2])
    seen = pipeline.table("seen").insert([KeySpec(0x1)], "tag", [0x88B5])
    clock.reads, clock.now = 0, 7_000
    pipeline.process(1, frame(0xA, 0x1))  # hits both ageing tables
    assert clock.reads == 1 and flow.last_hit == seen.last_hit == 7_000
    clock.now = 8_000
    pipeline.process(1, frame(0xB, 0x2))  # hits neither: no clock read at all
    assert clock.reads == 1


def test_tables_without_timeout_do_not_age(setup: tuple[Pipeline, Clock]) -> None:
    pipeline, clock = setup
    plain = pipeline.table("plain")
    entry = plain.insert([KeySpec(0x0800)], "tag", [1])
    clock.reads = 0
    pipeline.process(1, frame(0xB, 0x2, 0x0800))
    assert entry.last_hit == 0 and clock.reads == 0
    with pytest.raises(ControlPlaneError, match=r"table 'Ing.plain' does not support idle timeout"):
        plain.idle_ns(entry)
    assert plain.clock is None and pipeline.table("flows").clock is clock


def test_programs_without_ageing_tables_generate_no_stamps() -> None:
    pipeline = Pipeline.from_file(REPO / "p4" / "examples" / "basic_forward.p4",
                                  include_dirs=[REPO / "p4" / "include"])
    assert "last_hit" not in pipeline.source and "_stamp" not in pipeline.source
    with_ageing = Pipeline.from_file(PROGRAM, include_dirs=[REPO / "p4" / "include"])
    assert with_ageing.source.count(".last_hit = ") == 2  # flows and seen, not plain
