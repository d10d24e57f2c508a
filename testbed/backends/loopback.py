"""The testbed without root: ``innet-switch`` with UDP ports on 127.0.0.1, workers as local processes.

Switch port ``p`` of the topology becomes ``-u p@127.0.0.1:0`` (an ephemeral UDP port the
switch prints at start); worker ``hI`` tunnels whole Ethernet frames to it
(``FrameTunnelTransport``) with the host's MAC/IP from the topology, so the switch sees
the same frames as in Mininet. The switch answers each port's last sender. Link rates
and delays do not apply (there are no links); ``TestbedOptions.switch_loss`` drops that
fraction of the switch's output (``innet-switch --loss``). gloo runs on ``lo`` and does
not cross the switch.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import Any, Sequence

from innet.polling import PollTimeout, poll_until
from innet.host import wire
from innet.testbed.core.testbed import Testbed, TestbedError
from innet.testbed.core.freeport import free_port
from innet.host.agent.transport import tunnel_transport

LOCALHOST = "127.0.0.1"
SWITCH_MODULE = "innet.switch.cli.switch"
GRPC_LINE = re.compile(r"innet-switch: P4Runtime listening on (\S+)")
PORT_LINE = re.compile(r"innet-switch: port (\d+) on UDP ([\d.]+):(\d+)")


class LoopbackTestbed(Testbed):
    """A single-switch topology on 127.0.0.1 (no root, no namespaces)."""

    kind = "loopback"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.udp_ports: dict[int, tuple[str, int]] = {}
        """Switch port -> the UDP address its socket is bound to."""

    def switch_command(self) -> list[str]:
        cmd = [sys.executable, "-m", SWITCH_MODULE, "--no-p4", "--grpc-server-addr", f"{LOCALHOST}:0",
               "--log-level", self.options.switch_log_level, "--executor", self.options.switch_executor,
               "--device-id", str(self.topology.switch().device_id)]
        for c in self.topology.links:
            cmd += ["-u", f"{c.b_port}@{LOCALHOST}:0"]
        if self.options.switch_loss > 0 or self.options.switch_dup > 0:
            cmd += ["--loss", f"{self.options.switch_loss},{self.options.switch_dup},0,1"]
        return cmd

    def _start_network(self) -> str:
        name = "switch"
        popen = self.procs.spawn(name, self.switch_command(), stdout_pipe=False)
        expected = {c.b_port for c in self.topology.links}

        def ready() -> str | None:
            text = self.procs.log_path(name).read_text(errors="replace")
            match = GRPC_LINE.search(text)
            self.udp_ports = {int(p): (h, int(u)) for p, h, u in PORT_LINE.findall(text)}
            if match is not None and set(self.udp_ports) >= expected:
                return match.group(1)
            if popen.poll() is not None:
                raise TestbedError(f"loopback switch exited with status {popen.returncode}: "
                                   f"{self.procs.log_tail(name)}")
            return None

        try:
            return poll_until(ready, self.options.start_timeout, what="loopback switch")
        except PollTimeout as error:
            raise TestbedError(f"{error}: {self.procs.log_tail(name)}") from None

    def _stop_network(self) -> None:
        self.procs.stop("switch")

    def spawn_on(self, host: str, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
                 stdout_pipe: bool = False) -> subprocess.Popen[bytes]:
        import os

        self.topology.host(host)
        return self.procs.spawn(name, argv, env={**os.environ, **(env or {})}, stdout_pipe=stdout_pipe)

    def host_transport(self, host: str) -> dict[str, Any]:
        h = self.topology.host(host)
        spec = self.topology.switch()
        return tunnel_transport(self.udp_ports[self.switch_port(h.name)],
                                wire.Endpoint(h.mac, h.address, self.options.agent_port),
                                wire.Endpoint(spec.mac, spec.ip, wire.UDP_PORT))

    def gloo_iface(self, host: str) -> str:
        return "lo"

    def gloo_master(self) -> str:
        return LOCALHOST

    def free_port(self) -> int:
        return free_port(LOCALHOST)
