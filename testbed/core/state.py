"""Live testbeds as files: what ``innet testbed status`` lists and ``--testbed NAME`` finds.

Every testbed that comes up (``innet testbed up``, and any program that starts a
:class:`~innet.testbed.core.testbed.Testbed`) writes ``<state dir>/<name>.json``: its
topology, backend, owner pid, run directory and, per P4 switch, the P4Runtime and Thrift
addresses, device id, pid, log and UDP ports or interfaces. The file is removed when the
testbed stops; a file whose owner process is gone (a crash, ``kill -9``) is *stale*:
:func:`list_states` reports it as such and :func:`clean_stale` removes it.

Where the files live (:func:`state_dir`): ``$INNET_TESTBED_STATE_DIR`` when set; as root
``/run/innet/testbeds`` (readable by every user, so a user's ``innet testbed status`` sees
root's Mininet testbeds); otherwise ``$XDG_RUNTIME_DIR/innet/testbeds`` or, without it,
``/tmp/innet-testbeds-<uid>``. Listing reads the user's directory and ``/run/innet/testbeds``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from innet.testbed.core.processes import ProcessRecord, alive, start_ticks

STATE_ENV = "INNET_TESTBED_STATE_DIR"
"""Environment variable naming the state directory (tests, or several users sharing one)."""
ROOT_STATE_DIR = Path("/run/innet/testbeds")
"""State directory of root's testbeds (Mininet ones)."""
FORMAT = "innet-testbed-state/1"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
"""A testbed name: a file name without surprises (letters, digits, ``_.-``; at most 32)."""
DEFAULT_PREFIX = "tb"
"""Testbeds started without a name get ``tb1``, ``tb2``, ... (the first one free)."""


class TestbedStateError(ValueError):
    """No such testbed or switch, a bad name, or an unreadable state file; the message says which."""

    __test__ = False  # not a pytest test class


def state_dir() -> Path:
    """Where this user's testbeds write their state files (see module docstring)."""
    if env := os.environ.get(STATE_ENV):
        return Path(env)
    if os.geteuid() == 0:
        return ROOT_STATE_DIR
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.access(runtime, os.W_OK):
        return Path(runtime) / "innet" / "testbeds"
    return Path(tempfile.gettempdir()) / f"innet-testbeds-{os.getuid()}"


def search_dirs() -> list[Path]:
    """Directories listing reads: this user's, then root's (unless overridden by the environment)."""
    own = state_dir()
    return [own] if os.environ.get(STATE_ENV) or own == ROOT_STATE_DIR else [own, ROOT_STATE_DIR]


def check_name(name: str) -> str:
    """``name`` when it is a valid testbed name, else TestbedStateError."""
    if not NAME_PATTERN.fullmatch(name):
        raise TestbedStateError(f"testbed name {name!r}: use 1..32 letters, digits, '_', '.' or '-' "
                                "(starting with a letter or digit)")
    return name


@dataclass(frozen=True)
class SwitchState:
    """One P4 switch of a live testbed."""

    name: str
    """Name in the topology (``s1``, ``r0``)."""
    device_id: int
    """P4Runtime device id."""
    p4runtime: str
    """P4Runtime (gRPC) address, HOST:PORT."""
    thrift: str | None = None
    """Thrift address (BMv2's simple_switch_CLI); None for innet-switch, which has none."""
    pid: int | None = None
    """Process id of the switch."""
    log: str | None = None
    """Its log file."""
    udp_ports: dict[str, str] = field(default_factory=dict)
    """Loopback backend: switch port -> the UDP HOST:PORT its socket is bound to."""
    interfaces: dict[str, str] = field(default_factory=dict)
    """Mininet backend: switch port -> interface name (``s1-eth1``)."""
    impl: str = "innet"
    """``innet`` (innet-switch) or ``bmv2`` (simple_switch_grpc)."""


