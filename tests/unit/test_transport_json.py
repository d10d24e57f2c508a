"""The agent transports in worker plans: typed in the parent and in the worker, the same JSON
on the command line in between (``json_form``/``from_json_form`` through ``innet.plans``)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from innet import wire
from innet.host.agent.transport import (TunnelTransportConfig, UdpTransportConfig, transport_config,
                                        tunnel_transport, udp_transport)
from innet.plans import PlanJsonError
from innet.testbed.core.ina_worker import WorkerPlan
from innet.testbed.luwu.train import TrainSpec

LOCAL = wire.Endpoint("02:00:00:00:00:01", "10.0.0.1", 18767)
SWITCH = wire.Endpoint("02:00:00:00:01:00", "10.0.0.254", wire.UDP_PORT)


def _plan(transport: UdpTransportConfig | TunnelTransportConfig) -> WorkerPlan:
    return WorkerPlan(job=1, rank=0, num_workers=2, window=8, k=64, transport=transport, sizes=(256,), epoch=3)


def test_udp_transport_keeps_its_wire_form_in_the_plan_json() -> None:
    plan = _plan(udp_transport("10.0.0.254", "10.0.0.1", 18767))
    text = plan.to_json()
    assert json.loads(text)["transport"] == {"kind": "udp", "switch_ip": "10.0.0.254", "local_ip": "10.0.0.1",
                                             "local_port": 18767}
    back = WorkerPlan.from_json(text)
    assert back == plan and isinstance(back.transport, UdpTransportConfig)


def test_tunnel_transport_keeps_its_wire_form_in_the_plan_json() -> None:
    plan = _plan(tunnel_transport(("127.0.0.1", 9001), LOCAL, SWITCH))
    text = plan.to_json()
    assert json.loads(text)["transport"] == {
        "kind": "tunnel", "tunnel": ["127.0.0.1", 9001], "local": ["02:00:00:00:00:01", "10.0.0.1", 18767],
        "switch": ["02:00:00:00:01:00", "10.0.0.254", wire.UDP_PORT]}
    back = WorkerPlan.from_json(text)
    assert back == plan and isinstance(back.transport, TunnelTransportConfig)


def test_non_default_bind_and_switch_port_are_written_and_read_back() -> None:
    tunnel = replace(tunnel_transport(("10.9.0.3", 9002), LOCAL, SWITCH), bind=("0.0.0.0", 0))
    assert list(tunnel.json_form())[-1] == "bind" and tunnel.json_form()["bind"] == ["0.0.0.0", 0]
    udp = UdpTransportConfig("127.0.0.1", switch_port=40000, local_ip="127.0.0.1")
    assert udp.json_form()["switch_port"] == 40000
    for transport in (tunnel, udp):
        assert transport_config(transport.json_form()) == transport
        assert WorkerPlan.from_json(_plan(transport).to_json()).transport == transport


def test_optional_transports_stay_null_and_typed() -> None:
    spec = TrainSpec(mode="luwu", rank=1, world=2, pull_transport=udp_transport("10.0.0.254", "10.0.0.1", 18768))
    back = TrainSpec.from_json(spec.to_json())
    assert back.transport is None and back.pull_transport == spec.pull_transport


def test_a_luwu_plan_rides_as_the_object_its_own_json_gives() -> None:
    """The trainer's spec carries the plan typed; on the command line it is the object
    ``LuwuPlan.to_json`` writes (what the node processes read too), and it comes back equal."""
    from innet.host.luwu.plan import LuwuPlan

    plan = LuwuPlan(job=3, num_workers=2, nodes=("o1", "o2"), layer_sizes=(8320, 2080, 650), epoch=1,
                    layer_names=("fc1", "fc2", "fc3"), pull_job=4)
    text = TrainSpec(mode="luwu", rank=1, world=2, plan=plan).to_json()
    assert json.loads(text)["plan"] == json.loads(plan.to_json())
    back = TrainSpec.from_json(text).plan
    assert isinstance(back, LuwuPlan) and back == plan


@pytest.mark.parametrize("transport, words", [
    ({"kind": "carrier-pigeon"}, "'carrier-pigeon': expected 'udp' or 'tunnel'"),
    ({"kind": "udp", "switch_ip": "10.0.0.254"}, "KeyError"),
    ({"kind": "tunnel", "tunnel": ["127.0.0.1"], "local": [], "switch": []}, "IndexError"),
    ("udp", "expected 'udp' or 'tunnel'"),
])
def test_a_bad_transport_is_one_plan_error_naming_the_field(transport: object, words: str) -> None:
    data = json.loads(_plan(udp_transport("10.0.0.254", "10.0.0.1", 0)).to_json())
    data["transport"] = transport
    with pytest.raises(PlanJsonError) as error:
        WorkerPlan.from_json(json.dumps(data))
    assert str(error.value).startswith("WorkerPlan.transport: ") and words in str(error.value)
