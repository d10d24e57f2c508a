"""The idle-timeout sweep (innet.switch.p4runtime.ageing) on a Device over innet's executor
with an injected clock: who is reported when, the timer restart after a report, hits,
TTL 0, MODIFY and DELETE; ``time_since_last_hit`` reads and the spec's INVALID_ARGUMENTs."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r

from innet.switch.p4runtime.ageing import AgeingSweeper
from innet.switch.p4runtime.device import Device
from innet.switch.p4runtime.errors import P4RuntimeError
from innet.switch.p4runtime.embedded_target import InnetTarget

REPO = Path(__file__).resolve().parents[2]
PROGRAM = (REPO / "tests" / "data" / "idle_timeout.p4").read_bytes()
INSERT, MODIFY, DELETE = p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE
MS = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 10 * MS

    def __call__(self) -> int:
        return self.now


class Setup:
    def __init__(self, executor: str = "python") -> None:
        self.clock = Clock()
        self.device = Device(1, InnetTarget(clock=self.clock, executor=executor))
        self.device.load(PROGRAM)
        self.sent: list[p4r.StreamMessageResponse] = []
        self.device.controller_sink = self.sent.append
        info = self.device.schema()
        self.ids = {t.name: t.id for t in info.tables.values()}
        self.ids.update({a.preamble.name: a.preamble.id for a in info.actions.values()})

    def entry(self, dst: int, ttl_ns: int = 0, table: str = "Ing.flows") -> p4r.TableEntry:
        e = p4r.TableEntry(table_id=self.ids[table], idle_timeout_ns=ttl_ns, metadata=b"m%d" % dst)
        e.match.add(field_id=1).exact.value = bytes([dst])
        action = "Ing.fwd" if table == "Ing.flows" else "Ing.tag"
        e.action.action.action_id = self.ids[action]
        e.action.action.params.add(param_id=1, value=b"\x02")
        return e

    def write(self, kind: int, entry: p4r.TableEntry) -> None:
        (result,) = self.device.write([p4r.Update(type=kind, entity=p4r.Entity(table_entry=entry))])
        if result is not None:
            raise result

    def sweep(self) -> list[set[int]]:
        """Entries (dst) of each notification of one sweep."""
        self.sent.clear()
        self.device.sweep_idle_timeouts()
        out = []
        for message in self.sent:
            assert message.WhichOneof("update") == "idle_timeout_notification"
            note = message.idle_timeout_notification
            assert note.timestamp > 1_600_000_000 * 10**9  # ns since the Epoch
            out.append({int.from_bytes(e.match[0].exact.value, "big") for e in note.table_entry})
        return out

    def hit(self, dst: int) -> None:
        frame = dst.to_bytes(6, "big") + (0xEE).to_bytes(6, "big") + b"\x08\x00data"
        assert self.device.process(1, frame) != []

    def elapsed(self, dst: int) -> int:
        request = self.entry(dst)
        request.ClearField("action")
        request.time_since_last_hit.SetInParent()
        (found,) = self.device.read([p4r.Entity(table_entry=request)])
        assert found.table_entry.HasField("time_since_last_hit")
        return int(found.table_entry.time_since_last_hit.elapsed_ns)


@pytest.fixture(params=["python", "native"])
def s(request: pytest.FixtureRequest) -> Setup:
    """Both executors: the native one stamps hits in C with the injected clock."""
    return Setup(request.param)


def test_idle_entry_reported_after_its_ttl_then_every_further_ttl(s: Setup) -> None:
    s.write(INSERT, s.entry(1, 200 * MS))
    s.write(INSERT, s.entry(2, 0))  # TTL 0: never reported
    s.clock.now += 199 * MS
    assert s.sweep() == []
    s.clock.now += 1 * MS
    assert s.sweep() == [{1}]
    assert s.sweep() == []  # reported once per expiry...
    s.clock.now += 199 * MS
    assert s.sweep() == []
    s.clock.now += 1 * MS
    assert s.sweep() == [{1}]  # ...and again after another TTL without a hit (spec: "reset")
    assert s.elapsed(1) == 400 * MS  # reads keep the real time since the last hit
    assert len(s.device.read([p4r.Entity(table_entry=p4r.TableEntry(table_id=s.ids["Ing.flows"]))])) == 2


def test_notification_names_key_metadata_and_ttl(s: Setup) -> None:
    s.write(INSERT, s.entry(7, 50 * MS))
    s.clock.now += 50 * MS
    s.device.sweep_idle_timeouts()
    (message,) = s.sent
    (entry,) = message.idle_timeout_notification.table_entry
    assert entry.table_id == s.ids["Ing.flows"] and entry.match[0].exact.value == b"\x07"
    assert entry.metadata == b"m7" and entry.idle_timeout_ns == 50 * MS


def test_hits_keep_an_entry_alive(s: Setup) -> None:
    s.write(INSERT, s.entry(1, 100 * MS))
    s.write(INSERT, s.entry(3, 100 * MS))
    for _ in range(5):
        s.clock.now += 60 * MS
        s.hit(1)
        assert s.sweep() in ([], [{3}])
    assert s.elapsed(1) == 0
    s.clock.now += 100 * MS
    assert s.sweep() == [{1, 3}]  # one message per table
    s.hit(1)  # hit after the report: the timer counts from this hit
    s.clock.now += 99 * MS
    assert s.sweep() == []
    s.clock.now += 1 * MS
    assert s.sweep() == [{1, 3}]


def test_modify_restarts_with_the_new_ttl_and_delete_forgets(s: Setup) -> None:
    s.write(INSERT, s.entry(1, 100 * MS))
    s.clock.now += 100 * MS
    assert s.sweep() == [{1}]
    s.write(MODIFY, s.entry(1, 300 * MS))
    s.clock.now += 150 * MS  # 250 ms idle < 300 ms
    assert s.sweep() == []
    s.clock.now += 50 * MS
    assert s.sweep() == [{1}]
    s.write(MODIFY, s.entry(1, 0))
    s.clock.now += 10_000 * MS
    assert s.sweep() == []
    s.write(MODIFY, s.entry(1, 100 * MS))
    s.write(DELETE, s.entry(1))
    assert s.sweep() == []


def test_time_since_last_hit_reads(s: Setup) -> None:
    s.write(INSERT, s.entry(1))  # TTL 0: elapsed is still reported (spec)
    s.clock.now += 30 * MS
    assert s.elapsed(1) == 30 * MS
    s.hit(1)
    s.clock.now += 5 * MS
    assert s.elapsed(1) == 5 * MS
    plain = p4r.TableEntry(table_id=s.ids["Ing.flows"])
    (found,) = s.device.read([p4r.Entity(table_entry=plain)])
    assert not found.table_entry.HasField("time_since_last_hit")  # only when asked for


def test_tables_without_idle_timeout_refuse_it(s: Setup) -> None:
    with pytest.raises(P4RuntimeError, match=r"table 'Ing.plain' does not support idle timeout "
                                             r"\(idle_timeout_ns 5\)") as error:
        s.write(INSERT, s.entry(8, 5, table="Ing.plain"))
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    s.write(INSERT, s.entry(8, 0, table="Ing.plain"))
    with pytest.raises(P4RuntimeError, match="does not support idle timeout") as error:
        s.write(MODIFY, s.entry(8, 5, table="Ing.plain"))
    request = p4r.TableEntry(table_id=s.ids["Ing.plain"])
    request.time_since_last_hit.SetInParent()
    with pytest.raises(P4RuntimeError, match="time_since_last_hit cannot be read"):
        s.device.read([p4r.Entity(table_entry=request)])
    written = s.entry(9, 100 * MS)
    written.time_since_last_hit.elapsed_ns = 1
    with pytest.raises(P4RuntimeError, match="time_since_last_hit is read-only"):
        s.write(INSERT, written)
    default = p4r.TableEntry(table_id=s.ids["Ing.flows"], is_default_action=True, idle_timeout_ns=5)
    with pytest.raises(P4RuntimeError, match="a default entry has no idle timeout"):
        s.write(MODIFY, default)


def test_sweeper_thread_sweeps_and_stops() -> None:
    swept = threading.Event()
    with AgeingSweeper(swept.set, interval=0.01) as sweeper:
        assert swept.wait(5)
    assert sweeper._thread is None
    with pytest.raises(ValueError, match="ageing sweep interval must be > 0 seconds, got 0"):
        AgeingSweeper(swept.set, interval=0)