@dataclass(frozen=True)
class TestbedState:
    """A live testbed as written to its state file."""

    __test__ = False  # not a pytest test class

    name: str
    backend: str
    """``mininet`` or ``loopback``."""
    topology: str
    """The topology's name (``star4``, ``rail-only-2x4``)."""
    pid: int
    """The process that owns the testbed (``innet testbed up``, a demo, a benchmark)."""
    pid_ticks: int
    """Its start time (``/proc/PID/stat``), so a reused pid is not taken for the owner."""
    run_dir: str
    """The run directory: process logs, ``topology.json``."""
    started: str
    """When it came up, ISO 8601 UTC."""
    status: str = "up"
    """``starting`` while the bring-up runs, then ``up``."""
    k: int | None = None
    """Values per packet of the pushed innet.p4."""
    switches: tuple[SwitchState, ...] = ()
    processes: tuple[tuple[str, int, str], ...] = ()
    """Every other process of the run: (name, pid, log)."""
    path: str | None = None
    """The state file it was read from (not written)."""

    @property
    def live(self) -> bool:
        """Whether the owning process still runs (else the file is stale)."""
        return alive(ProcessRecord(self.pid, self.pid_ticks, "owner"))

    def switch(self, name: str | None) -> SwitchState:
        """The switch called ``name`` (None: the only one); TestbedStateError names the choices."""
        if name is None:
            if len(self.switches) != 1:
                raise TestbedStateError(f"testbed {self.name} has {len(self.switches)} switches "
                                        f"({', '.join(s.name for s in self.switches) or 'none yet'}): "
                                        "name one with --switch")
            return self.switches[0]
        for s in self.switches:
            if s.name == name:
                return s
        raise TestbedStateError(f"testbed {self.name} has no switch {name!r}; its switches: "
                                f"{', '.join(s.name for s in self.switches) or 'none yet'}")

    def to_json(self) -> str:
        doc = asdict(self)
        doc.pop("path")
        return json.dumps({"format": FORMAT, **doc}, indent=1)

    @classmethod
    def from_json(cls, text: str, path: str | None = None) -> "TestbedState":
        doc = json.loads(text)
        if doc.pop("format", None) != FORMAT:
            raise ValueError(f"not an {FORMAT} document")
        switches = tuple(SwitchState(**s) for s in doc.pop("switches", ()))
        processes = tuple((str(n), int(p), str(log)) for n, p, log in doc.pop("processes", ()))
        return cls(**doc, switches=switches, processes=processes, path=path)


def new_state(name: str, backend: str, topology: str, run_dir: Path, k: int | None = None) -> TestbedState:
    """The ``starting`` state of a testbed this process owns."""
    pid = os.getpid()
    return TestbedState(name=name, backend=backend, topology=topology, pid=pid, pid_ticks=start_ticks(pid) or -1,
                        run_dir=str(run_dir), started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        status="starting", k=k)


def write_state(state: TestbedState, directory: Path | None = None) -> Path:
    """Write (atomically replace) ``<dir>/<name>.json``, readable by every user."""
    directory = state_dir() if directory is None else directory
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{state.name}.json"
    tmp = directory / f".{state.name}.json.{os.getpid()}"
    tmp.write_text(state.to_json() + "\n")
    tmp.chmod(0o644)
    tmp.replace(path)
    return path


def remove_state(state: TestbedState, directory: Path | None = None) -> None:
    """Remove the state file of ``state`` when it is still this owner's."""
    path = (state_dir() if directory is None else directory) / f"{state.name}.json"
    try:
        current = TestbedState.from_json(path.read_text())
    except (OSError, ValueError, TypeError):
        return
    if (current.pid, current.pid_ticks) == (state.pid, state.pid_ticks):
        path.unlink(missing_ok=True)


def list_states(dirs: list[Path] | None = None) -> list[TestbedState]:
    """Every state file's testbed (live or stale, see ``TestbedState.live``), by name;
    unreadable files are skipped (a write in progress, another format)."""
    out: dict[str, TestbedState] = {}
    for directory in search_dirs() if dirs is None else dirs:
        try:
            files = sorted(directory.glob("*.json"))
        except OSError:
            continue
        for path in files:
            try:
                state = TestbedState.from_json(path.read_text(), str(path))
            except (OSError, ValueError, TypeError):
                continue
            out.setdefault(state.name, state)
    return sorted(out.values(), key=lambda s: s.name)


