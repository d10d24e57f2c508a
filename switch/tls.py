"""TLS for innet-switch's P4Runtime server, configured as simple_switch_grpc is:
``--grpc-server-ssl`` with ``--grpc-server-cert``/``--grpc-server-key`` (PEM), and for
mutual authentication ``--grpc-server-with-client-auth`` with ``--grpc-server-cacert``
(the CA that signs client certificates). Without ``--grpc-server-ssl`` the server is
plaintext, which is only safe on loopback or an isolated testbed network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc


class TlsConfigError(Exception):
    """A TLS file is missing or unreadable, or the options do not go together."""


@dataclass(frozen=True)
class ServerTls:
    """Server side TLS of the P4Runtime server."""

    cert: Path
    """PEM certificate chain of the server (``--grpc-server-cert``)."""
    key: Path
    """PEM private key of the server (``--grpc-server-key``)."""
    cacert: Path | None = None
    """PEM CA certificates that client certificates must chain to (``--grpc-server-cacert``)."""
    client_auth: bool = False
    """Refuse clients without a certificate signed by ``cacert``
    (``--grpc-server-with-client-auth``)."""

    def __post_init__(self) -> None:
        if self.client_auth and self.cacert is None:
            raise TlsConfigError("--grpc-server-with-client-auth needs --grpc-server-cacert "
                                 "(the CA that signs client certificates)")

    def credentials(self) -> grpc.ServerCredentials:
        """gRPC server credentials; TlsConfigError naming the file that cannot be read."""
        key, cert = read_pem(self.key, "--grpc-server-key"), read_pem(self.cert, "--grpc-server-cert")
        ca = read_pem(self.cacert, "--grpc-server-cacert") if self.cacert is not None else None
        return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                           require_client_auth=self.client_auth)


def read_pem(path: Path, flag: str) -> bytes:
    """The bytes of a PEM file; TlsConfigError naming the flag, the path and the problem."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TlsConfigError(f"{flag} {str(path)!r}: {error.strerror}") from None
    if b"-----BEGIN " not in data:
        raise TlsConfigError(f"{flag} {str(path)!r}: not a PEM file (no -----BEGIN line)")
    return data
