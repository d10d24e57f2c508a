"""The stack's configuration without a swarm: K from the overlay MTU, the roles' environment,
the switch's TLS flags, option checks, and the stack file as ``docker stack deploy`` reads it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from innet.testbed.cluster.registry import RegistryError, check_registry
from innet.testbed.cluster.roles import ClusterRoleConfig, k_for_overlay, switch_argv
from innet.testbed.cluster.stack import STACK_FILE, ClusterError, ClusterSpec


def test_k_follows_the_overlay_mtu() -> None:
    assert [k_for_overlay(m) for m in (1450, 1400, 8950)] == [256, 256, 2048]


def test_roles_read_k_tls_and_slot_from_the_environment() -> None:
    config = ClusterRoleConfig.from_env({"INNET_WORKERS": "8", "INNET_OVERLAY_MTU": "8950", "INNET_SLOT": "3"})
    assert (config.base.workers, config.base.k, config.slot, config.tls_dir) == (8, 2048, 3, Path("/run/secrets"))
    assert ClusterRoleConfig.from_env({"INNET_K": "64"}).base.k == 64  # an explicit K wins
    assert ClusterRoleConfig.from_env({"INNET_TLS": "off"}).tls_dir is None
    argv = switch_argv(ClusterRoleConfig.from_env({"INNET_WORKERS": "2"}))
    assert argv[argv.index("--grpc-server-cert") + 1] == "/run/secrets/innet_switch_crt"
    assert "--grpc-server-with-client-auth" in argv and argv.count("-u") == 2


def test_bad_options_name_the_value() -> None:
    with pytest.raises(RegistryError, match="--registry 'http://x:5000': expected HOST"):
        check_registry("http://x:5000")
    with pytest.raises(ClusterError, match="--workers 1: must be within 2..32"):
        ClusterSpec(workers=1)
    with pytest.raises(ClusterError, match="--name 'a b'"):
        ClusterSpec(name="a b")


def test_stack_file_as_docker_stack_deploy_reads_it(tmp_path: Path) -> None:
    if shutil.which("docker") is None:
        pytest.skip("the docker CLI is not installed (apt-get install docker.io)")
    for name in ("ca.crt", "switch.crt", "switch.key", "client.crt", "client.key"):
        (tmp_path / name).write_text("x")
    env = {**os.environ, **ClusterSpec(workers=8, tls_dir=tmp_path, overlay_mtu=8950).env()}
    out = subprocess.run(["docker", "stack", "config", "-c", str(STACK_FILE)], capture_output=True, text=True,
                         env=env, timeout=60)
    if out.returncode != 0 and ("unknown command" in out.stderr or "unknown shorthand flag" in out.stderr):
        pytest.skip(f"this docker CLI has no `stack config`: {out.stderr.strip()}")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "replicated-job" not in text and "endpoint_mode: dnsrr" in text  # Debian's CLI 20.10 reads it
    assert "com.docker.network.driver.mtu: \"8950\"" in text and "INNET_SLOT: '{{.Task.Slot}}'" in text
    assert "replicas: 8" in text and "ports:" not in text  # nothing published on the hosts


def test_roles_read_the_workload_and_collective() -> None:
    from innet.testbed.ina.compose import ComposeError

    config = ClusterRoleConfig.from_env({"INNET_WORKERS": "4", "INNET_WORKLOAD": "luwu", "INNET_NODES": "2"})
    assert (config.workload, config.collective, config.repeats) == ("luwu", "ina", 0)
    argv = switch_argv(config)
    assert argv.count("-u") == 6  # a switch port per worker and per optimizer node
    gloo = ClusterRoleConfig.from_env({"INNET_COLLECTIVE": "gloo", "INNET_REPEATS": "3"})
    assert (gloo.collective, gloo.repeats) == ("gloo", 3)
    with pytest.raises(ComposeError, match="INNET_COLLECTIVE='gloo': ina, or gloo with INNET_REPEATS >= 1"):
        ClusterRoleConfig.from_env({"INNET_COLLECTIVE": "gloo"})
    with pytest.raises(ComposeError, match="INNET_WORKLOAD='fsdp': one of demo, luwu, ddp, ddp-gloo"):
        ClusterRoleConfig.from_env({"INNET_WORKLOAD": "fsdp"})
    with pytest.raises(ClusterError, match="workers \\+ nodes within 32"):
        ClusterSpec(workers=30, workload="luwu", nodes=4)
    env = ClusterSpec(workers=4, workload="luwu", nodes=2).env()
    assert (env["INNET_NODE_REPLICAS"], env["INNET_WORKLOAD"]) == ("2", "luwu")
    assert ClusterSpec(workers=4).env()["INNET_NODE_REPLICAS"] == "0"  # no node tasks outside LuWu


def test_luwu_plan_and_owners_follow_the_environment() -> None:
    pytest.importorskip("torch", reason="torch (optional dependency) is not installed")
    from innet.testbed.cluster.luwu_roles import LuwuSettings, plan, star_config
    from innet.testbed.ina.compose import ComposeConfig

    base = ComposeConfig(workers=4, k=256, train_steps=0)
    settings = LuwuSettings(nodes=2)
    one, again = plan(base, settings, 3), plan(base, settings, 3)
    assert one == again and (one.num_workers, one.nodes, one.epoch, one.k) == (4, ("o1", "o2"), 3, 256)
    assert [o.rank for o in one.owner_ranges()] == [4, 5]  # the nodes are star ranks N..N+S-1
    assert star_config(base, settings).workers == 6


def test_interface_counters_skip_loopback(tmp_path: Path) -> None:
    from innet.testbed.cluster.timed import interface_counters

    dev = tmp_path / "dev"
    dev.write_text("Inter-|   Receive                                                |  Transmit\n"
                   " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
                   "    lo:  100 2 0 0 0 0 0 0  100 2 0 0 0 0 0 0\n"
                   "  eth0: 5000 7 0 0 0 0 0 0 3000 4 0 0 0 0 0 0\n"
                   "  eth1:   10 1 0 0 0 0 0 0   20 1 0 0 0 0 0 0\n")
    assert interface_counters(dev) == {"rx_bytes": 5010, "rx_packets": 8, "tx_bytes": 3020, "tx_packets": 5}


def test_luwu_tasks_tunnel_from_every_interface() -> None:
    """A task's tunnel to the switch on another machine binds beyond loopback (a socket bound to
    127.0.0.1 cannot send to an overlay address: EINVAL)."""
    from innet.host.agent.transport import transport_config
    from innet.testbed.cluster.luwu_roles import LuwuSettings, transport
    from innet.testbed.ina.compose import ComposeConfig

    config = transport(ComposeConfig(workers=2, switch_host="127.0.0.1", k=256, train_steps=0), LuwuSettings(), 2)
    assert config.bind == ("0.0.0.0", 0) and config.tunnel == ("127.0.0.1", 9003)  # rank 2: the node, port 3
    data = config.json_form()
    assert data["bind"] == ["0.0.0.0", 0] and transport_config(data) == config
    assert transport_config({k: v for k, v in data.items() if k != "bind"}).bind == ("127.0.0.1", 0)


def test_ddp_gloo_workload_trains_lu_wus_steps_without_node_ports() -> None:
    """DDP + gloo, the baseline LuWu is timed against: LuWu's steps and lr, no optimizer node
    ports on the switch, no node tasks."""
    config = ClusterRoleConfig.from_env({"INNET_WORKERS": "4", "INNET_WORKLOAD": "ddp-gloo", "INNET_TRAIN_STEPS": "12",
                                         "INNET_LR": "0.01"})
    assert (config.workload, config.luwu.steps, config.luwu.lr) == ("ddp-gloo", 12, 0.01)
    assert switch_argv(config).count("-u") == 4
    env = ClusterSpec(workers=4, workload="ddp-gloo", train_steps=12).env()
    assert (env["INNET_WORKLOAD"], env["INNET_NODE_REPLICAS"], env["INNET_TRAIN_STEPS"]) == ("ddp-gloo", "0", "12")


def _final(rank: int, steps: list[float], sent: int, packets: int, timed: int) -> dict[str, object]:
    return {"final": True, "mode": "ddp-gloo", "rank": rank, "accuracy": 0.5, "rss_bytes": 1 << 20, "step_seconds": steps,
            "params": 1000, "tensor_bytes_peak": 16000,
            "link": {"steps": timed, "sent_bytes": sent, "received_bytes": 2 * sent, "sent_packets": packets,
                     "received_packets": packets}}


def test_training_row_takes_the_slowest_rank_and_the_overlay_bytes() -> None:
    """A cluster training row as the star's (``luwu.bench.measure_row``): per timed step the slowest
    rank, the median over steps; bytes per step from the task's interface, the underlay's with
    VXLAN's 50 bytes a packet."""
    from innet.testbed.cluster.bench import training_row

    docs = [{"rank": 0, "ok": True, "k": 0, "node": "innet-n2", "final": _final(0, [9.0, 9.0, 0.1, 0.3, 0.2], 3000, 30, 3)},
            {"rank": 1, "ok": True, "k": 0, "node": "innet-n3", "final": _final(1, [9.0, 9.0, 0.2, 0.1, 0.4], 6000, 60, 3)}]
    row = training_row("ddp-gloo", 2, docs, [], steps=5, warmup=2).to_json()
    assert (row["where"], row["workload"], row["workers"], row["ok"]) == ("cluster", "ddp-gloo", 2, True)
    assert row["step_s"] == pytest.approx(0.3)  # slowest ranks' steps 0.2, 0.3, 0.4 after the warm-up
    assert row["wire_up_bytes"] == pytest.approx(1500) and row["wire_down_bytes"] == pytest.approx(3000)
    assert row["underlay_up_bytes"] == pytest.approx(1500 + 50 * 15) and row["nodes"] == ["innet-n2", "innet-n3"]
    assert list(row) == ["where", "workload", "workers", "k", "ok", "step_s", "step_s_p90", "wire_up_bytes",
                         "wire_down_bytes", "underlay_up_bytes", "tx_packets", "nodes", "accuracy", "detail"]
    assert row["accuracy"] == 0.5 and row["detail"]["mode"] == "ddp-gloo" and row["detail"]["timed_steps"] == 3
    failed = training_row("ddp-gloo", 2, [{**docs[0], "ok": False}, docs[1]], [], steps=5, warmup=2)
    assert failed.ok is False


