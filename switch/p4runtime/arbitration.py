"""Client arbitration (P4Runtime spec, "Client Arbitration and Controller Replication").

Pure state machine, no gRPC: streams are opaque hashable client keys. Roles are named
by the ``role.name`` string (P4Runtime 1.3+); an unset role is the default role ``""``.
A ``role.config`` is kept and echoed but not interpreted: innet agrees no role scheme
with its clients, so every role has full pipeline access (what the spec says of an unset
config). Per role, the
primary is the live client whose election id is greater than or equal to the highest
election id ever seen for that role (``election_id_past``). When the primary leaves,
there is no primary until some client sends an id at least that high. Each call returns
the arbitration notifications to send, as ``(client, MasterArbitrationUpdate)`` pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable

import grpc
from finsy.proto import U128, p4r, rpc_status

from innet.switch.p4runtime.errors import P4RuntimeError, invalid, rpc_code_of

Client = Hashable
Notification = tuple[Client, p4r.MasterArbitrationUpdate]


@dataclass
class _Live:
    election_id: int | None
    role_config: p4r.Role | None


@dataclass
class _RoleGroup:
    clients: dict[Client, _Live] = field(default_factory=dict)
    highest: int | None = None
    """Highest election id ever seen for this role (None: never had a primary)."""
    primary: Client | None = None
    role_config: p4r.Role | None = None


@dataclass(frozen=True)
class _Membership:
    role: str


class Arbitrator:
    """Arbitration state of one device: live clients and the primary of each role."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._roles: dict[str, _RoleGroup] = {}
        self._member: dict[Client, _Membership] = {}

    # -- queries -------------------------------------------------------------------------

    def is_primary(self, role: str, election_id: int | None) -> bool:
        """True when ``election_id`` is the current primary's id for ``role``."""
        group = self._roles.get(role)
        if group is None or group.primary is None or election_id is None:
            return False
        return group.clients[group.primary].election_id == election_id

    def is_primary_client(self, client: Client) -> bool:
        """True when ``client`` is the primary of its role."""
        member = self._member.get(client)
        return member is not None and self._roles[member.role].primary == client

    def primary(self, role: str = "") -> Client | None:
        """The primary client of ``role``, if any."""
        group = self._roles.get(role)
        return None if group is None else group.primary

    def has_role(self, role: str) -> bool:
        """True for the default role ``""`` and every role some controller arbitrated for
        (roles are named by the controllers; innet has no out-of-band role list)."""
        return role == "" or role in self._roles

    def is_member(self, client: Client) -> bool:
        """True when ``client`` has sent a successful arbitration update."""
        return client in self._member

    # -- updates -------------------------------------------------------------------------

    def arbitrate(self, client: Client, update: p4r.MasterArbitrationUpdate) -> list[Notification]:
        """Handle an arbitration update received on ``client``'s stream.

        Raises ``P4RuntimeError`` when the stream must end (NOT_FOUND: unknown device;
        INVALID_ARGUMENT: election id in use; FAILED_PRECONDITION: device or role changed).
        """
        role = update.role.name if update.HasField("role") else ""
        election_id = U128.decode(update.election_id) if update.HasField("election_id") else None
        config = update.role if update.HasField("role") and update.role.HasField("config") else None
        member = self._member.get(client)
        if member is None:
            if update.device_id != self.device_id:
                raise P4RuntimeError(
                    grpc.StatusCode.NOT_FOUND,
                    f"arbitration: no device with id {update.device_id} (this switch is device "
                    f"{self.device_id})",
                )
        else:
            if update.device_id != self.device_id:
                raise P4RuntimeError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"arbitration: device id changed from {self.device_id} to {update.device_id} "
                    "on a live stream",
                )
            if role != member.role:
                raise P4RuntimeError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"arbitration: role changed from {member.role!r} to {role!r} on a live "
                    "stream; open a new stream to change role",
                )
        group = self._roles.setdefault(role, _RoleGroup())
        if election_id is not None:
            for other, live in group.clients.items():
                if other != client and live.election_id == election_id:
                    raise invalid(
                        f"arbitration: election id {election_id} is already used by another "
                        f"live controller for device {self.device_id} role {role!r}"
                    )
        was_primary = group.primary == client
        group.clients[client] = _Live(election_id, config)
        self._member[client] = _Membership(role)

        if election_id is not None and (group.highest is None or election_id >= group.highest):
            group.primary = client
            group.highest = election_id
            group.role_config = config
            return self._notify_all(role, group)
        if was_primary:
            group.primary = None
            return self._notify_all(role, group)
        return [(client, self._message(role, group, client))]

    def leave(self, client: Client) -> list[Notification]:
        """Forget a closed stream; notify the others when it was the primary."""
        member = self._member.pop(client, None)
        if member is None:
            return []
        group = self._roles[member.role]
        del group.clients[client]
        if group.primary != client:
            return []
        group.primary = None
        return self._notify_all(member.role, group)

    # -- messages ------------------------------------------------------------------------

    def _notify_all(self, role: str, group: _RoleGroup) -> list[Notification]:
        return [(c, self._message(role, group, c)) for c in group.clients]

    def _message(self, role: str, group: _RoleGroup, client: Client) -> p4r.MasterArbitrationUpdate:
        update = p4r.MasterArbitrationUpdate(device_id=self.device_id)
        if role or group.role_config is not None:
            update.role.name = role
            if group.role_config is not None:
                update.role.CopyFrom(group.role_config)
        if group.highest is not None:
            update.election_id.CopyFrom(U128.encode(group.highest))
        if group.primary == client:
            code, message = grpc.StatusCode.OK, "Is primary"
        elif group.primary is not None:
            code, message = grpc.StatusCode.ALREADY_EXISTS, "Is backup; another controller is primary"
        else:
            code, message = grpc.StatusCode.NOT_FOUND, "No primary controller for this role"
        update.status.CopyFrom(rpc_status.Status(code=rpc_code_of(code), message=message))
        return update
