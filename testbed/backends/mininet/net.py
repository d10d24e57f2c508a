"""The testbed in Mininet (root): hosts in network namespaces, ``InnetSwitchNode`` as the switch.

Hosts ``hI`` get the topology's IP and MAC, IPv6 off and TX checksum offload off
(``innet.testbed.backends.mininet.switch.quiet_hosts``); shaped links are ``TCLink`` with the
topology's rate/delay/jitter/loss (HTB + netem on both ends, so each direction; without
netem in the kernel, loss is a cls_bpf random drop, see ``innet.testbed.backends.mininet.impair``;
``TestbedOptions.link_dup_pct`` duplicates frames the same way, with mirred); switch
port ``p`` is ``s1-eth<p>``. Worker processes run in their host (``host.popen``) and reach
the switch with plain UDP at the switch's IP (proxy ARP by ``innet.p4``); gloo runs there
too, over the same links and through the same switch.

Bytes on the wire per worker come from the switch-side interface counters
(``/sys/class/net/s1-ethP/statistics``): ``rx_bytes`` is what the host sent,
``tx_bytes`` what it received.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from innet.polling import PollTimeout, poll_until
from innet.testbed.backends.mininet import impair, smallfirst
from innet.testbed.core.network import SwitchProcess
from innet.testbed.core.processes import ProcessGroup
from innet.testbed.core.testbed import TestbedError, TestbedOptions
from innet.testbed.backends.mininet.clean import SWITCHES_FILE
from innet.host.agent.transport import UdpTransportConfig, udp_transport
from innet.testbed.core.topology import Topology
from innet.testbed.backends.bmv2 import Bmv2Error, Bmv2Missing, find_tools, pipeline


def mininet_topo(topology: Topology, netem: bool = True, **switch_params: Any) -> Any:
    """A ``mininet.topo.Topo`` of ``topology`` (links shaped with ``TCLink`` where needed);
    without ``netem`` the loss is left out (see :mod:`innet.testbed.backends.mininet.impair`)."""
    from mininet.link import TCLink
    from mininet.topo import Topo

    topo = Topo()
    for h in topology.hosts:
        topo.addHost(h.name, ip=h.ip, mac=h.mac)
    for s in topology.switches:
        topo.addSwitch(s.name, device_id=s.device_id, **switch_params)
    for c in topology.links:
        opts: dict[str, Any] = {"port2": c.b_port}
        if c.a_port is not None:
            opts["port1"] = c.a_port
        params = c.link.tc_params()
        if not netem:
            params.pop("loss", None)
        if params:
            opts.update(cls=TCLink, **params)
        topo.addLink(c.a, c.b, **opts)
    return topo


def _check_impairments(topology: Topology, options: TestbedOptions) -> bool:
    """Whether link loss is netem's (else the cls_bpf drop applies it after start); raises
    when the kernel lacks what the topology's links or ``options`` ask for."""
    netem = impair.netem_available()
    netem_loss = netem and not options.link_loss_bpf
    lossy = any(c.link.loss_pct for c in topology.links)
    if options.link_dup_pct and not impair.duplication_available():
        raise TestbedError(f"link duplication {options.link_dup_pct:g}%: needs the kernel's clsact, "
                           "cls_bpf and mirred (CONFIG_NET_SCH_INGRESS, NET_CLS_BPF, NET_ACT_MIRRED)")
    if lossy and not netem_loss and not impair.cls_bpf_available():
        raise TestbedError("link loss: the cls_bpf random drop needs clsact and cls_bpf (CONFIG_NET_SCH_INGRESS, "
                           "NET_CLS_BPF), which this kernel lacks" + ("" if netem else ", and it has no netem"))
    if not netem:
        for c in topology.links:
            if c.link.delay_ms is not None or c.link.jitter_ms is not None:
                raise TestbedError(f"link {c.a}-{c.b}: delay/jitter need the kernel's netem qdisc "
                                   "(CONFIG_NET_SCH_NETEM), which this kernel lacks")
    return netem_loss


TopoBuilder = Callable[[Topology, TestbedOptions], Any]
"""A system's ``mininet.topo.Topo`` of its topology (rail: HB bridges; geo: WAN shaping)."""
Configure = Callable[["MininetNetwork"], None]
"""A system's steps once Mininet is up (rail: HB addresses and relay routes; geo: site routes)."""


