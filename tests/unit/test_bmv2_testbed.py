"""The testbed's bmv2 wiring without BMv2: which testbeds accept it, the order of bring-up
(binaries and p4c before any network), the controller's endpoint (registers through Thrift,
simple_switch_CLI as found), the Mininet node's command line and leftover recognition."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from innet.testbed.backends.bmv2 import BMV2_CPU_PORT, Bmv2Tools
from innet.testbed.backends.mininet.net import MininetNetwork
from innet.testbed.core.testbed import Testbed, TestbedError as BringUpError, TestbedOptions
from innet.testbed.core.topology import star


class _Recorded(Exception):
    pass


class _FakeMininetNetwork:
    """A network of kind mininet that records being asked for (the BMv2 compile step is the
    Mininet network's own)."""

    kind = "mininet"
    prepare_pipeline = MininetNetwork.prepare_pipeline

    def __init__(self, options: TestbedOptions) -> None:
        self.options = options
        self.calls: list[str] = []
        self.thrift_port: int | None = None
        self.thrift_ports: dict[str, int] = {}
        self.bmv2_tools: Any = None

    def start(self, procs: Any) -> dict[str, str]:
        self.calls.append("network")
        self.thrift_port = 9191
        self.thrift_ports = {"s1": 9191}
        return {"s1": "127.0.0.1:50123"}

    def stop(self) -> None:
        self.calls.append("stop")

    def switch_pid(self) -> int | None:
        return None


def _fake_testbed(options: TestbedOptions) -> tuple[Testbed, _FakeMininetNetwork]:
    network = _FakeMininetNetwork(options)
    return Testbed(star(workers=2), options, network), network  # type: ignore[arg-type]  # a partial Network


def test_unknown_switch_impl_is_refused():
    with pytest.raises(ValueError, match=r"switch_impl='tofino': expected innet or bmv2"):
        TestbedOptions(switch_impl="tofino")


def test_loopback_testbed_refuses_bmv2(tmp_path):
    from innet.testbed.backends.select import open_testbed

    topo = star(workers=2)
    with pytest.raises(BringUpError, match=rf"switch_impl bmv2: the loopback testbed of {topo.name} starts innet "
                                           "switches; BMv2 has no UDP ports, so its switches run in Mininet"):
        open_testbed(topo, TestbedOptions(switch_impl="bmv2", state_dir=tmp_path), backend="loopback")


def test_missing_binaries_stop_bring_up_before_any_network(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("INNET_P4_PREFIX", "/nonexistent")  # not this machine's toolchain, if it has one
    monkeypatch.delenv("INNET_BMV2_BIN", raising=False)
    tb, network = _fake_testbed(TestbedOptions(switch_impl="bmv2", state_dir=tmp_path))
    with pytest.raises(BringUpError, match=r"^bmv2 backend: simple_switch_grpc not found on PATH"):
        tb.start()
    assert network.calls == ["stop"]  # no network was asked for; the (empty) teardown ran


def _record_endpoints(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The endpoints the testbed hands to its Controller; connecting raises _Recorded."""
    import innet.controller.controller as controller_module

    seen: list[Any] = []

    class RecordingController:
        def __init__(self, endpoints: list[Any]) -> None:
            seen.extend(endpoints)

        def connect(self) -> Any:
            raise _Recorded()

    monkeypatch.setattr(controller_module, "Controller", RecordingController)
    return seen


def test_controller_endpoint_sends_registers_through_thrift(tmp_path, monkeypatch):
    seen = _record_endpoints(monkeypatch)
    cli = tmp_path / "bin" / "simple_switch_CLI"
    tools = Bmv2Tools(tmp_path / "bin" / "simple_switch_grpc", cli, None)

    def fake_pipeline(self: _FakeMininetNetwork, procs: Any) -> str:
        self.calls.append("compile")
        self.bmv2_tools = tools
        return "compiled"

    monkeypatch.setattr(_FakeMininetNetwork, "prepare_pipeline", fake_pipeline)
    tb, network = _fake_testbed(TestbedOptions(switch_impl="bmv2", state_dir=tmp_path / "runs"))
    with pytest.raises(_Recorded):
        tb.start()
    assert network.calls == ["compile", "network", "stop"]
    [endpoint] = seen
    assert (endpoint.address, endpoint.thrift_port, endpoint.registers, endpoint.thrift_cli) == (
        "127.0.0.1:50123", 9191, "thrift", str(cli))
    assert endpoint.switch_impl == "bmv2"


def test_innet_switch_endpoint_is_unchanged(tmp_path, monkeypatch):
    seen = _record_endpoints(monkeypatch)
    tb, _ = _fake_testbed(TestbedOptions(state_dir=tmp_path))
    with pytest.raises(_Recorded):
        tb.start()
    assert (seen[0].thrift_port, seen[0].registers, seen[0].switch_impl) == (None, "auto", "innet")


def test_bench_and_demo_configs_carry_the_switch_impl(tmp_path):
    from innet.testbed.ina import bench

    config = bench.BenchConfig(workers=(2,), switch_impls=("bmv2",), backend="mininet", out_dir=tmp_path)
    tb = bench.open_testbed("mininet", 2, 0.0, config)
    assert tb.options.switch_impl == "bmv2"
    both = bench.BenchConfig(workers=(2,), switch_impls=("innet", "bmv2"), backend="mininet", out_dir=tmp_path)
    assert bench.open_testbed("mininet", 2, 0.0, both, "bmv2").options.switch_impl == "bmv2"
    assert bench.open_testbed("mininet", 2, 0.0, both).options.switch_impl == "innet"
    with pytest.raises(ValueError, match="switch_impls"):
        bench.BenchConfig(switch_impls=("innet", "innet"))
    assert bench.switch_description("auto", "bmv2").startswith("simple_switch_grpc")


def test_bmv2_node_command_line(tmp_path):
    """The node's command from Mininet's port numbering, without starting Mininet."""
    from innet.testbed.backends.mininet.switch import Bmv2SwitchNode

    node = Bmv2SwitchNode.__new__(Bmv2SwitchNode)  # Mininet's Node.__init__ starts a shell
    node.tools = Bmv2Tools(Path("/opt/bmv2/simple_switch_grpc"), None, None)
    node.device_id, node.grpc_port, node.thrift_port, node.cpu_port, node.program = 4, 50001, 9099, BMV2_CPU_PORT, None
    node.data_ports = lambda: {2: "s4-eth2", 1: "s4-eth1"}  # type: ignore[method-assign]
    assert node.command() == ["/opt/bmv2/simple_switch_grpc", "--device-id", "4", "-i", "1@s4-eth1",
                              "-i", "2@s4-eth2", "--thrift-port", "9099", "--no-p4", "--",
                              "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", str(BMV2_CPU_PORT)]


def test_leftover_recognition_covers_simple_switch_grpc(tmp_path):
    from innet.testbed.backends.mininet.switch import _is_innet_switch

    script = tmp_path / "simple_switch_grpc"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    script.chmod(0o755)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    proc = subprocess.Popen([str(script), "--device-id", "1"])
    try:
        deadline = time.monotonic() + 5
        while b"simple_switch_grpc" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert _is_innet_switch(proc.pid)
        assert not _is_innet_switch(other.pid)
    finally:
        for p in (proc, other):
            p.kill()
            p.wait()


def test_rail_testbed_on_mininet_accepts_bmv2_and_loopback_refuses_it(tmp_path):
    """Every rail switch can be a simple_switch_grpc in Mininet; loopback has no interfaces for it."""
    from innet.testbed.core.topology import rail_only
    from innet.testbed.rail.testbed import RailTestbed

    topo = rail_only(domains=2, gpus_per_domain=2)
    tb = RailTestbed(topo, TestbedOptions(switch_impl="bmv2", state_dir=tmp_path), backend="mininet")
    assert (tb.kind, tb.options.switch_impl, tb.network.thrift_ports) == ("mininet", "bmv2", {})
    with pytest.raises(BringUpError, match="BMv2 has no UDP ports, so its switches run in Mininet"):
        RailTestbed(topo, TestbedOptions(switch_impl="bmv2", state_dir=tmp_path), backend="loopback")


def test_rail_bench_config_checks_its_switch_impls(tmp_path):
    from innet.testbed.rail.bench import RailBenchConfig, columns_of

    assert RailBenchConfig(switch_impls=("innet", "bmv2"), out_dir=tmp_path).switch_impls == ("innet", "bmv2")
    for bad in [(), ("bmv2", "bmv2"), ("tofino",)]:
        with pytest.raises(ValueError, match="switch_impls"):
            RailBenchConfig(switch_impls=bad)
    doc = {"config": {"switch_impls": ["innet", "bmv2"]}}
    assert [c.header for c in columns_of(doc)][:2] == ["collective", "switch"]
    assert "switch" not in [c.header for c in columns_of({"config": {"switch_impls": ["innet"]}})]
