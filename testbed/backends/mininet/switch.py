"""``innet-switch`` as a Mininet switch node (needs root and Debian's ``mininet``).

    from mininet.topo import SingleSwitchTopo
    with innet_network(SingleSwitchTopo(2), program=None) as net:
        switch = net.switches[0]          # an InnetSwitchNode
        print(switch.grpc_address)       # P4Runtime of that switch, on 127.0.0.1
        net.hosts[0].cmd("ping -c1 10.0.0.2")

``InnetSwitchNode`` runs ``python -m innet.switch.cli.switch`` in the root namespace with one
``-i PORT@IFACE`` per Mininet interface (port numbers as Mininet assigns them: ``s1-eth1``
is port 1), gRPC on 127.0.0.1 (port 0 = any free one, read back from the switch's
startup line), stdout/stderr in ``<state dir>/<name>.log``. ``start`` returns when the
switch reports its address and every port is operationally up, or raises with the log
tail. ``stop`` sends SIGTERM, then SIGKILL after a deadline.

``Bmv2SwitchNode`` runs p4lang's ``simple_switch_grpc`` instead (``--switch-impl bmv2``): the
same ``-i PORT@IFACE`` ports, ``--device-id``, ``--thrift-port`` and ``--grpc-server-addr`` on
free 127.0.0.1 ports chosen at start (BMv2 cannot report a port 0 binding), ``--cpu-port``;
``start`` returns when its P4Runtime server accepts connections and every port is up.

Crash safety: each switch writes ``<state dir>/<name>.pid``; ``cleanup_leftovers`` (run
by ``innet_network`` before building and after stopping) ends a recorded process that is
still an innet-switch and deletes root-namespace interfaces ``<name>-eth<N>`` left by a
crashed run. ``innet_network`` also holds an exclusive lock on the state dir, so two
Mininet runs on one machine never share interface names.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, Iterator, Mapping

from mininet.net import Mininet
from mininet.node import Switch
from mininet.topo import Topo

from innet.testbed.backends.bmv2 import BMV2_CPU_PORT, Bmv2Error, Bmv2SwitchConfig, Bmv2Tools, switch_command, \
    wait_grpc
from innet.polling import PollTimeout, poll_until
from innet.testbed.backends.mininet.console import quiet_links
from innet.children import end_popen
from innet.testbed.core.freeport import free_port
from innet.testbed.core.processes import ProcessRecord, end_process, start_ticks

STATE_DIR = Path("/tmp/innet-mininet")
"""Pid files, logs and the lock of Mininet runs with innet switches."""
READY_PREFIX = "innet-switch: P4Runtime listening on "
SWITCH_MODULE = "innet.switch.cli.switch"
BMV2_SWITCH = "simple_switch_grpc"


class InnetSwitchError(Exception):
    """An innet switch node failed to start; the message names the switch and the log."""


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)


def _is_innet_switch(pid: int) -> bool:
    """Whether ``pid`` is a switch process these nodes start: innet-switch or simple_switch_grpc
    (its name is argv[0], or argv[1] of an interpreter running a wrapper script)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return SWITCH_MODULE.encode() in cmdline or any(Path(arg.decode(errors="replace")).name == BMV2_SWITCH
                                                      for arg in cmdline[:2])


def cleanup_leftovers(switch_names: list[str], state_dir: Path = STATE_DIR) -> list[str]:
    """End recorded innet-switch processes and delete ``<name>-eth<N>`` links; what was done."""
    done: list[str] = []
    for name in switch_names:
        pid_file = state_dir / f"{name}.pid"
        if pid_file.exists():
            try:
                pid = int(pid_file.read_text().strip())
            except ValueError:
                pid = 0
            ticks = start_ticks(pid) if pid else None
            if ticks is not None and _is_innet_switch(pid):
                end_process(ProcessRecord(pid, ticks, name), timeout=10.0)
                done.append(f"ended leftover switch {name} (pid {pid})")
            pid_file.unlink(missing_ok=True)
    links = _run("ip", "-o", "link", "show").stdout
    for line in links.splitlines():
        match = re.match(r"\d+: ([^:@]+)[@:]", line)
        if match is None:
            continue
        iface = match.group(1)
        if any(re.fullmatch(rf"{re.escape(n)}-eth\d+", iface) for n in switch_names):
            _run("ip", "link", "del", iface)
            done.append(f"deleted leftover interface {iface}")
    return done


