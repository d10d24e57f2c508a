"""One switch: its spec (data) and a connected session with typed operations.

    with Switch(SwitchEndpoint("s1", "127.0.0.1:9559")) as sw:
        sw.push(PipelineConfig.load("build/"))
        sw.insert([TableEntry("ipv4_lpm", {"dstAddr": "10.0.1.0/24"}, "ipv4_forward",
                              {"dstAddr": "00:00:00:00:01:01", "port": 1})])
        print(sw.read_register("innet_param_0", range(0, 16)))
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import grpc
import numpy as np
import numpy.typing as npt
from finsy.proto import p4r

from innet.controller import entities as ent
from innet.controller.client import P4RuntimeClient
from innet.controller.entities import Replica, TableEntry
from innet.controller.errors import ControllerError, NoPipelineError, ValueRangeError
from innet.controller.pipeline import PipelineConfig
from innet.controller.cli_session import CliSession
from innet.controller.registers import RegisterBackend, Runner
from innet.controller.schema import P4Schema, Value, encode
from innet.controller.reconnect import ReconnectPolicy
from innet.controller.tls import ClientTls

LOG = logging.getLogger(__name__)

DEFAULT_ADDRESS = "127.0.0.1:9559"


@dataclass(frozen=True)
class SwitchEndpoint:
    """How to reach one switch and what it is in the topology."""

    name: str
    """Name in the topology (``s1``, ``rail0``, ``site-a``)."""
    address: str = DEFAULT_ADDRESS
    """gRPC HOST:PORT of its P4Runtime server."""
    device_id: int = 1
    """P4Runtime device id."""
    role: str = "tor"
    """Role in the topology: ``tor`` (single switch), ``rail``, ``spine`` or ``site``."""
    election_id: int | None = 1
    """Election id this controller uses (highest is primary); None for a read-only
    session that does not arbitrate (``innet inspect``)."""
    thrift_port: int | None = None
    """BMv2 only: Thrift port for the ``simple_switch_CLI`` register fallback."""
    thrift_cli: str = "simple_switch_CLI"
    """BMv2 only: the ``simple_switch_CLI`` command (a path when it is not on PATH, e.g. in
    ``INNET_BMV2_BIN``)."""
    registers: str = "auto"
    """Register transport: ``thrift`` (BMv2: never RegisterEntry over P4Runtime), ``p4runtime``,
    or ``auto`` (with a Thrift port: one single-cell probe decides; see register_transport)."""
    timeout: float = 10.0
    """Deadline in seconds of connecting and of each RPC."""
    tls: ClientTls | None = None
    """TLS of the P4Runtime channel (switch started with ``--grpc-server-ssl``); None: plaintext."""
    reconnect: ReconnectPolicy = ReconnectPolicy()
    """Reconnecting when the switch goes away (restart): back-off and deadline; the
    pipeline and state this session installed are installed again (``Switch.restore``)."""
    p4runtime_role: str = ""
    """P4Runtime role (``Role.name``) of this session; ``""``: the default role (full
    access). Not to be confused with ``role``, the switch's place in the topology."""
    switch_impl: str | None = None
    """``innet`` (innet-switch) or ``bmv2`` (simple_switch_grpc): a pipeline it cannot run
    (a BMv2 JSON to innet-switch) is refused before it is sent; None: not known, not checked."""


