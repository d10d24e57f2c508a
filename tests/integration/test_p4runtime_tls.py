"""gRPC TLS between innet-switch and the controller, with simple_switch_grpc's flags
(--grpc-server-ssl, --grpc-server-cert, --grpc-server-key, --grpc-server-cacert,
--grpc-server-with-client-auth). Certificates come from a throwaway CA made here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from innet.controller.client import P4RuntimeClient
from innet.controller.errors import SwitchUnreachableError
from innet.controller.tls import ClientTls, TlsError
from innet.switch.cli.switch import main as switch_main
from innet.switch.server import SwitchOptions, SwitchServer
from innet.switch.tls import ServerTls

from testkit.fake_target import FakeTarget, sample_p4info

from testkit.tls_certs import Certs, make_certs, make_certs_openssl

PIO = Path(__file__).parent / "clients" / "innet_pio.p4"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("tls"))


def server(tls: ServerTls) -> SwitchServer:
    return SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0", tls=tls), FakeTarget())


def test_tls_connect_arbitrate_and_push(certs: Certs):
    with server(ServerTls(certs.server_cert, certs.server_key)) as switch:
        with P4RuntimeClient(switch.grpc_address, timeout=5, tls=ClientTls(ca_cert=certs.ca)) as client:
            assert client.is_primary
            client.set_pipeline(sample_p4info(), b"prog")
            assert client.get_p4info() == sample_p4info()


def test_plaintext_client_is_refused(certs: Certs):
    with server(ServerTls(certs.server_cert, certs.server_key)) as switch:
        with pytest.raises(SwitchUnreachableError, match=r"no gRPC connection within 1 s"):
            P4RuntimeClient(switch.grpc_address, timeout=1).connect()


def test_client_that_does_not_trust_the_server_is_refused(certs: Certs):
    with server(ServerTls(certs.server_cert, certs.server_key)) as switch:
        with pytest.raises(SwitchUnreachableError, match=r"no TLS gRPC connection within 1 s.*chain to the CA"):
            P4RuntimeClient(switch.grpc_address, timeout=1, tls=ClientTls(ca_cert=certs.other_ca)).connect()


def test_client_auth_needs_a_client_certificate(certs: Certs):
    tls = ServerTls(certs.server_cert, certs.server_key, certs.ca, client_auth=True)
    with server(tls) as switch:
        with pytest.raises(SwitchUnreachableError, match="no TLS gRPC connection"):
            P4RuntimeClient(switch.grpc_address, timeout=1, tls=ClientTls(ca_cert=certs.ca)).connect()
        mutual = ClientTls(ca_cert=certs.ca, cert=certs.client_cert, key=certs.client_key)
        with P4RuntimeClient(switch.grpc_address, timeout=5, tls=mutual) as client:
            assert client.is_primary


def test_client_tls_options_are_checked(certs: Certs, tmp_path: Path):
    with pytest.raises(TlsError, match="a TLS client certificate needs its key"):
        ClientTls(ca_cert=certs.ca, cert=certs.client_cert)
    with pytest.raises(TlsError, match=r"TLS CA certificate '.*missing.crt': No such file"):
        ClientTls(ca_cert=tmp_path / "missing.crt").credentials()


@pytest.mark.parametrize("flags,message", [
    (["--grpc-server-ssl"], "--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key"),
    (["--grpc-server-cert", "{cert}"], "--grpc-server-cert needs --grpc-server-ssl"),
    (["--grpc-server-ssl", "--grpc-server-cert", "{cert}", "--grpc-server-key", "{key}",
      "--grpc-server-with-client-auth"], "--grpc-server-with-client-auth needs --grpc-server-cacert "
     "(the CA that signs client certificates)"),
    (["--grpc-server-ssl", "--grpc-server-cert", "{cert}", "--grpc-server-key", "/nonexistent/key.pem"],
     "--grpc-server-key '/nonexistent/key.pem': no such file"),
])
def test_switch_tls_flag_errors_are_one_line_usage_errors(certs: Certs, capsys, flags, message):
    argv = ["--no-p4", "--grpc-server-addr", "127.0.0.1:0"] + [
        f.format(cert=certs.server_cert, key=certs.server_key) for f in flags]
    assert switch_main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"innet-switch: error: {message}\n"


@pytest.mark.slow
def test_innet_switch_process_with_client_auth_and_innet_cli(certs: Certs):
    cmd = [sys.executable, "-m", "innet.switch.cli.switch", "--no-p4", "--grpc-server-addr", "127.0.0.1:0",
           "--log-level", "warning", "--grpc-server-ssl", "--grpc-server-cert", str(certs.server_cert),
           "--grpc-server-key", str(certs.server_key), "--grpc-server-cacert", str(certs.ca),
           "--grpc-server-with-client-auth"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("innet-switch: P4Runtime listening on "), (line, proc.stderr.read() if proc.poll() else "")
        address = line.rsplit(" ", 1)[1].strip()
        base = [sys.executable, "-m", "innet.cli", "pipeline", "push", str(PIO), "--switch", address,
                "--timeout", "5", "--grpc-ca-cert", str(certs.ca)]
        refused = subprocess.run(base + ["--timeout", "1"], capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and "no TLS gRPC connection" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        pushed = subprocess.run(base + ["--grpc-client-cert", str(certs.client_cert),
                                        "--grpc-client-key", str(certs.client_key)],
                                capture_output=True, text=True, timeout=60)
        assert pushed.returncode == 0, pushed.stderr
        assert pushed.stdout.startswith("pushed innet_pio to ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_certificates_made_with_openssl_work_too(tmp_path: Path):
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("the `openssl` binary is not installed")
    certs = make_certs_openssl(tmp_path)
    tls = ServerTls(certs.server_cert, certs.server_key, certs.ca, client_auth=True)
    with server(tls) as switch:
        mutual = ClientTls(ca_cert=certs.ca, cert=certs.client_cert, key=certs.client_key)
        with P4RuntimeClient(switch.grpc_address, timeout=5, tls=mutual) as client:
            assert client.is_primary
