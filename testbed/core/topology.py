"""Testbed topologies as values: frozen dataclasses you can print, compare, save and load.

    topo = star(workers=4, link=Link(bw_mbps=1000, delay_ms=0.1, loss_pct=1.0))
    print(topo)                       # a readable summary
    topo.save(Path("star4.json"))     # and Topology.load(...) gives an equal value back

A topology says *what* exists (hosts, switches, the links between them and their
impairments) and nothing about how it is brought up: ``innet.testbed.backends.mininet.net`` turns it
into namespaces and veths, ``innet.testbed.backends.loopback`` into UDP switch ports. It is built
for more than the single-switch star (docs/design.md, "Topologies beyond the star"): switches carry a ``role`` (the
aggregation switch of a star; later ``rail``/``spine`` switches of rail-only and
rail-optimized networks, or per-``site`` switches of a geo-distributed one), hosts carry
a ``group`` (the HB domain or the site they belong to), and every link has its own
impairments (a slow WAN link next to fast local ones).

Invalid values are rejected when constructed, with the object, the constraint and the
value in the message (:class:`TopologyError`).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from innet.wire import MAX_WORKERS

FORMAT = "innet-topology/1"
"""``format`` key of a saved topology."""
SWITCH_ROLES = ("aggregation", "rail", "spine", "site", "hb")
"""Roles a switch can have: ``aggregation`` (a star's switch), ``rail`` and ``spine`` (P4 switches
of rail-only / rail-optimized networks), ``site`` (geo), and ``hb``: the host-side fabric of one
HB domain (the NVLink stand-in, a plain Linux bridge, not a P4 switch; see docs/rail.md)."""
P4_ROLES = ("aggregation", "rail", "spine", "site")
"""Roles of switches that run innet.p4 (an ``innet-switch``)."""
_NAME = re.compile(r"[a-z][a-z0-9]{0,7}")
"""Node names: short (Mininet derives ``<name>-eth<N>``, at most 15 characters)."""
_MAC = re.compile(r"([0-9a-f]{2}:){5}[0-9a-f]{2}")


class TopologyError(ValueError):
    """A topology, node or link is invalid; the message names it, the constraint and the value."""


@dataclass(frozen=True)
class Link:
    """Properties of one full-duplex link, applied in both directions (Mininet ``TCLink``).

    ``None`` means "not shaped" (no limit, no delay, no loss, the interface's default MTU).
    """

    bw_mbps: float | None = None
    """Rate limit in Mbit/s (HTB in Mininet), > 0 and at most 100000."""
    delay_ms: float | None = None
    """One-way propagation delay in milliseconds (netem), >= 0."""
    loss_pct: float | None = None
    """Random loss in percent of packets per direction (netem), 0..100 (100 excluded)."""
    jitter_ms: float | None = None
    """Delay variation in milliseconds (netem); needs ``delay_ms``; at most ``delay_ms``."""
    mtu: int | None = None
    """Interface MTU in bytes, 576..9000 (jumbo frames need it raised above 1500)."""

    def __post_init__(self) -> None:
        def bad(name: str, constraint: str) -> TopologyError:
            return TopologyError(f"link {name}={getattr(self, name)!r}: {constraint}")

        for name in ("bw_mbps", "delay_ms", "loss_pct", "jitter_ms"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise bad(name, "must be a number or None")
        if self.bw_mbps is not None and not 0 < self.bw_mbps <= 100_000:
            raise bad("bw_mbps", "must be > 0 and <= 100000 Mbit/s")
        if self.delay_ms is not None and not 0 <= self.delay_ms <= 10_000:
            raise bad("delay_ms", "must be within 0..10000 ms")
        if self.loss_pct is not None and not 0 <= self.loss_pct < 100:
            raise bad("loss_pct", "must be a percentage within 0..100 (100 excluded)")
        if self.jitter_ms is not None:
            if self.delay_ms is None:
                raise bad("jitter_ms", "needs delay_ms (netem jitter varies a delay)")
            if not 0 <= self.jitter_ms <= self.delay_ms:
                raise bad("jitter_ms", f"must be within 0..delay_ms ({self.delay_ms})")
        if self.mtu is not None and (isinstance(self.mtu, bool) or not isinstance(self.mtu, int)
                                     or not 576 <= self.mtu <= 9000):
            raise bad("mtu", "must be an integer within 576..9000 bytes")

    @property
    def shaped(self) -> bool:
        """True when any traffic control (rate, delay, loss) applies."""
        return any(v is not None for v in (self.bw_mbps, self.delay_ms, self.loss_pct, self.jitter_ms))

    def tc_params(self) -> dict[str, float | str]:
        """Keyword arguments for Mininet's ``TCLink``/``TCIntf.config`` (units as Mininet wants)."""
        params: dict[str, float | str] = {}
        if self.bw_mbps is not None:
            params["bw"] = float(self.bw_mbps)
        if self.delay_ms is not None:
            params["delay"] = f"{self.delay_ms:g}ms"
        if self.jitter_ms is not None:
            params["jitter"] = f"{self.jitter_ms:g}ms"
        if self.loss_pct is not None:
            params["loss"] = float(self.loss_pct)
        return params

    def describe(self) -> str:
        """Short human form, e.g. ``1000 Mbit/s, 0.1 ms, 1% loss``."""
        parts = [f"{self.bw_mbps:g} Mbit/s" if self.bw_mbps is not None else "unlimited"]
        if self.delay_ms is not None:
            parts.append(f"{self.delay_ms:g} ms" + (f" ±{self.jitter_ms:g}" if self.jitter_ms else ""))
        if self.loss_pct:
            parts.append(f"{self.loss_pct:g}% loss")
        if self.mtu is not None:
            parts.append(f"mtu {self.mtu}")
        return ", ".join(parts)


def _check_name(kind: str, name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise TopologyError(f"{kind} name {name!r}: must be 1..8 lowercase letters/digits starting "
                            "with a letter (interface names are <name>-eth<N>)")


@dataclass(frozen=True)
class HostSpec:
    """A host (a worker machine with its host agent)."""

    name: str
    """Node name, e.g. ``h1`` (Mininet host, interface ``h1-eth0``)."""
    ip: str
    """IPv4 address with prefix length, e.g. ``10.0.0.1/24``."""
    mac: str
    """Ethernet address, lowercase ``xx:xx:xx:xx:xx:xx``."""
    rank: int | None = None
    """Worker rank within the job (0..31), or None for a host that runs no worker."""
    group: str | None = None
    """HB domain (rail topologies) or site (geo topologies) the host belongs to; None in a star."""
    hb_ip: str | None = None
    """Address with prefix length on the HB-domain fabric (its second interface), rail topologies only."""

    def __post_init__(self) -> None:
        _check_name("host", self.name)
        try:
            iface = ipaddress.IPv4Interface(self.ip)
        except ValueError:
            raise TopologyError(f"host {self.name}: ip {self.ip!r} is not IPv4 ADDRESS/PREFIX") from None
        if "/" not in self.ip:
            raise TopologyError(f"host {self.name}: ip {self.ip!r} needs a prefix length, e.g. /24")
        if iface.ip == iface.network.network_address or iface.ip == iface.network.broadcast_address:
            raise TopologyError(f"host {self.name}: ip {self.ip!r} is a network or broadcast address")
        if not isinstance(self.mac, str) or not _MAC.fullmatch(self.mac):
            raise TopologyError(f"host {self.name}: mac {self.mac!r} is not lowercase xx:xx:xx:xx:xx:xx")
        if self.rank is not None and (isinstance(self.rank, bool) or not isinstance(self.rank, int)
                                      or not 0 <= self.rank < MAX_WORKERS):
            raise TopologyError(f"host {self.name}: rank {self.rank!r} is outside 0..{MAX_WORKERS - 1}")
        if self.hb_ip is not None:
            try:
                hb = ipaddress.IPv4Interface(self.hb_ip)
            except ValueError:
                raise TopologyError(f"host {self.name}: hb_ip {self.hb_ip!r} is not IPv4 ADDRESS/PREFIX") from None
            if "/" not in self.hb_ip or hb.network.overlaps(ipaddress.IPv4Interface(self.ip).network):
                raise TopologyError(f"host {self.name}: hb_ip {self.hb_ip!r} needs a prefix length and a subnet "
                                    f"apart from ip {self.ip!r}")

    @property
    def address(self) -> str:
        """The IPv4 address without the prefix length."""
        return str(ipaddress.IPv4Interface(self.ip).ip)

    @property
    def hb_address(self) -> str | None:
        """The HB-fabric address without the prefix length (None: no HB interface)."""
        return None if self.hb_ip is None else str(ipaddress.IPv4Interface(self.hb_ip).ip)


@dataclass(frozen=True)
class SwitchSpec:
    """A P4 switch running ``innet.p4`` (an ``innet-switch`` process)."""

    name: str
    """Node name, e.g. ``s1`` (its Mininet ports are ``s1-eth<N>``)."""
    device_id: int = 1
    """P4Runtime device id."""
    role: str = "aggregation"
    """``aggregation`` (star), ``rail``, ``spine``, ``site`` or ``hb`` (see :data:`SWITCH_ROLES`)."""
    ip: str = "10.0.0.254"
    """Address innet replies come from (``switch_addr``); workers send contributions to it."""
    mac: str = "02:00:00:00:01:fe"
    """Ethernet address of the switch's aggregation endpoint (ARP answers, replies)."""

    def __post_init__(self) -> None:
        _check_name("switch", self.name)
        if self.role not in SWITCH_ROLES:
            raise TopologyError(f"switch {self.name}: role {self.role!r} is not one of {', '.join(SWITCH_ROLES)}")
        if isinstance(self.device_id, bool) or not isinstance(self.device_id, int) or self.device_id < 0:
            raise TopologyError(f"switch {self.name}: device_id {self.device_id!r} must be an integer >= 0")
        try:
            ipaddress.IPv4Address(self.ip)
        except ValueError:
            raise TopologyError(f"switch {self.name}: ip {self.ip!r} is not an IPv4 address") from None
        if not isinstance(self.mac, str) or not _MAC.fullmatch(self.mac):
            raise TopologyError(f"switch {self.name}: mac {self.mac!r} is not lowercase xx:xx:xx:xx:xx:xx")


@dataclass(frozen=True)
class Connection:
    """A link between two nodes; ports are switch port numbers (hosts have one ``eth0``)."""

    a: str
    """One end's node name (a host or a switch)."""
    b: str
    """The other end's node name (a switch)."""
    b_port: int
    """Port number on ``b`` (``s1-eth<b_port>`` in Mininet, ``-u b_port@...`` on loopback), 1..510."""
    link: Link = field(default_factory=Link)
    """Rate, delay, loss, jitter and MTU of this link."""
    a_port: int | None = None
    """Port number on ``a`` when ``a`` is a switch (switch-to-switch links); None for a host."""

    def __post_init__(self) -> None:
        for port, what in ((self.b_port, "b_port"), (self.a_port, "a_port")):
            if port is None and what == "a_port":
                continue
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 510:
                raise TopologyError(f"link {self.a}-{self.b}: {what} {port!r} is outside 1..510")


@dataclass(frozen=True)
class Topology:
    """Hosts, switches and the links between them."""

    name: str
    """Name for people and file names, e.g. ``star4``."""
    kind: str
    """Generator that made it: ``star``, ``rail-only``, ``rail-optimized`` (``geo`` later)."""
    hosts: tuple[HostSpec, ...]
    """Hosts in order; workers carry ranks 0..N-1."""
    switches: tuple[SwitchSpec, ...]
    """P4 switches."""
    links: tuple[Connection, ...]
    """Links; ``b`` is always a switch."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hosts", tuple(self.hosts))
        object.__setattr__(self, "switches", tuple(self.switches))
        object.__setattr__(self, "links", tuple(self.links))
        self._validate()

    def _validate(self) -> None:
        names: dict[str, str] = {}
        for kind, node in [("host", h) for h in self.hosts] + [("switch", s) for s in self.switches]:
            if node.name in names:
                raise TopologyError(f"topology {self.name}: node name {node.name!r} is used twice")
            names[node.name] = kind
        if not self.switches:
            raise TopologyError(f"topology {self.name}: needs at least one switch")
        ranks = sorted(h.rank for h in self.hosts if h.rank is not None)
        if ranks != list(range(len(ranks))):
            raise TopologyError(f"topology {self.name}: worker ranks {ranks} must be 0..N-1 without gaps")
        if len(ranks) < 2:
            raise TopologyError(f"topology {self.name}: needs at least 2 workers, has {len(ranks)}")
        for attr in ("ip", "mac"):
            seen: dict[str, str] = {}
            nodes: list[HostSpec | SwitchSpec] = [*self.hosts, *self.switches]
            for named in nodes:
                value = getattr(named, attr).split("/")[0]
                if value in seen:
                    raise TopologyError(f"topology {self.name}: {attr} {value} is used by both "
                                        f"{seen[value]} and {named.name}")
                seen[value] = named.name
        roles = {s.name: s.role for s in self.switches}
        used_ports: set[tuple[str, int]] = set()
        host_links: dict[str, int] = {}
        hb_links: dict[str, int] = {}
        for c in self.links:
            for node_name in (c.a, c.b):
                if node_name not in names:
                    raise TopologyError(f"topology {self.name}: link {c.a}-{c.b} names unknown node {node_name!r}")
            if names[c.b] != "switch":
                raise TopologyError(f"topology {self.name}: link {c.a}-{c.b}: b must be a switch")
            if names[c.a] == "switch" and c.a_port is None:
                raise TopologyError(f"topology {self.name}: switch-to-switch link {c.a}-{c.b} needs a_port")
            if names[c.a] == "switch" and "hb" in (roles[c.a], roles[c.b]):
                raise TopologyError(f"topology {self.name}: link {c.a}-{c.b}: an hb fabric links hosts only")
            if names[c.a] == "host":
                counts = hb_links if roles[c.b] == "hb" else host_links
                counts[c.a] = counts.get(c.a, 0) + 1
            ends = [(c.b, c.b_port)] + ([(c.a, c.a_port)] if c.a_port is not None else [])
            for end in ends:
                if end in used_ports:
                    raise TopologyError(f"topology {self.name}: port {end[1]} of {end[0]} is used twice")
                used_ports.add(end)
        for h in self.hosts:
            if host_links.get(h.name, 0) != 1:
                raise TopologyError(f"topology {self.name}: host {h.name} must have exactly one link, "
                                    f"has {host_links.get(h.name, 0)}")
            if hb_links.get(h.name, 0) != (0 if h.hb_ip is None else 1):
                raise TopologyError(f"topology {self.name}: host {h.name} has hb_ip {h.hb_ip!r} and "
                                    f"{hb_links.get(h.name, 0)} hb-fabric links (needs an hb_ip exactly "
                                    "when it has one hb link)")
        if not any(s.role in P4_ROLES for s in self.switches):
            raise TopologyError(f"topology {self.name}: needs at least one P4 switch (role "
                                f"{', '.join(P4_ROLES)})")

    # -- queries --------------------------------------------------------------------------

    @property
    def workers(self) -> tuple[HostSpec, ...]:
        """Hosts that run a worker, by rank."""
        return tuple(sorted((h for h in self.hosts if h.rank is not None), key=lambda h: h.rank or 0))

    def host(self, name: str) -> HostSpec:
        """The host called ``name``."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise TopologyError(f"topology {self.name}: no host {name!r} "
                            f"(hosts: {', '.join(h.name for h in self.hosts)})")

    def switch(self, name: str | None = None) -> SwitchSpec:
        """The switch called ``name`` (default: the only switch)."""
        if name is None:
            if len(self.switches) != 1:
                raise TopologyError(f"topology {self.name}: has {len(self.switches)} switches; name one")
            return self.switches[0]
        for s in self.switches:
            if s.name == name:
                return s
        raise TopologyError(f"topology {self.name}: no switch {name!r}")

    @property
    def p4_switches(self) -> tuple[SwitchSpec, ...]:
        """Switches that run innet.p4 (every role but ``hb``)."""
        return tuple(s for s in self.switches if s.role in P4_ROLES)

    def uplink(self, host: str) -> Connection:
        """The NIC link of ``host`` (to its P4 switch; an HB-fabric link is :meth:`hb_link`)."""
        hb = {s.name for s in self.switches if s.role == "hb"}
        for c in self.links:
            if c.a == host and c.b not in hb:
                return c
        raise TopologyError(f"topology {self.name}: host {host!r} has no link")

    def hb_link(self, host: str) -> Connection | None:
        """The HB-fabric link of ``host`` (None outside rail topologies)."""
        hb = {s.name for s in self.switches if s.role == "hb"}
        return next((c for c in self.links if c.a == host and c.b in hb), None)

    def with_link(self, link: Link) -> "Topology":
        """The same topology with ``link`` on every link (e.g. another loss rate)."""
        return replace(self, links=tuple(replace(c, link=link) for c in self.links))

    # -- text and JSON --------------------------------------------------------------------

    def __str__(self) -> str:
        lines = [f"topology {self.name} ({self.kind}): {len(self.workers)} workers, "
                 f"{len(self.switches)} switch{'es' if len(self.switches) != 1 else ''}"]
        for s in self.switches:
            lines.append(f"  switch {s.name} device {s.device_id} ({s.role}) at {s.ip} {s.mac}")
        for c in self.links:
            a = self.host(c.a) if c.a in {h.name for h in self.hosts} else None
            ip = a.hb_ip if a is not None and c == self.hb_link(c.a) else a.ip if a is not None else ""
            who = f"{c.a} {ip} {a.mac} rank {a.rank}" if a is not None else f"{c.a} port {c.a_port}"
            lines.append(f"  {who} <-> {c.b} port {c.b_port}: {c.link.describe()}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The topology's JSON document, as plain data (``format`` first; :meth:`from_dict` reads it)."""
        return {"format": FORMAT, **asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Topology":
        """Inverse of :meth:`to_dict`; unknown keys and a wrong format are errors."""
        if not isinstance(data, Mapping):
            raise TopologyError(f"topology data: expected an object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise TopologyError(f"topology data: format {data.get('format')!r} is not {FORMAT!r}")

        def build(kind: type, item: Any, where: str) -> Any:
            if not isinstance(item, Mapping):
                raise TopologyError(f"topology data: {where} must be an object, got {item!r}")
            known = {f.name for f in fields(kind)}
            unknown = set(item) - known
            if unknown:
                raise TopologyError(f"topology data: {where} has unknown keys {sorted(unknown)} "
                                    f"(known: {sorted(known)})")
            try:
                return kind(**item)
            except TypeError as error:
                raise TopologyError(f"topology data: {where}: {error}") from None

        def items(key: str) -> Sequence[Any]:
            value = body[key]
            if not isinstance(value, (list, tuple)):
                raise TopologyError(f"topology data: {key} must be a list, got {value!r}")
            return value

        def link_of(c: Any, i: int) -> Any:
            link = c.get("link", {}) if isinstance(c, Mapping) else None
            return {**c, "link": build(Link, link, f"links[{i}].link")} if link is not None else c

        body = {k: v for k, v in data.items() if k != "format"}
        unknown = set(body) - {f.name for f in fields(cls)}
        if unknown:
            raise TopologyError(f"topology data: unknown keys {sorted(unknown)}")
        try:
            return cls(
                name=body["name"], kind=body["kind"],
                hosts=tuple(build(HostSpec, h, f"hosts[{i}]") for i, h in enumerate(items("hosts"))),
                switches=tuple(build(SwitchSpec, s, f"switches[{i}]") for i, s in enumerate(items("switches"))),
                links=tuple(build(Connection, link_of(c, i), f"links[{i}]") for i, c in enumerate(items("links"))),
            )
        except KeyError as error:
            raise TopologyError(f"topology data: missing key {error}") from None

    @classmethod
    def from_json(cls, text: str) -> "Topology":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise TopologyError(f"topology JSON: {error}") from None
        return cls.from_dict(data)

    def save(self, path: Path) -> None:
        path.write_text(self.to_json() + "\n")

    @classmethod
    def load(cls, path: Path) -> "Topology":
        try:
            data = path.read_bytes()
        except OSError as error:
            raise TopologyError(f"topology file {str(path)!r}: {error.strerror}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TopologyError(f"topology file {str(path)!r}: not JSON text: byte 0x{data[error.start]:02x} at "
                                f"offset {error.start} is not valid UTF-8") from None
        return cls.from_json(text)


def star(workers: int = 4, link: Link | None = None, subnet: str = "10.0.0.0/24",
         switch_name: str = "s1") -> Topology:
    """One aggregation switch ``s1`` with hosts ``h1..hN`` (ranks 0..N-1) on ports 1..N.

    Host ``hI`` gets the I-th address of ``subnet`` and MAC ``00:00:00:00:00:II`` (as
    Mininet's ``autoSetMacs``); the switch endpoint takes the subnet's last usable address.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or not 2 <= workers <= MAX_WORKERS:
        raise TopologyError(f"star: workers={workers!r} must be an integer within 2..{MAX_WORKERS} "
                            "(the switch bitmap has 32 bits)")
    try:
        net = ipaddress.IPv4Network(subnet)
    except ValueError:
        raise TopologyError(f"star: subnet {subnet!r} is not an IPv4 network") from None
    if net.num_addresses - 2 < workers + 1:
        raise TopologyError(f"star: subnet {subnet} has room for {net.num_addresses - 3} hosts, "
                            f"needs {workers}")
    link = link if link is not None else Link()
    first = net.network_address
    hosts = tuple(HostSpec(name=f"h{i}", ip=f"{first + i}/{net.prefixlen}", mac=f"00:00:00:00:00:{i:02x}",
                           rank=i - 1) for i in range(1, workers + 1))
    sw = SwitchSpec(name=switch_name, ip=str(net.broadcast_address - 1))
    links = tuple(Connection(a=h.name, b=sw.name, b_port=i, link=link) for i, h in enumerate(hosts, start=1))
    return Topology(name=f"star{workers}", kind="star", hosts=hosts, switches=(sw,), links=links)


def _rail_grid(kind: str, domains: int, gpus_per_domain: int, nic_link: Link | None, hb_link: Link | None,
               spine: bool, spine_link: Link | None = None) -> Topology:
    """The x-by-y grid of the Rail-only paper (docs/rail.md): ``domains`` = y HB
    domains of ``gpus_per_domain`` = x GPUs; GPU ``g`` of every domain is on rail ``g``.

    Names and addresses: host ``d<D>g<G>`` (1-based) has global rank ``(D-1)*x + G-1``, NIC
    address ``10.0.0.<rank+1>/24`` and MAC ``00:00:00:00:00:<rank+1>`` (as the star), and HB
    address ``10.1.<D>.<G>/24``. Rail switch ``r<G>`` (device G) has ``10.0.0.<255-G>``, host
    ``d<D>g<G>`` on its port D; the spine ``sp1`` (rail-optimized only) links rail G's port
    y+1 to its port G, at ``y`` times the NIC rate unless ``spine_link`` says otherwise (full
    bisection, as a Clos of more spines would give). HB fabric ``hb<D>`` (role ``hb``) has host ``d<D>g<G>`` on port G.
    """
    for what, value in (("domains", domains), ("gpus_per_domain", gpus_per_domain)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise TopologyError(f"{kind}: {what}={value!r} must be an integer >= 2")
    if domains * gpus_per_domain > MAX_WORKERS:
        raise TopologyError(f"{kind}: domains x gpus_per_domain = {domains} x {gpus_per_domain} = "
                            f"{domains * gpus_per_domain} GPUs, at most {MAX_WORKERS} (the flat job's bitmap)")
    x, y = gpus_per_domain, domains
    nic = nic_link if nic_link is not None else Link()
    hb = hb_link if hb_link is not None else Link()
    hosts = tuple(HostSpec(name=f"d{d}g{g}", ip=f"10.0.0.{(d - 1) * x + g}/24",
                           mac=f"00:00:00:00:00:{(d - 1) * x + g:02x}", rank=(d - 1) * x + g - 1,
                           group=f"hb{d}", hb_ip=f"10.1.{d}.{g}/24")
                  for d in range(1, y + 1) for g in range(1, x + 1))
    rails = tuple(SwitchSpec(name=f"r{g}", device_id=g, role="rail", ip=f"10.0.0.{255 - g}",
                             mac=f"02:00:00:00:01:{g:02x}") for g in range(1, x + 1))
    spines = (SwitchSpec(name="sp1", device_id=x + 1, role="spine", ip=f"10.0.0.{255 - x - 1}",
                         mac="02:00:00:00:02:01"),) if spine else ()
    fabrics = tuple(SwitchSpec(name=f"hb{d}", device_id=100 + d, role="hb", ip=f"10.1.{d}.254",
                               mac=f"02:00:00:00:03:{d:02x}") for d in range(1, y + 1))
    links = [Connection(a=f"d{d}g{g}", b=f"r{g}", b_port=d, link=nic)
             for d in range(1, y + 1) for g in range(1, x + 1)]
    links += [Connection(a=f"d{d}g{g}", b=f"hb{d}", b_port=g, link=hb)
              for d in range(1, y + 1) for g in range(1, x + 1)]
    # Full bisection: a rail's uplink carries what its y GPUs may send to other rails.
    up = spine_link if spine_link is not None else replace(
        nic, bw_mbps=None if nic.bw_mbps is None else min(100_000.0, nic.bw_mbps * y))
    links += [Connection(a=f"r{g}", a_port=y + 1, b="sp1", b_port=g, link=up) for g in range(1, x + 1) if spine]
    return Topology(name=f"{kind}-{y}x{x}", kind=kind, hosts=hosts, switches=rails + spines + fabrics,
                    links=tuple(links))


def rail_only(domains: int = 2, gpus_per_domain: int = 4, nic_link: Link | None = None,
              hb_link: Link | None = None) -> Topology:
    """Rail-only (the Rail-only paper's proposal): one rail switch per GPU rank, no spine; traffic between
    different ranks of different domains must be forwarded through the HB domain."""
    return _rail_grid("rail-only", domains, gpus_per_domain, nic_link, hb_link, spine=False)


def rail_optimized(domains: int = 2, gpus_per_domain: int = 4, nic_link: Link | None = None,
                   hb_link: Link | None = None, spine_link: Link | None = None) -> Topology:
    """Rail-optimized (today's GPU clusters): the rail switches plus a spine ``sp1`` joining
    them, so any GPU reaches any GPU over the NIC domain (``spine_link``: the rail-to-spine
    links; default the NIC link at ``domains`` times its rate)."""
    return _rail_grid("rail-optimized", domains, gpus_per_domain, nic_link, hb_link, spine=True,
                      spine_link=spine_link)


TOPOLOGIES: dict[str, Callable[..., Topology]] = {"star": star, "rail-only": rail_only,
                                                   "rail-optimized": rail_optimized}
"""Generators by ``--topo`` name."""
