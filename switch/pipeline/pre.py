"""Packet replication engine: multicast groups, nodes and clone (mirroring) sessions.

Mirrors BMv2's ``mc_mgrp_create``/``mc_node_create``/``mc_node_associate`` model: a node
is ``(rid, ports)``, a group holds node handles; handles count from 0. A clone session
sends its copies to one port, or to a multicast group when ``mcast_grp`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ControlPlaneError


@dataclass(slots=True)
class McNode:
    """A multicast node: replication id and egress ports."""

    rid: int
    ports: list[int]


@dataclass(slots=True)
class CloneSession:
    """A mirroring session: egress port, or a multicast group when ``mcast_grp`` != 0."""

    port: int | None = None
    mcast_grp: int = 0
    truncate: int = 0  # bytes kept of each clone (0 = whole packet)


@dataclass
class ReplicationEngine:
    """Multicast groups, nodes and clone sessions of one switch."""

    nodes: dict[int, McNode] = field(default_factory=dict)
    groups: dict[int, list[int]] = field(default_factory=dict)
    sessions: dict[int, CloneSession] = field(default_factory=dict)
    _next_node: int = 0

    def group_create(self, grp: int) -> None:
        """Create an empty multicast group ``grp``."""
        if grp in self.groups:
            raise ControlPlaneError(f"multicast group {grp} already exists")
        self.groups[grp] = []

    def group_delete(self, grp: int) -> None:
        """Delete group ``grp`` (its nodes stay)."""
        if self.groups.pop(grp, None) is None:
            raise ControlPlaneError(f"no multicast group {grp}")

    def node_create(self, rid: int, ports: list[int]) -> int:
        """Create a node and return its handle (0, 1, ...)."""
        h = self._next_node
        self._next_node += 1
        self.nodes[h] = McNode(rid, list(ports))
        return h

    def node_update(self, handle: int, ports: list[int]) -> None:
        """Replace the ports of node ``handle``."""
        self._node(handle).ports = list(ports)

    def node_delete(self, handle: int) -> None:
        """Delete a node and remove it from every group."""
        self._node(handle)
        del self.nodes[handle]
        for members in self.groups.values():
            if handle in members:
                members.remove(handle)

    def _node(self, handle: int) -> McNode:
        node = self.nodes.get(handle)
        if node is None:
            raise ControlPlaneError(f"no multicast node with handle {handle}")
        return node

    def node_associate(self, grp: int, handle: int) -> None:
        """Add node ``handle`` to group ``grp``."""
        self._node(handle)
        if grp not in self.groups:
            raise ControlPlaneError(f"no multicast group {grp}")
        if handle not in self.groups[grp]:
            self.groups[grp].append(handle)

    def node_dissociate(self, grp: int, handle: int) -> None:
        """Remove node ``handle`` from group ``grp``."""
        if handle not in self.groups.get(grp, []):
            raise ControlPlaneError(f"node {handle} is not in multicast group {grp}")
        self.groups[grp].remove(handle)

    def set_group(self, grp: int, replicas: list[tuple[int, int]]) -> None:
        """P4Runtime-style: set group ``grp`` to ``(rid, port)`` replicas (one node per rid)."""
        for h in self.groups.get(grp, []):
            self.nodes.pop(h, None)
        self.groups[grp] = []
        by_rid: dict[int, list[int]] = {}
        for rid, port in replicas:
            by_rid.setdefault(rid, []).append(port)
        for rid, ports in by_rid.items():
            self.groups[grp].append(self.node_create(rid, ports))

    def replicas(self, grp: int) -> list[tuple[int, int]]:
        """``(rid, port)`` copies for group ``grp`` in node order; [] for an unknown group."""
        out = []
        for h in self.groups.get(grp, ()):
            node = self.nodes[h]
            for p in node.ports:
                out.append((node.rid, p))
        return out

    def mirroring_add(self, session: int, port: int) -> None:
        """Clone session ``session`` sends to ``port``."""
        self.sessions[session] = CloneSession(port=port)

    def mirroring_add_mc(self, session: int, grp: int) -> None:
        """Clone session ``session`` replicates to multicast group ``grp``."""
        self.sessions[session] = CloneSession(mcast_grp=grp)

    def mirroring_delete(self, session: int) -> None:
        """Remove clone session ``session``."""
        if self.sessions.pop(session, None) is None:
            raise ControlPlaneError(f"no clone session {session}")
