"""Rail topologies in Mininet (root): an ``innet-switch`` per rail and spine, a Linux bridge per HB domain.

What rail hands the Mininet network (:class:`~innet.testbed.backends.mininet.net.MininetNetwork`):
its topology builder and the configure step; the testbed is
:class:`~innet.testbed.rail.testbed.RailTestbed` on ``backend="mininet"``.

Every GPU host has two interfaces: ``<host>-eth0``, its NIC, on its rail switch (the
topology's NIC ``Link``, HTB-shaped when it has a rate), and ``<host>-eth1``, its HB
interface with the ``hb_ip`` address, on the domain's bridge (the HB ``Link``, usually a
higher rate or unshaped). The bridge is the testbed's NVLink: a kernel fabric between the
GPUs of one server that never touches the P4 network (docs/rail.md says why).

On rail-only there is no NIC path between different rails: the all-to-all forwards its data
through the HB domain itself (two steps), and other host traffic (gloo's TCP) takes the GPU
hosts' :func:`~innet.testbed.rail.grid.host_routes`, relayed by the HB peer on the destination's rail.
"""

from __future__ import annotations

import subprocess
from typing import Any, Sequence

from innet.testbed.backends.mininet.net import MininetNetwork
from innet.testbed.core.testbed import TestbedError, TestbedOptions
from innet.testbed.core.topology import Topology
from innet.testbed.rail.grid import HostRoute, RailGrid, host_routes


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def _kernel_bridge_class() -> type:
    from mininet.node import Switch

    class KernelBridge(Switch):  # type: ignore[misc]  # mininet is untyped
        """A Linux bridge ``br0`` in the node's own network namespace holding its interfaces (no
        STP, no forward delay). Its own namespace: the machine's firewall (e.g. Docker's
        FORWARD DROP with br_netfilter) applies to bridges in the root namespace only."""

        def start(self, controllers: list[Any]) -> None:
            out = self.cmd("ip link add name br0 type bridge forward_delay 0 stp_state 0 && echo ok")
            if "ok" not in out:
                raise TestbedError(f"HB fabric {self.name}: ip link add type bridge failed: {out.strip()}")
            for intf in self.intfList():
                if intf.name != "lo":
                    self.cmd(f"ip link set dev {intf.name} master br0 && ip link set dev {intf.name} up")
            self.cmd("ip link set dev br0 up")

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803  (Mininet's signature)
            self.cmd("ip link del br0")
            super().stop(deleteIntfs)

    return KernelBridge


def rail_mininet_topo(topology: Topology, options: TestbedOptions | None = None) -> Any:
    """A ``mininet.topo.Topo``: P4 switches (the network's default class), HB fabrics as
    kernel bridges, links in topology order (so a host's NIC link is its ``eth0``)."""
    from mininet.link import TCLink
    from mininet.topo import Topo

    topo = Topo()
    bridge = _kernel_bridge_class()
    for h in topology.hosts:
        topo.addHost(h.name, ip=h.ip, mac=h.mac)
    for s in topology.switches:
        if s.role == "hb":
            topo.addSwitch(s.name, cls=bridge, inNamespace=True)
        else:
            topo.addSwitch(s.name, device_id=s.device_id)
    for c in topology.links:
        if c.link.loss_pct or c.link.delay_ms is not None:
            raise TestbedError(f"link {c.a}-{c.b}: rail testbeds shape rates only (HTB); loss and delay are "
                               "not emulated here")
        opts: dict[str, Any] = {"port2": c.b_port}
        if c.a_port is not None:
            opts["port1"] = c.a_port
        params = c.link.tc_params()
        if params:
            opts.update(cls=TCLink, **params)
        topo.addLink(c.a, c.b, **opts)
    return topo


def configure_hosts(network: MininetNetwork) -> None:
    """Once Mininet is up: every GPU's HB interface gets its ``hb_ip``, links their MTU, and on
    rail-only the hosts relay for their HB peers (:func:`~innet.testbed.rail.grid.host_routes`)."""
    topo = network.topology
    for h in topo.workers:
        node = network.net.get(h.name)
        hb = f"{h.name}-eth1"
        node.cmd(f"ip addr add {h.hb_ip} dev {hb}")
        node.cmd(f"ip link set dev {hb} up")
        for c in (topo.uplink(h.name), topo.hb_link(h.name)):
            if c is not None and c.link.mtu is not None:
                dev = f"{h.name}-eth0" if c == topo.uplink(h.name) else hb
                node.cmd(f"ip link set dev {dev} mtu {c.link.mtu}")
                _ip("link", "set", "dev", f"{c.b}-eth{c.b_port}", "mtu", str(c.link.mtu))
    for host, routes in host_routes(RailGrid.of(topo)).items():
        if routes:
            _relay_routes(network, host, routes)


def _relay_routes(network: MininetNetwork, host: str, routes: Sequence[HostRoute]) -> None:
    """``host`` forwards for its HB peers and reaches other rails through them. The
    reverse-path filter is off: a reply arrives on the NIC from a GPU this host sends to
    over HB."""
    node = network.net.get(host)
    nic, hb = f"{host}-eth0", f"{host}-eth1"
    sysctls = ["net.ipv4.ip_forward=1"] + [f"net.ipv4.conf.{dev}.rp_filter=0"
                                           for dev in ("all", "default", nic, hb)]
    out = node.cmd(f"sysctl -qw {' '.join(sysctls)} && echo ok")
    if "ok" not in out:
        raise TestbedError(f"host {host}: enabling IP forwarding failed: {out.strip()}")
    src = network.topology.host(host).address
    for r in routes:
        out = node.cmd(f"ip route replace {r.dst}/32 via {r.via} dev {hb} src {src} && echo ok")
        if "ok" not in out:
            raise TestbedError(f"host {host}: route to {r.dst} via HB peer {r.via} failed: {out.strip()}")
