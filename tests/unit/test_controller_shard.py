"""ShardPlan: contiguous chunk ranges per switch."""

from __future__ import annotations

import pytest

from innet.wire.shard import Shard, ShardPlan, ShardPlanError


def test_even_split_gives_remainder_to_first_switches():
    plan = ShardPlan.contiguous(10, ["a", "b", "c"])
    assert [(s.switch, s.first_chunk, s.chunks) for s in plan.shards] == [("a", 0, 4), ("b", 4, 3), ("c", 7, 3)]
    assert plan.total_chunks == 10
    assert plan.owner(0) == ("a", 0) and plan.owner(4) == ("b", 0) and plan.owner(9) == ("c", 2)


def test_weights_and_single_switch():
    plan = ShardPlan.contiguous(12, ["a", "b"], weights=[3, 1])
    assert [s.chunks for s in plan.shards] == [9, 3]
    assert ShardPlan.contiguous(5, ["only"]).shard("only") == Shard("only", 0, 5)


def test_invalid_plans():
    with pytest.raises(ShardPlanError, match="starts at chunk 3, expected 2"):
        ShardPlan((Shard("a", 0, 2), Shard("b", 3, 1)))
    with pytest.raises(ShardPlanError, match="names a switch twice"):
        ShardPlan((Shard("a", 0, 2), Shard("a", 2, 1)))
    with pytest.raises(ShardPlanError, match="chunk 5 is outside the plan's 0..4"):
        ShardPlan.contiguous(5, ["a"]).owner(5)
    with pytest.raises(ShardPlanError, match="no switch 'z'"):
        ShardPlan.contiguous(5, ["a"]).shard("z")
