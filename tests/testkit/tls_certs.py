"""A throwaway CA with a server certificate for 127.0.0.1/localhost and a client
certificate, written as PEM files (tests of TLS). Made with the `cryptography` package,
else with the `openssl` binary; the tests are skipped, naming both, when neither exists."""

from __future__ import annotations

import datetime
import importlib.util
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A second CA that signed nothing here: a client trusting it must refuse the server."""


def make_certs(directory: Path) -> Certs:
    """Certificates made with `cryptography`, or `openssl`, or a skip naming both."""
    if importlib.util.find_spec("cryptography") is not None:
        return make_certs_cryptography(directory)
    if shutil.which("openssl") is not None:
        return make_certs_openssl(directory)
    pytest.skip("neither the `cryptography` package nor the `openssl` binary is available to make a test CA")


def make_certs_openssl(directory: Path) -> Certs:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory, timeout=60)

    def ca(stem: str, cn: str) -> Path:
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{stem}.key", "-out", f"{stem}.crt", "-days", "1", "-subj", f"/CN={cn}")
        return directory / f"{stem}.crt"

    def leaf(stem: str, cn: str, extensions: str) -> tuple[Path, Path]:
        (directory / f"{stem}.ext").write_text(extensions + "\n")
        run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{stem}.key", "-out", f"{stem}.csr", "-subj", f"/CN={cn}")
        run("x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{stem}.crt", "-days", "1", "-extfile", f"{stem}.ext")
        return directory / f"{stem}.crt", directory / f"{stem}.key"

    root, other = ca("ca", "innet test CA"), ca("other-ca", "other CA")
    server = leaf("server", "innet-switch", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                            "extendedKeyUsage=serverAuth")
    client = leaf("client", "innet controller", "extendedKeyUsage=clientAuth")
    return Certs(root, *server, *client, other)


def make_certs_cryptography(directory: Path) -> Certs:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def cert(subject: str, subject_key, issuer: str, issuer_key, ca: bool, sans=(), usage=None):
        builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
                   .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
        if usage is not None:
            builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    def write(path: Path, obj) -> Path:
        if hasattr(obj, "private_bytes"):
            path.write_bytes(obj.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        else:
            path.write_bytes(obj.public_bytes(serialization.Encoding.PEM))
        return path

    ca_key, other_key, server_key, client_key = key(), key(), key(), key()
    ca = cert("innet test CA", ca_key, "innet test CA", ca_key, True)
    other = cert("other CA", other_key, "other CA", other_key, True)
    server = cert("innet-switch", server_key, "innet test CA", ca_key, False,
                  [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")],
                  ExtendedKeyUsageOID.SERVER_AUTH)
    client = cert("innet controller", client_key, "innet test CA", ca_key, False, (),
                  ExtendedKeyUsageOID.CLIENT_AUTH)
    return Certs(write(directory / "ca.crt", ca), write(directory / "server.crt", server),
                 write(directory / "server.key", server_key), write(directory / "client.crt", client),
                 write(directory / "client.key", client_key), write(directory / "other-ca.crt", other))
