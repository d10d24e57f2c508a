"""``--switch-impl bmv2`` through each entry point that starts a switch (``testbed up``, ``bench``,
``demo``), with stand-in binaries: a ``p4c-bm2-ss`` that records its argv and writes innet's
P4Info (same ids as p4c's, by design) next to a JSON stand-in, and a ``simple_switch_grpc``
that records its argv and exits. Each command must compile before any network exists, start
the Mininet switch node with BMv2's command line, report the switch's failure in one line,
exit 1, and leave no interface and no switch process behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from innet.wire import k_for_mtu
from innet.testbed.backends.bmv2 import BMV2_CPU_PORT
from innet.testbed.core.testbed import P4_PROGRAM
from innet.testbed.backends.mininet.clean import innet_interfaces
from innet.testbed.core.topology import star

REPO = Path(__file__).resolve().parents[2]

FAKE_P4C = """#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
Path(os.environ["FAKE_BMV2_LOG"], "p4c.argv").write_text(json.dumps(sys.argv))
defines = dict((d.split("=", 1) + [None])[:2] for d in (args[i + 1] for i, a in enumerate(args) if a == "-D"))
from innet.switch.device_config import build
Path(args[args.index("--p4runtime-files") + 1]).write_text(str(build(args[-1], defines=defines).p4info))
Path(args[args.index("-o") + 1]).write_text('{{"stand-in": "not a BMv2 JSON"}}')
"""

FAKE_SWITCH = """#!{python}
import json, os, sys
from pathlib import Path
Path(os.environ["FAKE_BMV2_LOG"], "switch.argv").write_text(json.dumps(sys.argv))
print("stand-in simple_switch_grpc: no BMv2 here")
sys.exit(3)
"""


@pytest.fixture()
def fakes(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(log directory, environment) with the stand-ins in INNET_BMV2_BIN / INNET_P4C."""
    bin_dir, log_dir = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir()
    log_dir.mkdir()
    for name, text in (("p4c-bm2-ss", FAKE_P4C), ("simple_switch_grpc", FAKE_SWITCH),
                       ("simple_switch_CLI", "#!/bin/sh\nexit 0\n")):
        (bin_dir / name).write_text(text.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, INNET_BMV2_BIN=str(bin_dir), INNET_P4C=str(bin_dir / "p4c-bm2-ss"),
               FAKE_BMV2_LOG=str(log_dir))
    return log_dir, env


def _switch_processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


ENTRY_POINTS = {
    "testbed up": ["testbed", "up", "--workers", "2", "--no-cli"],
    "bench": ["bench", "--workers", "2", "--sizes", "1K", "--skip", "gloo", "--bw", "0"],
    "demo": ["demo", "--workers", "2", "--steps", "1", "--no-gloo"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", list(ENTRY_POINTS))
def test_entry_point_starts_bmv2_node_and_cleans_up(command: str, fakes: tuple[Path, dict[str, str]],
                                                    tmp_path: Path) -> None:
    log_dir, env = fakes
    argv = ENTRY_POINTS[command] + ["--switch-impl", "bmv2"]
    if command != "testbed up":
        argv += ["--out", str(tmp_path / "results")]
    proc = subprocess.run([sys.executable, "-m", "innet.cli", *argv], capture_output=True, text=True,
                          timeout=180, cwd=REPO, env=env)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(err) == 1, proc.stderr
    assert err[0].startswith(f"innet {command}: ")
    assert "switch s1: simple_switch_grpc exited before serving P4Runtime on 127.0.0.1:" in err[0]
    assert "stand-in simple_switch_grpc: no BMv2 here" in err[0]

    p4c_argv = json.loads((log_dir / "p4c.argv").read_text())
    k = k_for_mtu(1500)
    assert p4c_argv[:8] == [env["INNET_P4C"], "--arch", "v1model", "--std", "p4-16", "-D", f"INNET_K={k}", "-o"]
    assert p4c_argv[8].endswith("/bmv2-build/innet.json")
    assert p4c_argv[9:] == ["--p4runtime-files", str(Path(p4c_argv[8]).with_name("p4info.txtpb")),
                            str(P4_PROGRAM)]

    switch_argv = json.loads((log_dir / "switch.argv").read_text())
    topo = star(workers=2)
    ports = [arg for h in topo.workers for arg in ("-i", f"{topo.uplink(h.name).b_port}@s1-eth"
                                                         f"{topo.uplink(h.name).b_port}")]
    assert switch_argv[:3 + len(ports)] == [env["INNET_BMV2_BIN"] + "/simple_switch_grpc", "--device-id",
                                            str(topo.switch().device_id), *ports]
    rest = switch_argv[3 + len(ports):]
    assert rest[0] == "--thrift-port" and rest[1].isdigit()
    assert rest[2:5] == ["--no-p4", "--", "--grpc-server-addr"]
    assert rest[5].startswith("127.0.0.1:") and rest[5].split(":")[1].isdigit() and rest[5].split(":")[1] != rest[1]
    assert rest[6:] == ["--cpu-port", str(BMV2_CPU_PORT)]

    deadline = time.monotonic() + 15
    while (innet_interfaces(["s1"]) or _switch_processes(env["INNET_BMV2_BIN"])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert innet_interfaces(["s1"]) == []
    assert _switch_processes(env["INNET_BMV2_BIN"]) == []


@pytest.mark.slow
def test_bench_innet_rows_run_innet_p4cs_config_when_innet_p4c_names_p4c_bm2_ss(tmp_path: Path) -> None:
    """On a machine with BMv2, ``INNET_P4C`` names p4c-bm2-ss; the innet half of ``innet bench
    --switch-impl innet,bmv2`` must still push innet-p4c's config, not a BMv2 JSON of innet.p4's
    size (10.8 MB, once refused by gRPC's 4 MiB limit as RESOURCE_EXHAUSTED)."""
    from testkit.fake_p4c import fake_p4c_bm2_ss

    p4c = fake_p4c_bm2_ss(tmp_path / "bin", json_bytes=10_807_613)
    env = dict(os.environ, INNET_P4C=str(p4c))
    out = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "innet.cli", "bench", "--switch-impl", "innet", "--workers", "2",
                           "--sizes", "1K", "--repeats", "1", "--skip", "gloo", "--bw", "0", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = out.glob("bench-*.json")
    doc = json.loads(path.read_text())
    assert doc["backend"] == "mininet"
    assert [(r["switch_impl"], r["workers"], r["ok"]) for r in doc["rows"]] == [("innet", 2, True)]
    assert innet_interfaces(["s1"]) == []