def clean_stale(dirs: list[Path] | None = None) -> list[str]:
    """Remove the state files of testbeds whose owner is gone; what was removed."""
    done = []
    for state in list_states(dirs):
        if state.path is not None and not state.live:
            try:
                Path(state.path).unlink()
            except OSError as error:
                done.append(f"stale testbed {state.name} (pid {state.pid} gone): cannot remove {state.path}: "
                            f"{error.strerror}")
                continue
            done.append(f"removed stale testbed {state.name} (pid {state.pid} gone): {state.path}")
    return done


def live_states(dirs: list[Path] | None = None) -> list[TestbedState]:
    """Testbeds whose owner runs."""
    return [s for s in list_states(dirs) if s.live]


def find_testbed(name: str | None, dirs: list[Path] | None = None) -> TestbedState:
    """The live testbed ``name`` (None: the only live one); TestbedStateError names what runs."""
    states = live_states(dirs)
    running = ", ".join(s.name for s in states) or "none"
    if name is None:
        if not states:
            raise TestbedStateError("no testbed is running (innet testbed up starts one), so a switch name "
                                    "names no switch: give its P4Runtime address, HOST:PORT")
        if len(states) != 1:
            raise TestbedStateError(f"{len(states)} testbeds are running ({running}): name one with --testbed")
        return states[0]
    for s in states:
        if s.name == name:
            return s
    stale = [s for s in list_states(dirs) if s.name == name]
    why = f" (its owner, pid {stale[0].pid}, is gone: a stale state file)" if stale else ""
    raise TestbedStateError(f"no running testbed {name!r}{why}; running: {running} (innet testbed status)")


def claim(state: TestbedState, name: str | None, directory: Path | None = None,
          dirs: list[Path] | None = None) -> TestbedState:
    """``state`` named ``name`` (None: the first free ``tb<N>``), its file created exclusively
    (two bring-ups never get one name); a stale file of that name is replaced. TestbedStateError
    when a running (or starting) testbed has ``name``."""
    directory = state_dir() if directory is None else directory
    directory.mkdir(parents=True, exist_ok=True)
    known = {s.name: s for s in list_states(dirs if dirs is not None else [directory, *search_dirs()])}
    n = 0
    while True:
        if name is None:
            n += 1
            candidate = f"{DEFAULT_PREFIX}{n}"
        else:
            candidate = check_name(name)
        other = known.get(candidate)
        if other is not None and not other.live and other.path is not None:
            Path(other.path).unlink(missing_ok=True)
            other = None
        if other is None:
            claimed = replace(state, name=candidate)
            try:
                with open(directory / f"{candidate}.json", "x") as f:
                    f.write(claimed.to_json() + "\n")
                (directory / f"{candidate}.json").chmod(0o644)
                return claimed
            except FileExistsError:  # another bring-up claimed it a moment ago
                other = replace(state, name=candidate, status="starting")
        if name is not None:
            raise TestbedStateError(f"testbed name {candidate!r} is taken by a running testbed (pid {other.pid}, "
                                    f"{other.backend}, {other.topology}): choose another --name, or stop it "
                                    f"with `innet testbed down {candidate}`")


def claimed_ports(dirs: list[Path] | None = None) -> set[int]:
    """TCP ports the switches of live testbeds have (their P4Runtime and Thrift ports)."""
    ports: set[int] = set()
    for state in live_states(dirs):
        for s in state.switches:
            for address in (s.p4runtime, s.thrift):
                if address and address.rpartition(":")[2].isdigit():
                    ports.add(int(address.rpartition(":")[2]))
    return ports


def with_switches(state: TestbedState, switches: list[SwitchState],
                  processes: list[tuple[str, int, str]]) -> TestbedState:
    """``state`` up, with its switches and processes."""
    return replace(state, status="up", switches=tuple(switches), processes=tuple(processes))


def owner_of(pid: int, dirs: list[Path] | None = None) -> TestbedState | None:
    """The live testbed owned by process ``pid``, if any."""
    return next((s for s in live_states(dirs) if s.pid == pid), None)


def describe(state: TestbedState) -> dict[str, Any]:
    """JSON-ready view of ``state`` with its liveness (``innet testbed status --json``)."""
    doc = json.loads(state.to_json())
    doc.pop("format")
    return {**doc, "live": state.live, "path": state.path}
