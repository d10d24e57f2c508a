"""TLS for the controller's P4Runtime channel: the counterpart of innet-switch's and
simple_switch_grpc's ``--grpc-server-ssl`` (and ``--grpc-server-with-client-auth``).

    SwitchEndpoint("s1", "10.0.0.1:9559", tls=ClientTls(ca_cert=Path("ca.crt"),
               cert=Path("client.crt"), key=Path("client.key")))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from innet.controller.errors import ControllerError


class TlsError(ControllerError):
    """A TLS file is missing or unreadable, or the options do not go together."""


@dataclass(frozen=True)
class ClientTls:
    """How the controller authenticates the switch (and itself) over TLS."""

    ca_cert: Path | None = None
    """PEM CA certificates the switch's certificate must chain to; None: the system's."""
    cert: Path | None = None
    """PEM client certificate, for switches that require client authentication."""
    key: Path | None = None
    """PEM private key of ``cert``."""
    server_name: str | None = None
    """Name to check the switch's certificate against when it differs from the host of
    the address (e.g. a certificate for ``switch1`` reached at 127.0.0.1)."""

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise TlsError("a TLS client certificate needs its key and a key its certificate "
                           f"(got cert={self.cert}, key={self.key})")

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials; TlsError naming the file that cannot be read."""
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca_cert, "CA certificate"),
            private_key=_read(self.key, "client key"),
            certificate_chain=_read(self.cert, "client certificate"))

    def channel_options(self) -> list[tuple[str, str]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


def _read(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TlsError(f"TLS {what} {str(path)!r}: {error.strerror}") from None
    if b"-----BEGIN " not in data:
        raise TlsError(f"TLS {what} {str(path)!r}: not a PEM file (no -----BEGIN line)")
    return data
