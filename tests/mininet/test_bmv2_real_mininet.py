"""Real BMv2 as the Mininet testbed's switch (``switch_impl="bmv2"``), when p4c-bm2-ss,
simple_switch_grpc and simple_switch_CLI are installed (skipped otherwise, naming the missing
one): innet.p4 compiled by p4c, pushed by the controller, a job whose registers go through
Thrift, an exact allreduce across two workers, and nothing left behind."""

from __future__ import annotations

import pytest

from innet.testbed.backends.bmv2 import Bmv2Missing, find_tools
from innet.testbed.core.testbed import options_for
from innet.testbed.backends.mininet.clean import innet_interfaces
from innet.testbed.core.topology import star


@pytest.mark.slow
def test_allreduce_through_simple_switch_grpc(tmp_path):
    try:
        find_tools(need_cli=True)
    except Bmv2Missing as missing:
        pytest.skip(str(missing))
    from innet.testbed.backends.select import open_testbed

    topo = star(workers=2)
    with open_testbed(topo, options_for(topo, switch_impl="bmv2", state_dir=tmp_path, start_timeout=60.0), backend="mininet") as tb:
        assert tb.thrift_port is not None
        per_rank = tb.run_ina([1024, 4096], repeats=1, exact=True, timeout=50)
        assert [[r.ok for r in rank] for rank in per_rank] == [[True, True], [True, True]]
        assert tb.counters()  # P4Runtime counters of the job, read from BMv2
    assert innet_interfaces([s.name for s in topo.switches]) == []
