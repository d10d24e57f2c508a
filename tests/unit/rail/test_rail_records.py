"""The rail testbed's parts without a network: faults asked of the backend, rows as the saved JSON has them."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.testbed.core.testbed import TestbedError, TestbedOptions
from innet.testbed.core.topology import rail_only
from innet.testbed.rail.records import (
    AllToAllSlowdown,
    Amdahl,
    CollectiveRow,
    DemoRow,
    FailoverRow,
    FailoverTimes,
)
from innet.testbed.rail.testbed import RailTestbed


@pytest.mark.parametrize(("backend", "fault", "message"), [
    ("loopback", lambda tb: tb.set_nic_link("d1g2", up=False),
     "set the NIC link of d1g2: needs the Mininet backend, this is loopback (no links)"),
    ("mininet", lambda tb: tb.freeze_switch("r2"), "freeze switch r2: needs the loopback backend, this is mininet"),
    ("mininet", lambda tb: tb.thaw_switch("r2"), "thaw switch r2: needs the loopback backend, this is mininet"),
])
def test_a_fault_the_backend_cannot_emulate_is_refused_naming_it(backend: str, fault: object, message: str,
                                                                 tmp_path: Path) -> None:
    tb = RailTestbed(rail_only(domains=2, gpus_per_domain=2), TestbedOptions(state_dir=tmp_path), backend=backend)
    with pytest.raises(TestbedError) as caught:
        fault(tb)  # type: ignore[operator]
    assert str(caught.value) == message


def test_collective_row_json_has_the_saved_documents_keys_in_order() -> None:
    row = CollectiveRow("hierarchical INA", 1000, "elements", 0.02, 0.01, (0.03, 0.01, 0.02), True, None, "innet")
    assert list(row.to_json().items()) == [
        ("collective", "hierarchical INA"), ("size", 1000), ("unit", "elements"), ("median_s", 0.02),
        ("min_s", 0.01), ("times", [0.03, 0.01, 0.02]), ("ok", True), ("model_s", None), ("switch_impl", "innet")]


def test_slowdown_json_nests_amdahl_and_ends_with_the_switch() -> None:
    s = AllToAllSlowdown(50000, 0.1, 3, (0.05, 0.11), 0.15, 0.1, Amdahl(0.3, 0.03, 0.27, (0.022, 0.03)), "bmv2")
    doc = s.to_json()
    assert list(doc) == ["pair_bytes", "measured", "runs", "spread", "model", "seed_estimate", "amdahl", "switch_impl"]
    assert doc["spread"] == [0.05, 0.11] and doc["amdahl"] == {"a2a_share": 0.3, "total": 0.03,
                                                               "paper_a2a_share": 0.27, "paper_totals": [0.022, 0.03]}


def test_demo_rows_carry_a_model_column_only_when_modelled() -> None:
    assert DemoRow("hierarchical INA", 1000, 0.02, True).to_json() == {
        "collective": "hierarchical INA", "size": 1000, "median_s": 0.02, "ok": True}
    unshaped = DemoRow("all-to-all (two-step)", 50000, 0.1, True, None, modelled=True).to_json()
    assert unshaped == {"collective": "all-to-all (two-step)", "size": 50000, "median_s": 0.1, "ok": True,
                        "model_s": None}


def test_failover_row_is_the_times_then_exact() -> None:
    times = FailoverTimes(1, "warm", 1, 2, 26, 3, 2, 6, 0.01, 0.2, 0.05, 0.002, 0.3, 0.4, 0.1, 1.0, 0.05, 0.9)
    doc = FailoverRow(times, exact=True).to_json()
    assert list(doc)[:3] == ["rank", "spare", "failed_domain"] and list(doc)[-1] == "exact"
    assert doc["slowest_step_s"] == 0.9 and doc["exact"] is True