def test_a_swarm_node_report_reads_as_the_star_runs_node_status() -> None:
    """The report a swarm node prints is its ``status.json`` plus ``index`` and ``exit``; the
    training row reads it as the record the star's runs hold, or keeps why it does not read."""
    from innet.testbed.cluster.bench import _node_status
    from innet.testbed.luwu.status import NodeStatus, UnreadNodeStatus
    from testkit.node_status import written_status

    status = _node_status({"index": 0, "exit": 0, **written_status(step=5)})
    assert isinstance(status, NodeStatus) and (status.name, status.step) == ("o1", 5)
    assert _node_status({"index": 1, "exit": None}) == UnreadNodeStatus(
        "optimizer node 1's result: format None, expected 'innet-optimizer-node/1'")


def test_rail_gpu_plans_follow_the_rail_only_topology() -> None:
    """GPU d2g3 of a 2x3 rail-only stack: its tunnel to rail 3's UDP port of domain 2, the
    topology's addresses, its domain's peers by their HB aliases; the stack file's services
    and one overlay per HB domain."""
    from innet.testbed.cluster.rail_roles import RailRoleConfig, gpu_plan
    from innet.testbed.cluster.rail_stack import RailClusterSpec, stack_document

    config = RailRoleConfig.from_env({"INNET_RAIL_DOMAINS": "2", "INNET_RAIL_GPUS": "3", "INNET_DOMAIN": "2",
                                      "INNET_GPU": "3"})
    names = {"rail3": "10.9.0.3", "hb-d2-g1": "10.8.0.1", "hb-d2-g2": "10.8.0.2", "hb-d2-g3": "10.8.0.3"}
    plan = gpu_plan(config, 4, resolve=names.__getitem__)
    assert (plan.rank, plan.domain, plan.gpu, plan.x, plan.y, plan.k, plan.epoch) == (5, 1, 2, 3, 2, 256, 4)
    assert plan.transport.tunnel == ("10.9.0.3", 9002) and plan.transport.local.ip == "10.0.0.6"
    assert json.loads(plan.to_json())["transport"]["tunnel"] == ["10.9.0.3", 9002]
    assert plan.hb_peers == (("10.8.0.1", 18800), ("10.8.0.2", 18800), ("10.8.0.3", 18800))
    assert switch_argv(config.role_config(3)).count("-u") == 2  # one port per domain
    doc = stack_document(RailClusterSpec(image="innet", tls_dir=Path("/tls"), domain_nodes=("n2", "n3")))
    assert sorted(doc["services"]) == ["controller", "gpu-d1-g1", "gpu-d1-g2", "gpu-d2-g1", "gpu-d2-g2", "rail1", "rail2"]
    assert doc["services"]["gpu-d2-g1"]["networks"] == {"fabric": {}, "hb2": {"aliases": ["hb-d2-g1"]}}
    assert doc["services"]["gpu-d2-g1"]["deploy"]["placement"]["constraints"] == ["node.hostname == n3"]
    assert sorted(doc["networks"]) == ["fabric", "hb1", "hb2"]
    with pytest.raises(ClusterError, match="domain_nodes \\('n2',\\): one swarm node per HB domain \\(2\\)"):
        RailClusterSpec(image="innet", tls_dir=Path("/tls"), domain_nodes=("n2",))
