"""A pipeline config goes only to the switch that runs it, over real gRPC: a BMv2 JSON the
size of innet.p4's (10.8 MB, above gRPC's default 4 MiB) is refused by the controller before
it is sent to innet-switch, and by innet-switch itself with its one-line message (not gRPC's
RESOURCE_EXHAUSTED) when a client that does not know the switch sends it; a server with
gRPC's default limit gets the size and the config's kind in the controller's error. A
loopback testbed with ``INNET_P4C`` naming p4c-bm2-ss (as on a machine that runs BMv2 too)
pushes innet-p4c's config to its innet-switch."""

from __future__ import annotations

from concurrent import futures
from pathlib import Path
from typing import Iterator

import grpc
import pytest

from innet.controller.errors import PipelineConfigError, RpcError
from innet.controller.pipeline import PipelineConfig
from innet.controller.switch import Switch, SwitchEndpoint
from innet.switch.p4runtime.device import Device
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.p4runtime.service import P4RuntimeService, add_to_server
from innet.switch.server import SwitchOptions, SwitchServer
from innet.testbed.backends.select import open_testbed
from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.core.topology import star

from testkit.fake_p4c import bmv2_json, fake_p4c_bm2_ss

PIO = Path(__file__).parent / "clients" / "innet_pio.p4"
BMV2_SIZE = 10_807_613
"""Bytes of innet.p4's BMv2 JSON as p4c-bm2-ss writes it at K=256."""


@pytest.fixture(scope="module")
def big_bmv2() -> PipelineConfig:
    innet = PipelineConfig.from_p4(PIO, switch_impl="innet")
    return PipelineConfig("innet_pio", innet.p4info, bmv2_json(BMV2_SIZE))


@pytest.fixture
def innet_switch() -> Iterator[SwitchServer]:
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), InnetTarget()) as server:
        yield server


def test_controller_refuses_before_sending(innet_switch: SwitchServer, big_bmv2: PipelineConfig) -> None:
    with Switch(SwitchEndpoint("s1", innet_switch.grpc_address, switch_impl="innet")) as sw:
        with pytest.raises(PipelineConfigError, match=r"^pipeline 'innet_pio' for innet-switch: device config is "
                                                      r"BMv2 JSON \(p4c-bm2-ss output\); innet executes P4 itself: "
                                                      r"send innet-p4c's <prog>\.innet\.json or the P4 source "
                                                      r"\(10\.8 MB\)$"):
            sw.push(big_bmv2)
        assert sw.client.get_cookie() is None  # nothing reached the switch


def test_innet_switch_names_a_bmv2_json_of_any_size(innet_switch: SwitchServer, big_bmv2: PipelineConfig) -> None:
    with Switch(SwitchEndpoint("s1", innet_switch.grpc_address)) as sw:  # implementation not known
        with pytest.raises(RpcError) as info:
            sw.push(big_bmv2)
    text = str(info.value)
    assert "device config is BMv2 JSON (p4c-bm2-ss output); innet executes P4 itself" in text
    assert "RESOURCE_EXHAUSTED" not in text


def test_a_size_limit_is_reported_with_the_configs_kind(big_bmv2: PipelineConfig) -> None:
    """A P4Runtime server with gRPC's default 4 MiB receive limit (as innet-switch had)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    add_to_server(P4RuntimeService(Device(1, InnetTarget())), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with Switch(SwitchEndpoint("s1", f"127.0.0.1:{port}")) as sw:
            with pytest.raises(RpcError, match=r"the switch refused the \d+-byte request as too large \(.*\); "
                                               r"device config: BMv2 JSON \(p4c-bm2-ss output\), 10\.8 MB: is it "
                                               "for this switch?") as info:
                sw.push(big_bmv2)
        assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        server.stop(grace=None)


def test_testbed_pushes_innet_config_whatever_innet_p4c_names(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INNET_P4C", str(fake_p4c_bm2_ss(tmp_path / "bin", json_bytes=BMV2_SIZE)))
    with open_testbed(star(workers=2), TestbedOptions(state_dir=tmp_path / "runs"), backend="loopback") as tb:
        assert tb.controller[tb.topology.switch().name].switch.spec.switch_impl == "innet"
        results = tb.run_ina([64], repeats=1, exact=True, timeout=120)
        assert all(r.ok for per_rank in results for r in per_rank)