class Switch:
    """A connected P4Runtime session with one switch (use as a context manager)."""

    def __init__(self, spec: SwitchEndpoint, runner: Runner | None = None) -> None:
        self.spec = spec
        self.client = P4RuntimeClient(spec.address, spec.device_id, spec.election_id, spec.timeout, spec.tls,
                                      spec.reconnect, spec.p4runtime_role)
        self.client.on_reconnect = self.restore
        self._runner = runner
        """Runs simple_switch_CLI; None: one long-lived CLI per pipeline (``CliSession``)."""
        self._session: CliSession | None = None
        self._schema: P4Schema | None = None
        self._registers: RegisterBackend | None = None
        self._pushed: PipelineConfig | None = None
        self.restorers: list[Callable[[], None]] = []
        """Called by ``restore`` after the pipeline is back, in order: each re-installs the
        state its layer installed (``InnetSwitch`` adds forwarding and jobs)."""

    # -- lifecycle -----------------------------------------------------------------------

    def connect(self) -> "Switch":
        self.client.connect()
        return self

    def close(self) -> None:
        self._end_session()
        self.client.close()

    def _end_session(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> "Switch":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_primary(self) -> bool:
        return self.client.is_primary

    # -- pipeline ------------------------------------------------------------------------

    def push(self, config: PipelineConfig) -> None:
        """SetForwardingPipelineConfig; the P4Info becomes this session's schema (and the
        config is remembered, to be pushed again if the switch restarts without it).
        PipelineConfigError, before sending, when ``spec.switch_impl`` cannot run it."""
        config.check_for(self.spec.switch_impl)
        self.client.set_pipeline(config.p4info, config.device_config, config.cookie)
        self._pushed = config
        self._use(P4Schema(config.p4info))

    def restore(self) -> None:
        """After a reconnect: push the remembered pipeline again when the switch lost it
        (no pipeline, or another cookie), then run ``restorers``. A switch that came
        back without a pipeline this session never pushed is a NoPipelineError saying so."""
        cookie = self.client.get_cookie()
        if self._pushed is not None and cookie != self._pushed.cookie:
            LOG.warning("switch %s (%s) came back %s; pushing %s again", self.spec.name, self.spec.address,
                        "without a pipeline" if cookie is None else f"with another pipeline (cookie {cookie})",
                        self._pushed.name)
            self.client.set_pipeline(self._pushed.p4info, self._pushed.device_config, self._pushed.cookie)
        elif cookie is None:
            self._schema = self._registers = None
            raise NoPipelineError(
                f"switch {self.spec.name} ({self.spec.address}) came back without a pipeline after losing "
                "the connection (restarted?), and this session did not push one: push it again "
                "(innet pipeline push / Switch.push)", grpc.StatusCode.FAILED_PRECONDITION)
        for restorer in self.restorers:
            restorer()

    def _use(self, schema: P4Schema) -> None:
        from innet.controller.register_transport import choose

        self._schema = schema
        runner = self._runner
        if runner is None:  # a new CLI per pipeline: simple_switch_CLI reads the program's JSON when it starts
            self._end_session()
            runner = self._session = CliSession()
        self._registers = choose(self.client, schema, self.spec.registers, self.spec.thrift_port, self.spec.address,
                                 runner, cli=self.spec.thrift_cli)

    @property
    def schema(self) -> P4Schema:
        """The P4Info of the running pipeline (fetched from the switch on first use)."""
        if self._schema is None:
            info = self.client.get_p4info()
            if info is None:
                raise NoPipelineError(f"switch {self.spec.name} ({self.spec.address}) has no pipeline; "
                                      "push one first (innet pipeline push / Switch.push)", grpc.StatusCode.FAILED_PRECONDITION)
            self._use(P4Schema(info))
        assert self._schema is not None
        return self._schema

    @property
    def registers(self) -> RegisterBackend:
        self.schema
        assert self._registers is not None
        return self._registers

    # -- raw -----------------------------------------------------------------------------

    def write(self, updates: Sequence[p4r.Update], single_request: bool = False) -> None:
        """Raw updates; not atomic (see ``P4RuntimeClient.write``)."""
        self.client.write(updates, ent.describer(self.schema), single_request)

    # -- tables --------------------------------------------------------------------------

    def insert(self, entries: Iterable[TableEntry]) -> None:
        """INSERT table entries (default entries are written with MODIFY)."""
        self.write([ent.insert(self.schema, e) for e in entries])

    def modify(self, entries: Iterable[TableEntry]) -> None:
        self.write([ent.modify(self.schema, e) for e in entries])

    def delete(self, entries: Iterable[TableEntry]) -> None:
        self.write([ent.delete(self.schema, e) for e in entries])

    def set_default(self, table: str, action: str, params: dict[str, Value] | None = None) -> None:
        self.write([ent.modify(self.schema, TableEntry(table, {}, action, params or {}, is_default=True))])

    def read_table(self, table: str | None = None) -> list[TableEntry]:
        """Entries of ``table`` (every table when None)."""
        return [ent.table_entry_from_proto(self.schema, e.table_entry)
                for e in self.client.read([ent.table_read(self.schema, table)])]

    def read_default(self, table: str) -> TableEntry:
        """The default entry (action and parameters) of ``table``."""
        selector = ent.table_read(self.schema, table)
        selector.table_entry.is_default_action = True
        (entity,) = self.client.read([selector])
        return ent.table_entry_from_proto(self.schema, entity.table_entry)

    # -- multicast -----------------------------------------------------------------------

    def set_multicast_group(self, group_id: int, replicas: Sequence[Replica]) -> None:
        """Create the group, or replace its replicas when it exists."""
        existing = self.read_multicast_groups()
        kind = p4r.Update.MODIFY if group_id in existing else p4r.Update.INSERT
        self.write([ent.multicast_group(group_id, replicas, kind)])

    def delete_multicast_group(self, group_id: int) -> None:
        self.write([ent.multicast_group(group_id, [], p4r.Update.DELETE)])

    def read_multicast_groups(self) -> dict[int, list[Replica]]:
        selector = p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
            multicast_group_entry=p4r.MulticastGroupEntry()))
        out: dict[int, list[Replica]] = {}
        for e in self.client.read([selector]):
            g = e.packet_replication_engine_entry.multicast_group_entry
            out[g.multicast_group_id] = [
                Replica(int.from_bytes(r.port, "big") if r.WhichOneof("port_kind") == "port" else r.egress_port,
                        r.instance) for r in g.replicas]
        return out

    # -- counters ------------------------------------------------------------------------

    def read_counter(self, name: str, index: int | None = None) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) of counter ``name`` (all cells when index is None)."""
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count, e.counter_entry.data.byte_count)
                for e in self.client.read([ent.counter_read(self.schema, name, index)])}

    def reset_counters(self, cells: Iterable[tuple[str, int]]) -> None:
        self.write([ent.counter_write(self.schema, name, index) for name, index in cells])

    # -- registers -----------------------------------------------------------------------

    def read_register(self, name: str, indexes: range | None = None) -> list[int]:
        """Values (unsigned) of register ``name`` at ``indexes`` (all when None)."""
        info = self.schema.register(name)
        indexes = range(info.size) if indexes is None else indexes
        ent.check_indexes(info.size, indexes, f"register {info.name!r}")
        if len(indexes) == 0:
            return []
        return self.registers.read(info, indexes)

    def write_registers(self, cells: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        """Write many registers at once: name -> [(index, value), ...], batched."""
        resolved: dict[str, Sequence[tuple[int, int]]] = {}
        for name, items in cells.items():
            info = self.schema.register(name)
            for index, value in items:
                if not 0 <= index < info.size:
                    raise ValueRangeError(f"register {info.name!r}: index {index} is outside 0..{info.size - 1}")
            resolved[info.name] = items
        self.registers.write(resolved)

    def write_register(self, name: str, start: int, values: Sequence[int] | npt.NDArray[Any]) -> None:
        """Cells ``start..start+len(values)-1`` of register ``name`` (one range entity per 256k
        cells where the switch has them, ``innet.switch.p4rt_codec.register_range``)."""
        info = self.schema.register(name)
        arr = np.asarray(values).astype(np.int64).ravel()
        if arr.size == 0:
            return
        ent.check_indexes(info.size, range(start, start + arr.size), f"register {info.name!r}")
        self.registers.write_range(info, start, arr)

    # -- packet I/O ----------------------------------------------------------------------

    def packet_out(self, payload: bytes, **metadata: Value) -> None:
        """A PacketOut with controller-header fields by name (``egress_port=2``)."""
        fields = {m.name: m for m in self.schema.packet_out}
        unknown = [k for k in metadata if k not in fields]
        if unknown:
            from innet.controller.errors import UnknownNameError

            raise UnknownNameError("packet_out metadata field", unknown[0], fields, "the packet_out header")
        pairs = [(m.id, encode(metadata.get(m.name, 0), m.bitwidth, f"packet_out field {m.name!r}"))
                 for m in self.schema.packet_out]
        self.client.packet_out(payload, pairs)

    def packet_in(self, timeout: float) -> p4r.PacketIn | None:
        return self.client.packet_in(timeout)


def connect_all(specs: Sequence[SwitchEndpoint]) -> list[Switch]:
    """Connect to every switch; on any failure close those already open and re-raise."""
    switches: list[Switch] = []
    try:
        for spec in specs:
            switches.append(Switch(spec).connect())
    except BaseException:
        for sw in switches:
            sw.close()
        raise
    return switches


__all__ = ["ControllerError", "Switch", "SwitchEndpoint", "connect_all"]
