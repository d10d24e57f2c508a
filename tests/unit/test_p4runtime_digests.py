"""DigestLists: batching by size and timeout, duplicate suppression until ack or expiry."""

from finsy.proto import p4d, p4r

from innet.switch.p4runtime.digests import DigestLists

D = 7
MS = 1_000_000


def cfg(timeout_ms: int = 0, size: int = 0, ack_ms: int = 0) -> p4r.DigestEntry.Config:
    return p4r.DigestEntry.Config(max_timeout_ns=timeout_ms * MS, max_list_size=size, ack_timeout_ns=ack_ms * MS)


def data(n: int) -> p4d.P4Data:
    return p4d.P4Data(bitstring=n.to_bytes(2, "big"))


def values(dl: p4r.DigestList) -> list[int]:
    return [int.from_bytes(d.bitstring, "big") for d in dl.data]


def test_zero_timeout_sends_each_digest_at_once_with_increasing_list_ids():
    lists = DigestLists()
    (a,) = lists.add(D, cfg(), data(1), 0)
    (b,) = lists.add(D, cfg(), data(2), 0)
    assert (a.digest_id, values(a), values(b)) == (D, [1], [2])
    assert b.list_id == a.list_id + 1 and a.timestamp > 0
    assert lists.next_deadline_ns({D: cfg()}) is None


def test_list_closes_when_max_list_size_is_reached():
    lists, c = DigestLists(), cfg(timeout_ms=1000, size=3)
    assert lists.add(D, c, data(1), 0) == [] and lists.add(D, c, data(2), 1) == []
    (full,) = lists.add(D, c, data(3), 2)
    assert values(full) == [1, 2, 3]


def test_list_closes_when_the_oldest_digest_waited_max_timeout():
    lists, c = DigestLists(), cfg(timeout_ms=10)
    lists.add(D, c, data(1), 5 * MS)
    lists.add(D, c, data(2), 9 * MS)
    assert lists.next_deadline_ns({D: c}) == 15 * MS
    assert lists.due({D: c}, 14 * MS) == []
    (dl,) = lists.due({D: c}, 15 * MS)
    assert values(dl) == [1, 2]
    assert lists.due({D: c}, 100 * MS) == [] and lists.next_deadline_ns({D: c}) is None


def test_duplicates_are_suppressed_until_ack_or_ack_timeout():
    lists, c = DigestLists(), cfg(size=2, timeout_ms=1000, ack_ms=50)
    lists.add(D, c, data(1), 0)
    assert lists.add(D, c, data(1), 0) == []  # same data in the open list
    (first,) = lists.add(D, c, data(2), 0)
    assert lists.suppressed == 1
    assert lists.add(D, c, data(1), 10 * MS) == [] and lists.add(D, c, data(2), 10 * MS) == []
    assert lists.suppressed == 3
    assert lists.ack(D, first.list_id) and not lists.ack(D, first.list_id)
    lists.add(D, c, data(1), 11 * MS)  # acked: reported again
    (second,) = lists.add(D, c, data(2), 11 * MS)
    assert values(second) == [1, 2]
    lists.add(D, c, data(1), 61 * MS)  # not acked, but the ack timeout expired
    assert lists.suppressed == 3


def test_zero_ack_timeout_remembers_nothing_and_forget_drops_open_lists():
    lists, c = DigestLists(), cfg()
    lists.add(D, c, data(1), 0)
    assert len(lists.add(D, c, data(1), 0)) == 1
    batching = cfg(timeout_ms=10)
    lists.add(D, batching, data(5), 0)
    lists.forget(D)
    assert lists.due({D: batching}, 100 * MS) == []
    lists.add(D, batching, data(6), 0)
    assert lists.due({}, 100 * MS) == [] and lists.next_deadline_ns({D: batching}) is None  # unconfigured
