"""The owner-lane plan (``plan_owner_op``, ``lane_order``) against a chunk-by-chunk reference:
every chunk of an operation takes its owner lane's next position, slot = lane start +
position % lane slots, copy = (position // lane slots) % 2, and each item follows the item
of its lane ``lane slots`` earlier."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from innet import wire
from innet.host.agent.aggregator import JobConfig, lane_order, plan_owner_op
from innet.wire.owners import OwnerRange


def _reference(job: JobConfig, positions: dict[int, int], chunks: int, first: int, worker: bool):
    lanes = job.lanes
    items, owner, slot, ver, taken = [], [], [], [], {}
    for c in range(chunks):
        o = lanes.owner(first + c)
        assert o is not None
        if not worker and o.rank != job.rank:
            continue
        start, slots = lanes.lane(o.rank)
        pos = positions.get(o.rank, 0) + taken.get(o.rank, 0)
        taken[o.rank] = taken.get(o.rank, 0) + 1
        items.append(c), owner.append(o.rank), slot.append(start + pos % slots), ver.append((pos // slots) % 2)
    following, ready, seen = [-1] * len(owner), [], {}
    for i, rank in enumerate(owner):
        lane = seen.setdefault(rank, [])
        if len(lane) >= lanes.owner_slots:
            following[lane[-lanes.owner_slots]] = i
        else:
            ready.append(i)
        lane.append(i)
    return items, owner, slot, ver, taken, following, ready


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4), window=st.integers(5, 24),
       span=st.data(), member=st.data(), positions=st.lists(st.integers(0, 50), min_size=4, max_size=4))
def test_the_vectorised_plan_equals_the_chunk_by_chunk_one(sizes, window, span, member, positions) -> None:
    n = 3
    owners, at = [], 0
    for i, size in enumerate(sizes):
        owners.append(OwnerRange(n + i, at, size))
        at += size
    if window < len(owners) + 1:
        window = len(owners) + 1
    first = span.draw(st.integers(0, at - 1))
    chunks = span.draw(st.integers(1, at - first))
    rank = member.draw(st.sampled_from([0, *(o.rank for o in owners)]))
    job = JobConfig(1, rank, n, window, 16, epoch=1, owners=tuple(owners))
    pos = {o.rank: p for o, p in zip(owners, positions)}
    worker = rank < n
    ref = _reference(job, pos, chunks, first, worker)
    plan = plan_owner_op(job, pos, wire.MsgType.REDUCE, chunks, first, worker)
    following, ready = lane_order(plan.owner, job.lanes.owner_slots)
    assert (plan.items.tolist(), plan.owner.tolist(), plan.slot.tolist(), plan.ver.tolist(), plan.taken,
            following.tolist(), ready.tolist()) == ref


def test_lane_order_of_one_lane_is_the_window_rule() -> None:
    following, ready = lane_order(np.full(10, -1), 4)
    assert following.tolist() == [4, 5, 6, 7, 8, 9, -1, -1, -1, -1] and ready.tolist() == [0, 1, 2, 3]
    following, ready = lane_order(np.zeros(0, np.int64), 4)
    assert following.size == 0 and ready.size == 0