class InnetSwitchNode(Switch):  # type: ignore[misc]  # mininet is untyped
    """A Mininet switch whose data plane is an ``innet-switch`` process.

    Parameters (besides Mininet's): ``program`` (device config or P4 source; None starts
    with ``--no-p4``), ``grpc_port`` (0: any free port), ``device_id``, ``cpu_port``,
    ``log_level``, ``start_timeout`` (seconds until the switch must be ready),
    ``state_dir`` (pid file and log), ``port_delays`` (port -> ms its output is held back:
    ``innet-switch --port-delay``, WAN delay without netem).
    """

    def __init__(self, name: str, program: Path | None = None, grpc_port: int = 0,
                 device_id: int = 1, cpu_port: int | None = None, log_level: str = "warning",
                 executor: str = "auto",
                 start_timeout: float = 60.0, state_dir: Path = STATE_DIR,
                 port_delays: dict[int, float] | None = None, **params: Any) -> None:
        super().__init__(name, **params)
        self.port_delays = dict(port_delays or {})
        self.program = program
        self.grpc_port = grpc_port
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.log_level = log_level
        self.executor = executor
        self.start_timeout = start_timeout
        self.state_dir = state_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.grpc_address: str | None = None
        self._log: IO[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.state_dir / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        return self.state_dir / f"{self.name}.pid"

    def data_ports(self) -> dict[int, str]:
        """Switch port number -> interface name (loopback excluded)."""
        return {self.ports[i]: i.name for i in self.intfList() if i.name != "lo"}

    def command(self) -> list[str]:
        """The innet-switch command line of this node."""
        cmd = [sys.executable, "-m", SWITCH_MODULE]
        cmd += [str(self.program)] if self.program is not None else ["--no-p4"]
        for port, iface in sorted(self.data_ports().items()):
            cmd += ["-i", f"{port}@{iface}"]
        cmd += ["--device-id", str(self.device_id), "--grpc-server-addr", f"127.0.0.1:{self.grpc_port}",
                "--log-level", self.log_level, "--executor", self.executor]
        if self.cpu_port is not None:
            cmd += ["--cpu-port", str(self.cpu_port)]
        for port, ms in sorted(self.port_delays.items()):
            cmd += ["--port-delay", f"{port}={ms:g}"]
        return cmd

    def start(self, controllers: list[Any]) -> None:
        """Quiet the interfaces, start the process, wait until gRPC and ports are up."""
        for iface in self.data_ports().values():
            _run("sysctl", "-qw", f"net.ipv6.conf.{iface}.disable_ipv6=1")
            _run("ethtool", "-K", iface, "tx", "off")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.pid_path.write_text(f"{self.process.pid}\n")
        try:
            self._wait_ready()
        except BaseException:
            self._terminate()
            raise

    def _wait_ready(self) -> None:
        process = self.process
        assert process is not None
        deadline = time.monotonic() + self.start_timeout

        def address() -> str | None:
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith(READY_PREFIX):
                    return line[len(READY_PREFIX):].strip()
            if process.poll() is not None:
                raise InnetSwitchError(f"switch {self.name}: innet-switch exited with status "
                                       f"{process.returncode}: {self._log_tail()}")
            return None

        try:
            self.grpc_address = poll_until(address, self.start_timeout,
                                           what=f"switch {self.name}: P4Runtime address")
        except PollTimeout as error:
            raise InnetSwitchError(f"{error}: {self._log_tail()}") from None
        self._wait_ports_up(deadline)

    def _wait_ports_up(self, deadline: float) -> None:
        for iface in self.data_ports().values():
            state = Path(f"/sys/class/net/{iface}/operstate")
            try:
                poll_until(lambda: state.read_text().strip() == "up", max(0.0, deadline - time.monotonic()),
                           what=f"switch {self.name}: interface {iface} up")
            except PollTimeout:
                raise InnetSwitchError(f"switch {self.name}: interface {iface} is not up "
                                       f"within {self.start_timeout} s") from None

    def _log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return f"(no log at {self.log_path})"
        return " | ".join(text.strip().splitlines()[-lines:]) or f"(empty log {self.log_path})"

    def connected(self) -> bool:
        """True while the process runs and has reported its gRPC address."""
        return self.process is not None and self.process.poll() is None and self.grpc_address is not None

    def _terminate(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            end_popen(process)
        if self._log is not None:
            self._log.close()
            self._log = None
        self.pid_path.unlink(missing_ok=True)
        self.grpc_address = None

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803  (Mininet's signature)
        """Stop the process, then let Mininet delete the interfaces."""
        self._terminate()
        super().stop(deleteIntfs)


class Bmv2SwitchNode(InnetSwitchNode):
    """A Mininet switch whose data plane is p4lang's ``simple_switch_grpc`` (``--switch-impl bmv2``).

    Parameters: those of :class:`InnetSwitchNode` (``executor`` and ``log_level`` are innet's and
    ignored), plus ``tools`` (where the BMv2 binaries are) and ``thrift_port`` (0: a free one).
    ``program`` must be a BMv2 JSON or None (``--no-p4``; the controller pushes the pipeline).
    """

    def __init__(self, name: str, tools: Bmv2Tools, thrift_port: int = 0, cpu_port: int | None = BMV2_CPU_PORT,
                 **params: Any) -> None:
        super().__init__(name, cpu_port=cpu_port, **params)
        self.tools = tools
        self.thrift_port = thrift_port

    def bmv2_config(self) -> Bmv2SwitchConfig:
        """This node's simple_switch_grpc settings (ports as Mininet numbered them)."""
        return Bmv2SwitchConfig(ports=tuple(sorted(self.data_ports().items())), device_id=self.device_id,
                                grpc_address=f"127.0.0.1:{self.grpc_port}", thrift_port=self.thrift_port,
                                cpu_port=self.cpu_port, json=self.program)

    def command(self) -> list[str]:
        """The simple_switch_grpc command line of this node."""
        return switch_command(self.tools.switch, self.bmv2_config())

    def start(self, controllers: list[Any]) -> None:
        if self.grpc_port == 0:
            self.grpc_port = free_port()
        if self.thrift_port == 0:
            self.thrift_port = free_port()
        super().start(controllers)

    def _wait_ready(self) -> None:
        process = self.process
        assert process is not None
        deadline = time.monotonic() + self.start_timeout
        address = f"127.0.0.1:{self.grpc_port}"
        try:
            wait_grpc(address, self.start_timeout, alive=lambda: process.poll() is None)
        except Bmv2Error as error:
            raise InnetSwitchError(f"switch {self.name}: {error}: {self._log_tail()}") from None
        self.grpc_address = address
        self._wait_ports_up(deadline)


def quiet_hosts(net: Mininet) -> None:
    """Disable IPv6 and TX checksum offload on every host interface."""
    for host in net.hosts:
        host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        for intf in host.intfList():
            if intf.name != "lo":
                host.cmd(f"ethtool -K {intf.name} tx off")


def lock_holder(text: str) -> str:
    """Who holds the Mininet lock, from the pid its holder wrote into the lock file."""
    from innet.testbed.core.state import owner_of

    pid = int(text.split()[0]) if text.split() and text.split()[0].isdigit() else None
    if pid is None:
        return "another Mininet run"
    state = owner_of(pid)
    if state is None:
        return f"another Mininet run (pid {pid})"
    return f"testbed {state.name} (pid {pid}, {state.topology}; `innet testbed down {state.name}` stops it)"


@contextlib.contextmanager
def state_lock(state_dir: Path = STATE_DIR) -> Iterator[None]:
    """Hold the exclusive lock of Mininet runs in ``state_dir`` (blocks until free, after
    saying who holds it: Mininet's switch and interface names are per machine, so two
    Mininet testbeds cannot run at once). The holder writes its pid into the lock file."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / "lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            # print, not logging: Mininet installs its own logger class, whose handler adds no newline
            print(f"waiting for {lock_holder(lock.read())} to end: one Mininet testbed runs at a time on a "
                  f"machine (the lock {state_dir / 'lock'}); Ctrl-C gives up; a loopback testbed can run beside it",
                  file=sys.stderr, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        try:
            yield
        finally:
            lock.seek(0)
            lock.truncate()


@contextlib.contextmanager
def innet_network(topo: Topo, state_dir: Path = STATE_DIR, node_class: type[InnetSwitchNode] = InnetSwitchNode,
                  per_switch: Mapping[str, Mapping[str, int]] | None = None,
                  **switch_params: Any) -> Iterator[Mininet]:
    """A started Mininet of ``topo`` with ``node_class`` switches (InnetSwitchNode, or
    Bmv2SwitchNode with ``tools=``); ``per_switch``: ports of single switches by name
    (``grpc_port``, ``thrift_port``); everything undone on exit."""
    if os.geteuid() != 0:
        raise InnetSwitchError("Mininet with innet switches needs root (network namespaces, veths)")
    names = list(topo.switches())
    with state_lock(state_dir):
        cleanup_leftovers(names, state_dir)

        def make_switch(name: str, **params: Any) -> InnetSwitchNode:
            return node_class(name, state_dir=state_dir, **{**switch_params, **params,
                                                            **(per_switch or {}).get(name, {})})

        net = Mininet(topo=topo, switch=make_switch, controller=None, autoSetMacs=True,
                      build=False, waitConnected=False)
        try:
            with quiet_links():
                net.build()
            quiet_hosts(net)
            net.start()
            yield net
        finally:
            try:
                net.stop()
            finally:
                cleanup_leftovers(names, state_dir)
