"""The testbed without root: ``innet-switch`` with UDP ports on 127.0.0.1, workers as local processes.

Switch port ``p`` of the topology becomes ``-u p@127.0.0.1:0`` (an ephemeral UDP port the
switch prints at start); worker ``hI`` tunnels whole Ethernet frames to it
(``FrameTunnelTransport``) with the host's MAC/IP from the topology, so the switch sees
the same frames as in Mininet. The switch answers each port's last sender. Link rates
and delays do not apply (there are no links); ``TestbedOptions.switch_loss`` drops that
fraction of the switch's output (``innet-switch --loss``). gloo runs on ``lo`` and does
not cross the switch.

Topologies of several P4 switches (rail, geo) get one process per switch; a link between two
switches becomes a pair of UDP ports that send to each other (``-u p@addr@peer``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from typing import Any, Sequence

from innet.polling import PollTimeout, poll_until
from innet import wire
from innet.testbed.core.network import SwitchProcess
from innet.testbed.core.processes import ProcessGroup
from innet.testbed.core.testbed import TestbedError, TestbedOptions
from innet.testbed.core.topology import Topology
from innet.testbed.core.freeport import free_port, free_ports
from innet.host.agent.transport import TunnelTransportConfig, tunnel_transport

LOCALHOST = "127.0.0.1"
SWITCH_MODULE = "innet.switch.cli.switch"
GRPC_LINE = re.compile(r"innet-switch: P4Runtime listening on (\S+)")
PORT_LINE = re.compile(r"innet-switch: port (\d+) on UDP ([\d.]+):(\d+)")


class LoopbackNetwork:
    """A topology's P4 switches on 127.0.0.1 (no root, no namespaces): one ``innet-switch``
    process per switch, UDP switch ports (switch-to-switch ports send to each other's bound
    port), hosts as local processes tunnelling frames to their switch's port."""

    kind = "loopback"

    def __init__(self, topology: Topology, options: TestbedOptions) -> None:
        self.topology = topology
        self.options = options
        self.procs: ProcessGroup | None = None
        self.switch_udp: dict[str, dict[int, tuple[str, int]]] = {}
        """P4 switch -> its port -> the UDP address the port's socket is bound to."""
        self.thrift_port: int | None = None
        self.thrift_ports: dict[str, int] = {}
        self.bmv2_tools: Any = None
        self.planned_ports: dict[str, tuple[int, int | None]] = {}
        """P4 switch -> (P4Runtime port, unused Thrift port) chosen by the testbed; absent: any free port."""

    def process_name(self, switch: str) -> str:
        """The switch's process name in the run (``switch`` when it is the only one)."""
        return "switch" if len(self.topology.p4_switches) == 1 else f"switch-{switch}"

    def _port_specs(self) -> dict[str, list[str]]:
        p4 = {s.name for s in self.topology.p4_switches}
        specs: dict[str, list[str]] = {name: [] for name in p4}
        for c in self.topology.links:
            if c.b not in p4:
                continue
            if c.a in p4:
                pa, pb = free_ports(2)
                specs[c.a].append(f"{c.a_port}@{LOCALHOST}:{pa}@{LOCALHOST}:{pb}")
                specs[c.b].append(f"{c.b_port}@{LOCALHOST}:{pb}@{LOCALHOST}:{pa}")
            else:
                specs[c.b].append(f"{c.b_port}@{LOCALHOST}:0")
        return specs

    def switch_command(self, switch: str, ports: Sequence[str] | None = None) -> list[str]:
        """``innet-switch`` of P4 switch ``switch`` with UDP ``ports`` (default: its links' ports)."""
        spec = self.topology.switch(switch)
        grpc_port = self.planned_ports.get(switch, (0, None))[0]
        cmd = [sys.executable, "-m", SWITCH_MODULE, "--no-p4", "--grpc-server-addr", f"{LOCALHOST}:{grpc_port}",
               "--log-level", self.options.switch_log_level, "--executor", self.options.switch_executor,
               "--device-id", str(spec.device_id)]
        for port in self._port_specs()[switch] if ports is None else ports:
            cmd += ["-u", port]
        if self.options.switch_loss > 0 or self.options.switch_dup > 0:
            cmd += ["--loss", f"{self.options.switch_loss},{self.options.switch_dup},0,1"]
        return cmd

    def prepare_pipeline(self, procs: ProcessGroup) -> Any:
        return None

    def start(self, procs: ProcessGroup) -> dict[str, str]:
        self.procs = procs
        ports = self._port_specs()
        popens = {s.name: procs.spawn(self.process_name(s.name), self.switch_command(s.name, ports[s.name]),
                                      stdout_pipe=False) for s in self.topology.p4_switches}
        pending = set(popens)
        addresses: dict[str, str] = {}

        def all_ready() -> bool:
            for name in sorted(pending):
                log = self.process_name(name)
                text = procs.log_path(log).read_text(errors="replace")
                match = GRPC_LINE.search(text)
                udp = {int(p): (h, int(u)) for p, h, u in PORT_LINE.findall(text)}
                if match is not None and len(udp) >= len(ports[name]):
                    addresses[name] = match.group(1)
                    self.switch_udp[name] = udp
                    pending.discard(name)
                elif popens[name].poll() is not None:
                    raise TestbedError(f"loopback switch {name} exited with status {popens[name].returncode}: "
                                       f"{procs.log_tail(log)}")
            return not pending

        try:
            poll_until(all_ready, self.options.start_timeout, what="loopback switches")
        except PollTimeout as error:
            tails = "; ".join(procs.log_tail(self.process_name(name)) for name in sorted(pending))
            raise TestbedError(f"{error} ({', '.join(sorted(pending))} pending): {tails}") from None
        return addresses

    def switch_details(self) -> dict[str, SwitchProcess]:
        """Per P4 switch: pid, log and the UDP address of each port (``innet testbed status``)."""
        out: dict[str, SwitchProcess] = {}
        if self.procs is None:
            return out
        for s in self.topology.p4_switches:
            popen = self.procs.popens.get(self.process_name(s.name))
            out[s.name] = SwitchProcess(
                None if popen is None else popen.pid, str(self.procs.log_path(self.process_name(s.name))),
                udp_ports={str(p): f"{h}:{u}" for p, (h, u) in sorted(self.switch_udp.get(s.name, {}).items())})
        return out

    def stop(self) -> None:
        if self.procs is not None:
            for s in self.topology.p4_switches:
                self.procs.stop(self.process_name(s.name))

    def freeze_switch(self, name: str) -> None:
        """Make P4 switch ``name`` stop forwarding (SIGSTOP: a hung switch); :meth:`thaw_switch` undoes it."""
        assert self.procs is not None
        self.procs.popens[self.process_name(name)].send_signal(signal.SIGSTOP)

    def thaw_switch(self, name: str) -> None:
        assert self.procs is not None
        self.procs.popens[self.process_name(name)].send_signal(signal.SIGCONT)

    def set_nic_link(self, host: str, up: bool) -> None:
        """Refused: a loopback host has no link to take down (its frames go straight to a UDP port)."""
        raise TestbedError(f"set the NIC link of {host}: needs the Mininet backend, this is {self.kind} (no links)")

    def spawn_on(self, host: str, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
                 stdout_pipe: bool = False) -> subprocess.Popen[bytes]:
        if self.procs is None:
            raise TestbedError(f"spawn {name!r} on {host}: the loopback testbed is not up")
        self.topology.host(host)
        return self.procs.spawn(name, argv, env={**os.environ, **(env or {})}, stdout_pipe=stdout_pipe)

    def transport_to(self, host: str, switch: str) -> TunnelTransportConfig:
        """Frames tunnelled in UDP to the switch port."""
        h = self.topology.host(host)
        nic = self.topology.uplink(host)
        target = self.topology.switch(switch)
        return tunnel_transport(self.switch_udp[nic.b][nic.b_port],
                                wire.Endpoint(h.mac, h.address, self.options.agent_port),
                                wire.Endpoint(target.mac, target.ip, wire.UDP_PORT))

    def gloo_iface(self, host: str) -> str:
        return "lo"

    def gloo_master(self) -> str:
        return LOCALHOST

    def count_iface(self, host: str) -> str | None:
        return None

    def wire_bytes(self) -> dict[str, tuple[int, int]] | None:
        return None

    def switch_pid(self) -> int | None:
        if self.procs is None:
            return None
        popen = self.procs.popens.get("switch")
        return popen.pid if popen is not None and popen.poll() is None else None

    def free_port(self) -> int:
        return free_port(LOCALHOST)