class MininetNetwork:
    """A topology in Mininet (see module docstring): by default a star whose links get the
    topology's shaping and impairments; a system with another layout passes its own
    ``topo`` builder and ``configure`` step (composition, not a subclass)."""

    kind = "mininet"

    def __init__(self, topology: Topology, options: TestbedOptions, topo: TopoBuilder | None = None,
                 configure: Configure | None = None, executor: bool = True) -> None:
        self.topology = topology
        self.options = options
        self.topo = topo
        self.configure = configure
        self.executor = executor
        """Whether the switches get ``options.switch_executor`` (else innet-switch's default)."""
        self.procs: ProcessGroup | None = None
        self.net: Any = None
        self.thrift_port: int | None = None
        self.thrift_ports: dict[str, int] = {}
        self.bmv2_tools: Any = None
        self.planned_ports: dict[str, tuple[int, int | None]] = {}
        """P4 switch -> (P4Runtime, Thrift) ports chosen by the testbed; absent: any free port."""
        self._stack = contextlib.ExitStack()

    def prepare_pipeline(self, procs: ProcessGroup) -> Any:
        if self.options.switch_impl != "bmv2":
            return None
        try:
            self.bmv2_tools = find_tools(need_p4c=not self.options.program.is_dir(), need_cli=True)
            return pipeline(self.options.program, self.bmv2_tools, procs.dir / "bmv2-build",
                            dict(self.options.defines))
        except (Bmv2Missing, Bmv2Error) as error:
            raise TestbedError(str(error)) from None

    def start(self, procs: ProcessGroup) -> dict[str, str]:
        if os.geteuid() != 0:
            raise TestbedError("the Mininet testbed needs root (network namespaces, veths); "
                               "use the loopback testbed (--loopback) without root")
        from innet.testbed.backends.mininet.switch import Bmv2SwitchNode, InnetSwitchNode

        self.procs = procs
        (procs.dir / SWITCHES_FILE).write_text("\n".join(s.name for s in self.topology.switches) + "\n")
        node: dict[str, Any] = {"node_class": InnetSwitchNode}
        if self.options.switch_impl == "bmv2":  # every P4 switch of the topology, each with its own ports
            node = {"node_class": Bmv2SwitchNode, "tools": self.bmv2_tools}
        netem_loss = True
        if self.topo is None:
            netem_loss = _check_impairments(self.topology, self.options)
            topo = mininet_topo(self.topology, netem=netem_loss)
        else:
            topo = self.topo(self.topology, self.options)
        if self.executor and self.options.switch_impl != "bmv2":
            node["executor"] = self.options.switch_executor
        self._enter_network(topo, **node)
        for host in self.net.hosts:
            procs.adopt(f"mnhost-{host.name}", host.pid)
        if self.topo is None:
            self._impair_links(netem_loss)
        if self.configure is not None:
            self.configure(self)
        if self.options.small_frames_first:
            self._small_frames_first()
        addresses = {}
        for s in self.topology.p4_switches:
            switch = self.net.get(s.name)
            if switch.grpc_address is None:
                raise TestbedError(f"switch {s.name} has no P4Runtime address; log {switch.log_path}")
            addresses[s.name] = str(switch.grpc_address)
            if getattr(switch, "thrift_port", None) is not None:
                self.thrift_ports[s.name] = int(switch.thrift_port)
        if len(addresses) == 1:
            self.thrift_port = next(iter(self.thrift_ports.values()), None)
        return addresses

    def _impair_links(self, netem_loss: bool) -> None:
        """The star's host links: cls_bpf loss/duplication where asked for, and their MTU."""
        for c in self.topology.links:
            loss = 0.0 if netem_loss else c.link.loss_pct or 0.0
            if loss or self.options.link_dup_pct:
                host = self.net.get(c.a)
                impair.apply_impairments(host.cmd, host.defaultIntf().name, loss, self.options.link_dup_pct)
            if c.link.mtu is not None:
                host = self.net.get(c.a)
                host.cmd(f"ip link set dev {host.defaultIntf().name} mtu {c.link.mtu}")
                subprocess.run(["ip", "link", "set", "dev", self.switch_iface(c.a), "mtu", str(c.link.mtu)],
                               check=True, capture_output=True, timeout=30)

    def _small_frames_first(self) -> None:
        """Both ends of every rate-shaped link (``smallfirst``)."""
        for link in self.net.links:
            for intf in (link.intf1, link.intf2):
                rate = getattr(intf, "params", {}).get("bw")
                if rate:
                    try:
                        smallfirst.apply(intf.node.cmd, intf.name, float(rate))
                    except smallfirst.SmallFirstError as error:
                        raise TestbedError(str(error)) from None

    def switch_details(self) -> dict[str, SwitchProcess]:
        """Per P4 switch: pid, log and the interface of each port (``innet testbed status``)."""
        out: dict[str, SwitchProcess] = {}
        for s in self.topology.p4_switches if self.net is not None else ():
            node = self.net.get(s.name)
            process = getattr(node, "process", None)
            out[s.name] = SwitchProcess(None if process is None else process.pid, str(node.log_path),
                                        interfaces={str(p): i for p, i in sorted(node.data_ports().items())})
        return out

    def switch_pid(self) -> int | None:
        if self.net is None or len(self.topology.p4_switches) != 1:
            return None
        process = getattr(self.net.get(self.topology.switch().name), "process", None)
        return process.pid if process is not None and process.poll() is None else None

    def _enter_network(self, topo: Any, **switch_params: Any) -> None:
        """Start Mininet on ``topo`` into ``self.net`` (undone by ``self._stack``).

        A previous run's host namespaces are destroyed asynchronously by the kernel; until
        then their veth peers keep the switch's interface names, so "File exists" is retried
        after waiting for the names to be free."""
        from innet.testbed.backends.mininet.switch import InnetSwitchError, innet_network

        for attempt in range(3):
            try:
                per_switch = {name: {"grpc_port": grpc, **({} if thrift is None else {"thrift_port": thrift})}
                              for name, (grpc, thrift) in self.planned_ports.items()}
                self.net = self._stack.enter_context(innet_network(
                    topo, program=None, log_level=self.options.switch_log_level, per_switch=per_switch,
                    start_timeout=self.options.start_timeout, **switch_params))
                return
            except InnetSwitchError as error:
                raise TestbedError(str(error)) from None
            except Exception as error:
                if "File exists" not in str(error) or attempt == 2:
                    raise
                self._wait_names_free()

    def _wait_names_free(self, timeout: float = 15.0) -> None:
        from innet.testbed.backends.mininet.clean import innet_interfaces

        names = [s.name for s in self.topology.switches]
        with contextlib.suppress(PollTimeout):  # Mininet reports a name still taken itself
            poll_until(lambda: not innet_interfaces(names), timeout, interval=0.1, what="interface names free")
        time.sleep(0.5)

    def stop(self) -> None:
        net, self.net = self.net, None
        try:
            self._stack.close()
        finally:
            del net

    # -- per host -------------------------------------------------------------------------

    def switch_iface(self, host: str) -> str:
        """Root-namespace interface of ``host``'s switch port (``s1-eth<P>``)."""
        c = self.topology.uplink(host)
        return f"{c.b}-eth{c.b_port}"

    def set_nic_link(self, host: str, up: bool) -> None:
        """Take ``host``'s NIC link down (or up again) at its switch's end."""
        result = subprocess.run(["ip", "link", "set", "dev", self.switch_iface(host), "up" if up else "down"],
                                capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise TestbedError(f"link {host}-{self.topology.uplink(host).b}: {result.stderr.strip()}")

    def freeze_switch(self, name: str) -> None:
        """Refused: a hung switch is emulated on loopback (SIGSTOP of its process); here a
        link fault is :meth:`set_nic_link`."""
        raise TestbedError(f"freeze switch {name}: needs the loopback backend, this is {self.kind}")

    def thaw_switch(self, name: str) -> None:
        raise TestbedError(f"thaw switch {name}: needs the loopback backend, this is {self.kind}")

    def spawn_on(self, host: str, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
                 stdout_pipe: bool = False) -> subprocess.Popen[bytes]:
        if self.net is None or self.procs is None:
            raise TestbedError(f"spawn {name!r} on {host}: the Mininet testbed is not up")
        node = self.net.get(host)
        return self.procs.spawn(name, argv, spawner=node.popen, env={**os.environ, **(env or {})},
                                stdout_pipe=stdout_pipe)

    def transport_to(self, host: str, switch: str) -> UdpTransportConfig:
        """Kernel UDP to the switch's IP."""
        return udp_transport(self.topology.switch(switch).ip, self.topology.host(host).address,
                             self.options.agent_port)

    def count_iface(self, host: str) -> str | None:
        return f"{host}-eth0"

    def gloo_iface(self, host: str) -> str:
        return f"{host}-eth0"

    def gloo_master(self) -> str:
        return self.topology.workers[0].address

    def free_port(self) -> int:
        return random.randint(20000, 30000)

    def wire_bytes(self) -> dict[str, tuple[int, int]] | None:
        return self._link_counters("bytes")

    def wire_packets(self) -> dict[str, tuple[int, int]] | None:
        """Per host, (frames sent, frames received) on its link so far."""
        return self._link_counters("packets")

    def _link_counters(self, unit: str) -> dict[str, tuple[int, int]] | None:
        out = {}
        for h in self.topology.hosts:
            stats = Path("/sys/class/net") / self.switch_iface(h.name) / "statistics"
            try:
                out[h.name] = (int((stats / f"rx_{unit}").read_text()), int((stats / f"tx_{unit}").read_text()))
            except OSError:
                return None
        return out
