"""K from the MTU (jumbo frames): the cost model, ``innet bench`` and the testbed pick the
largest supported K whose frame fits the links unless K is given, and refuse a K that
does not fit with one line."""

from __future__ import annotations

import math

import pytest

from innet.cli import main
from innet.testbed.core import bounds as costmodel
from innet.testbed.ina.bench import BenchConfig
from innet.testbed.core.testbed import options_for, topology_mtu
from innet.testbed.core.topology import Link, star


def test_cost_model_picks_k_from_the_mtu() -> None:
    jumbo = costmodel.LinkModel(bw_bps=1e9, mtu=9000)
    est = costmodel.ina_allreduce(4, 1 << 20, None, jumbo)
    assert est.packets_up == math.ceil((1 << 20) / 2048)
    assert est == costmodel.ina_allreduce(4, 1 << 20, 2048, jumbo)
    assert costmodel.ina_allreduce(4, 1 << 20, None, costmodel.LinkModel(bw_bps=1e9)).packets_up == (1 << 20) // 256
    # the link bound of a jumbo run is within 1% of the message itself
    assert est.wire_up / ((1 << 20) * 4) < 1.01


@pytest.mark.parametrize("mtu,k", [(None, 256), (1500, 256), (9000, 2048), (1000, 64)])
def test_bench_resolves_k_from_the_mtu(mtu: int | None, k: int) -> None:
    assert BenchConfig(mtu=mtu).resolved_k() == k
    assert BenchConfig(mtu=mtu, k=64).resolved_k() == 64


def test_bench_refuses_k_that_does_not_fit() -> None:
    with pytest.raises(ValueError, match=r"bench k=2048: a 8244-byte innet packet exceeds mtu 1500 "
                                         r"\(largest K that fits: 256\)"):
        BenchConfig(k=2048)
    with pytest.raises(ValueError, match=r"bench k=100: innet.p4 builds K in 4, 64, 256, 1024, 2048"):
        BenchConfig(k=100, mtu=9000)
    with pytest.raises(ValueError, match=r"bench mtu=9001: must be within 576..9000"):
        BenchConfig(mtu=9001)


def test_testbed_options_follow_the_smallest_link_mtu() -> None:
    topo = star(workers=2, link=Link(mtu=9000))
    assert topology_mtu(topo) == 9000
    options = options_for(topo)
    assert options.k == 2048 and ("INNET_K", "2048") in options.defines
    assert options_for(star(workers=2)).k == 256
    small = options_for(topo, 64, window=8)
    assert small.k == 64 and small.defines == () and small.window == 8
    with pytest.raises(ValueError, match=r"K=1024: a 4148-byte innet packet exceeds the links' MTU 1500 "
                                         r"\(largest K that fits: 256\)"):
        options_for(star(workers=2), 1024)


def test_cli_refuses_k_too_large_for_the_mtu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "-k", "2048", "--skip", "gloo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["innet bench: bench k=2048: a 8244-byte innet packet exceeds mtu 1500 (largest K that fits: 256)"]
    assert main(["testbed", "up", "--backend", "loopback", "-k", "1024", "--mtu", "1500"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["innet testbed up: K=1024: a 4148-byte innet packet exceeds the links' MTU 1500 "
                   "(largest K that fits: 256)"]
