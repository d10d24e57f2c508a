"""Rail topologies in Mininet (root): an ``innet-switch`` per rail and spine, a Linux bridge per HB domain.

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

import os
import subprocess
from typing import Any, Sequence

from innet.testbed.core.testbed import TestbedError
from innet.testbed.backends.mininet.clean import SWITCHES_FILE
from innet.host.agent.transport import udp_transport
from innet.testbed.backends.mininet.net import MininetTestbed
from innet.testbed.rail.grid import HB_PORT, HostRoute, host_routes
from innet.testbed.rail.testbed import RailTestbed
from innet.testbed.core.topology import Topology


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


def rail_mininet_topo(topology: Topology) -> Any:
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


class RailMininetTestbed(RailTestbed, MininetTestbed):
    """A rail topology in Mininet (see module docstring)."""

    kind = "mininet"

    def _start_network(self) -> str:
        if os.geteuid() != 0:
            raise TestbedError("the Mininet testbed needs root (network namespaces, veths); "
                               "use the loopback testbed (--loopback) without root")

        (self.procs.dir / SWITCHES_FILE).write_text("\n".join(s.name for s in self.topology.switches) + "\n")
        topo = rail_mininet_topo(self.topology)
        self._enter_network(topo)
        for host in self.net.hosts:
            self.procs.adopt(f"mnhost-{host.name}", host.pid)
        self._configure_hosts()
        for s in self.topology.p4_switches:
            address = self.net.get(s.name).grpc_address
            if address is None:
                raise TestbedError(f"switch {s.name} has no P4Runtime address; log {self.net.get(s.name).log_path}")
            self.grpc_addresses[s.name] = address
        return self.grpc_addresses[self.topology.p4_switches[0].name]

    def _configure_hosts(self) -> None:
        topo = self.topology
        for h in topo.workers:
            node = self.net.get(h.name)
            hb = f"{h.name}-eth1"
            node.cmd(f"ip addr add {h.hb_ip} dev {hb}")
            node.cmd(f"ip link set dev {hb} up")
            for c in (topo.uplink(h.name), topo.hb_link(h.name)):
                if c is not None and c.link.mtu is not None:
                    dev = f"{h.name}-eth0" if c == topo.uplink(h.name) else hb
                    node.cmd(f"ip link set dev {dev} mtu {c.link.mtu}")
                    _ip("link", "set", "dev", f"{c.b}-eth{c.b_port}", "mtu", str(c.link.mtu))
        for host, routes in host_routes(self.grid).items():
            if routes:
                self._relay_routes(host, routes)

    def _relay_routes(self, host: str, routes: Sequence[HostRoute]) -> None:
        """``host`` forwards for its HB peers and reaches other rails through them. The
        reverse-path filter is off: a reply arrives on the NIC from a GPU this host sends to
        over HB."""
        node = self.net.get(host)
        nic, hb = f"{host}-eth0", f"{host}-eth1"
        sysctls = ["net.ipv4.ip_forward=1"] + [f"net.ipv4.conf.{dev}.rp_filter=0"
                                               for dev in ("all", "default", nic, hb)]
        out = node.cmd(f"sysctl -qw {' '.join(sysctls)} && echo ok")
        if "ok" not in out:
            raise TestbedError(f"host {host}: enabling IP forwarding failed: {out.strip()}")
        src = self.topology.host(host).address
        for r in routes:
            out = node.cmd(f"ip route replace {r.dst}/32 via {r.via} dev {hb} src {src} && echo ok")
            if "ok" not in out:
                raise TestbedError(f"host {host}: route to {r.dst} via HB peer {r.via} failed: {out.strip()}")

    def transport_to(self, host: str, switch: str) -> dict[str, Any]:
        return udp_transport(self.topology.switch(switch).ip, self.topology.host(host).address,
                             self.options.agent_port)

    def hb_address(self, host: str) -> tuple[str, int]:
        address = self.topology.host(host).hb_address
        assert address is not None
        return address, HB_PORT

    def switch_pid(self) -> int | None:
        return None

    def alltoall_addresses(self, host: str) -> dict[str, tuple[str, int]]:
        """HB group on the HB address, rail group on the NIC address; the direct group listens
        on both and is reached over HB from the own domain, over the NIC from the others."""
        h = self.topology.host(host)
        assert h.hb_address is not None
        return {"hb": (h.hb_address, HB_PORT + 1), "rail": (h.address, HB_PORT + 2),
                "direct": (h.address, HB_PORT + 3), "direct_hb": (h.hb_address, HB_PORT + 3),
                "direct_bind": ("0.0.0.0", HB_PORT + 3)}

    def set_nic_link(self, host: str, up: bool) -> None:
        """Take ``host``'s NIC link down (or up again) at its rail switch's end."""
        result = _ip("link", "set", "dev", self.switch_iface(host), "up" if up else "down")
        if result.returncode != 0:
            raise TestbedError(f"link {host}-{self.topology.uplink(host).b}: {result.stderr.strip()}")
