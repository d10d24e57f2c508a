"""The stack's P4Runtime keys: a CA of its own, the switch's certificate (for the name
``switch``, the service's name on the overlay) and one client certificate for the controller
and the workers, made with ``openssl`` (Debian's ``openssl`` package).

Why a CA per deployment: the switch requires client certificates
(``--grpc-server-with-client-auth``), so only tasks given the stack's secrets can drive it,
even from another container on the same overlay; the keys never leave the machine that
ran ``innet cluster up`` except as Swarm secrets (encrypted in the managers' Raft log,
mounted in memory in the tasks that name them).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FILES = ("ca.crt", "switch.crt", "switch.key", "client.crt", "client.key")
SWITCH_NAME = "switch"
DAYS = 30


class CertError(RuntimeError):
    """The keys could not be made (names the openssl step and its message)."""


def _openssl(directory: Path, *args: str) -> None:
    try:
        out = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=directory, timeout=60)
    except FileNotFoundError:
        raise CertError("openssl is not installed (Debian: apt-get install openssl)") from None
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise CertError(f"openssl {args[0]} in {directory}: {tail}")


def make_certs(directory: Path) -> Path:
    """CA, switch and client certificates and keys in ``directory`` (kept when all exist)."""
    directory.mkdir(parents=True, exist_ok=True)
    if all((directory / name).is_file() for name in FILES):
        return directory
    if shutil.which("openssl") is None:
        raise CertError("openssl is not installed (Debian: apt-get install openssl)")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(directory, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", str(DAYS),
             "-subj", "/CN=innet cluster CA")
    for stem, cn, ext in (("switch", "innet-switch", f"subjectAltName=DNS:{SWITCH_NAME}\nextendedKeyUsage=serverAuth"),
                          ("client", "innet controller", "extendedKeyUsage=clientAuth")):
        (directory / f"{stem}.ext").write_text(ext + "\n")
        _openssl(directory, "req", "-new", *ec, "-keyout", f"{stem}.key", "-out", f"{stem}.csr", "-subj", f"/CN={cn}")
        _openssl(directory, "x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{stem}.crt", "-days", str(DAYS), "-extfile", f"{stem}.ext")
    for path in directory.iterdir():
        path.chmod(0o600)
    return directory
