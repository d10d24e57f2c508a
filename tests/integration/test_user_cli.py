"""Commands exactly as a user types them (the installed ``innet``, ``innet-p4c``,
``innet-switch`` and ``innet-stf`` scripts as subprocesses): the one line and the exit
status of each mistake, said before any work starts, and the help that answers the
questions a first hour asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(script: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / script), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def help_text(*words: str) -> str:
    result = run("innet", *words, "--help")
    assert result.returncode == 0, result.stderr
    return " ".join(result.stdout.split())


@pytest.mark.parametrize("words", [("train",), ("bench",), ("model", "cost"), ("bench", "pipeline")])
def test_an_unwritable_out_is_refused_before_any_work(words: tuple[str, ...]) -> None:
    result = run("innet", *words, "--out", "/proc/innet-results")
    assert result.returncode == 2 and result.stdout == ""
    assert one_line(result).startswith(f"innet {' '.join(words)}: error: --out '/proc/innet-results': "
                                       "not a writable directory (")


def test_out_is_created_when_missing(tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir"
    result = run("innet", "model", "cost", "--gpus", "16384", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert out.is_dir() and any(out.iterdir())


@pytest.mark.parametrize("args, line", [
    (["train", "--mode", "luwu", "--topo", "rail-only"],
     "innet train: error: --topo does not apply to --mode luwu (a star of PyTorch workers and optimizer nodes)"),
    (["train", "--mode", "luwu", "--executor", "python"],
     "innet train: error: --executor does not apply to --mode luwu (a star of PyTorch workers and optimizer nodes)"),
    (["demo", "--topo", "rail-only", "--workers", "8"],
     "innet demo: error: --workers does not apply to --topo rail-only (--domains x --gpus-per-domain GPUs, "
     "hierarchical INA)"),
    (["demo", "--topo", "rail-optimized", "--no-gloo"],
     "innet demo: error: --no-gloo does not apply to --topo rail-optimized (--domains x --gpus-per-domain GPUs, "
     "hierarchical INA)"),
    (["train", "--domains", "3"], "innet train: error: --domains does not apply to --topo star (give --workers)"),
    (["testbed", "up", "--topo", "rail-only", "--workers", "8"],
     "innet testbed up: error: --workers does not apply to --topo rail-only (--domains x --gpus-per-domain GPUs)"),
    (["testbed", "up", "--backend", "loopback", "--link-loss", "5"],
     "innet testbed up: error: --link-loss does not apply on loopback (UDP ports, no links to shape; Mininet needs "
     "root)"),
    (["testbed", "up", "--runtime", "docker", "--topo", "rail-only"],
     "innet testbed up: error: --topo does not apply to --runtime docker (the compose services; give --workers)"),
    (["bench", "--backend", "loopback", "--bw", "100"],
     "innet bench: error: --bw does not apply on loopback (UDP ports, no links to shape; Mininet needs root)"),
    (["bench", "--topo", "rail-only", "--loss", "1"],
     "innet bench: error: --loss does not apply to --topo rail-only (--domains x --gpus-per-domain GPUs on "
     "shaped rail links)"),
])
def test_a_flag_the_mode_would_ignore_is_an_error(args: list[str], line: str) -> None:
    result = run("innet", *args)
    assert (result.returncode, one_line(result)) == (2, line)


def test_a_bench_option_before_a_benchmark_name_is_an_error() -> None:
    result = run("innet", "bench", "--workers", "2", "luwu", "--steps", "5")
    assert (result.returncode, one_line(result)) == (
        2, "innet bench luwu: error: --workers comes before luwu, so it is innet bench's own option, not luwu's: "
           "give it after the name")


@pytest.mark.parametrize("words", [("model", "iteration"), ("model", "traffic")])
def test_hb_size_has_no_short_form_beside_k(words: tuple[str, ...]) -> None:
    """``-k`` is values per packet everywhere; the HB domain size is only ``--hb-size``."""
    result = run("innet", *words, "-K", "8")
    assert result.returncode == 2 and "unrecognized arguments: -K 8" in result.stderr
    text = help_text(*words)
    assert "--hb-size" in text and "-K" not in text


def test_version() -> None:
    result = run("innet", "--version")
    assert result.returncode == 0 and result.stdout.startswith("innet ") and result.stdout.split()[1][0].isdigit()


@pytest.mark.parametrize("words, option, says", [
    (("job", "create"), "--slot-base", "first slot of the job's range (default: 0)"),
    (("job", "create"), "--lr", "sgd/momentum: learning rate (default: 0.0)"),
    (("job", "create"), "-k", "values per packet (default: the pipeline's INNET_K, read from its P4Info)"),
    (("pipeline", "push"), "-D", "define a preprocessor macro, e.g. -D INNET_K=256 (repeatable)"),
    (("params", "load"), "--job", "job id (the innet header's job field)"),
    (("bench", "luwu"), "--workers", "worker counts, one run each, e.g. 2,4,8 (each 2..31) (default: 2,4,8)"),
    (("bench", "luwu"), "--steps", "timed steps after the warm-up (at least 3) (default: 20)"),
    (("bench", "soak"), "--minutes", "how long rounds repeat (default: 10.0)"),
    (("testbed", "up"), "--link-loss", "netem when the kernel has it, else a cls_bpf random drop"),
    (("conformance",), "--executor", "(default: python)"),
])
def test_help_says_what_an_option_does_and_its_default(words: tuple[str, ...], option: str, says: str) -> None:
    text = help_text(*words)
    assert option in text and says in text


def test_switch_impl_choices_are_listed_once() -> None:
    text = help_text("geo", "bench")
    assert "{innet,bmv2,innet,bmv2}" not in text and "--switch-impl IMPL[,IMPL]" in text


def test_innet_stf_and_conformance_default_to_the_same_executor() -> None:
    result = run("innet-stf", "--help")
    assert result.returncode == 0 and "(default: python)" in " ".join(result.stdout.split())


def test_old_backend_spellings_still_work_and_say_they_are_deprecated() -> None:
    result = run("innet", "bench", "luwu", "--loopback", "--steps", "2")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "innet bench luwu: warning: --loopback is deprecated; use --backend loopback",
        "innet bench luwu: --steps 2: must be >= 3 (timed steps after the warm-up)"]


def test_a_missing_semicolon_is_said_where_it_is_missing(tmp_path: Path) -> None:
    source = tmp_path / "prog.p4"
    source.write_text("#include <core.p4>\nheader ethernet_t { bit<48> dstAddr; bit<48> srcAddr; }\n"
                      "struct headers { ethernet_t ethernet; }\n"
                      "control C(inout headers hdr) {\n    apply {\n"
                      "        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr\n"
                      "        hdr.ethernet.dstAddr = 1;\n    }\n}\n")
    result = run("innet-p4c", str(source), "-o", str(tmp_path / "out"))
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (f"{source}:6:52: error: syntax error: expected ';' after 'dstAddr' "
                                             "(the next line starts with 'hdr')")


def test_innet_switch_given_a_p4info_names_the_device_config(tmp_path: Path) -> None:
    build = tmp_path / "build"
    assert run("innet-p4c", str(ROOT / "p4" / "examples" / "basic_forward.p4"), "-o", str(build)).returncode == 0
    result = run("innet-switch", str(build / "p4info.txtpb"))
    assert result.returncode == 2
    assert one_line(result) == (f"innet-switch: error: program '{build / 'p4info.txtpb'}' is a P4Info file, not a "
                                f"program: give the device config beside it ({build / 'basic_forward.innet.json'}) "
                                "or a P4 source file")


def test_an_empty_range_is_refused() -> None:
    result = run("innet", "inspect", "--switch", "127.0.0.1:1", "--register", "innet_count", "--range", "5:2")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == ("innet inspect: error: argument --range: '5:2' is empty: A:B means "
                                              "indices A..B-1, so B must exceed A")


def test_piped_tables_keep_every_cell(tmp_path: Path) -> None:
    result = run("innet", "model", "cost", "--gpus", "16384", "--out", str(tmp_path))
    assert result.returncode == 0 and "\u2026" not in result.stdout and "switches per tier RO" in result.stdout


def interrupt_when(args: list[str], marker: str, env: dict[str, str] | None = None,
                   delay: float = 0.0) -> tuple[int, str]:
    """Run ``innet ARGS``, Ctrl-C its process group (as a terminal does) ``delay`` seconds after
    a line starts with ``marker``; (exit status, stderr)."""
    import signal
    import time

    proc = subprocess.Popen([str(BIN / "innet"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        deadline, seen = time.monotonic() + 240, []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, f"innet {' '.join(args)} ended early: {''.join(seen)}"
            seen.append(line)
            if line.startswith(marker):
                break
        else:
            raise AssertionError(f"no line {marker!r} within the deadline: {''.join(seen)}")
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in err
    return proc.returncode, err


@pytest.mark.slow
def test_ctrl_c_in_bench_writes_the_partial_results(tmp_path: Path) -> None:
    """Ctrl-C while the second worker count runs: one line, the first count's rows saved and
    marked partial, the testbed torn down (its run directory gone)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the testbed's state directory lives under it
    rc, err = interrupt_when(["bench", "--backend", "loopback", "--workers", "2,3", "--sizes", "1K", "--repeats", "1",
                              "--skip", "gloo", "--out", str(tmp_path / "out")], "ina: 3 workers", env)
    (saved,) = (tmp_path / "out").glob("bench-*.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet bench: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and [(r["workers"], r["ok"]) for r in doc["rows"]] == [(2, True)]
    assert not any((tmp_path / f"innet-testbed-{os.getuid()}").glob("*/owner"))  # torn down


@pytest.mark.slow
def test_ctrl_c_in_rail_bench_writes_the_partial_results(tmp_path: Path) -> None:
    rc, err = interrupt_when(["bench", "--topo", "rail-only", "--backend", "loopback", "--sizes", "1K", "--repeats",
                              "1", "--skip", "gloo", "--out", str(tmp_path)], "hierarchical ring")
    (saved,) = tmp_path.glob("rail-bench-*.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet bench: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and [r["collective"] for r in doc["rows"]] == ["hierarchical INA"]


@pytest.mark.slow
def test_ctrl_c_in_train_writes_the_steps_done(tmp_path: Path) -> None:
    rc, err = interrupt_when(["train", "--backend", "loopback", "--workers", "2", "--steps", "1000000", "--out",
                              str(tmp_path)], "job ", delay=3.0)
    (saved,) = tmp_path.glob("train-*-partial.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet train: interrupted; partial results in {saved} (the steps before Ctrl-C)"])
    training = json.loads(saved.read_text())["training"]
    done = training["steps_done_per_worker"]
    assert len(done) == 2 and min(done) > 0 and len(training["loss_curve"]) == min(done)


@pytest.mark.slow
def test_ctrl_c_in_bench_luwu_writes_the_modes_done(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch (the LuWu benchmark's workers) is not installed")
    rc, err = interrupt_when(["bench", "luwu", "--workers", "2", "--steps", "3", "--warmup", "1", "--modes", "ddp-gloo",
                              "luwu", "--out", str(tmp_path)], "N=2")
    (saved,) = tmp_path.glob("bench_luwu-*.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet bench luwu: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and [(r["workers"], r["mode"]) for r in doc["rows"]] == [(2, "ddp-gloo")]


@pytest.mark.slow
def test_ctrl_c_in_geo_bench_writes_the_runs_before_it(tmp_path: Path) -> None:
    """Ctrl-C while the second run trains: the first run's row saved and marked partial, one line."""
    rc, err = interrupt_when(["geo", "bench", "--runs", "naive/none,greedy/none", "--steps", "10", "--eval-every", "5",
                              "--out", str(tmp_path)], "training greedy")
    (saved,) = tmp_path.glob("geo-bench-*.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet geo bench: interrupted; partial results in {saved} (the runs before Ctrl-C)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and [(r["placement"], r["compression"]) for r in doc["rows"]] == [("naive", "none")]


def test_innet_switch_names_the_users_source_in_a_compile_error(tmp_path: Path) -> None:
    source = tmp_path / "prog.p4"
    source.write_text("typedef bit<48> macAddr_t;\nheader ethernet_t {\n    macAddr_t dstAddr\n"
                      "    macAddr_t srcAddr;\n}\n")
    result = run("innet-switch", str(source), "--log-level", "error")
    assert result.returncode == 2 and "/innet-switch-" not in result.stderr
    assert f"cannot compile the program: {source}:3:22: error: syntax error: expected ';' after 'dstAddr'" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("words", [("train",), ("demo", "--no-gloo", "--sizes", "1K")])
def test_loopback_asked_for_is_not_blamed_on_root_and_gets_the_usual_port(words: tuple[str, ...],
                                                                         tmp_path: Path) -> None:
    """``--backend loopback`` is the user's choice, not a fallback: no "not root" (as root or
    not); the switch on P4Runtime 9559 as ``testbed up`` puts it, or a line saying which port
    instead (another testbed holds 9559)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    result = subprocess.run([str(BIN / "innet"), *words, "--backend", "loopback", "--workers", "2", "--steps", "2",
                             "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert "not root" not in result.stdout + result.stderr
    assert "on loopback (loopback, innet-switch UDP ports on 127.0.0.1" in result.stdout
    import re

    port = int(re.search(r"\(P4Runtime 127\.0\.0\.1:(\d+)\)", result.stdout).group(1))  # type: ignore[union-attr]
    assert port == 9559 or f"switch s1: P4Runtime port 9559 is taken; using {port}" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, marker, saved_name, rows_key, done", [
    (["bench", "agent", "-k", "64", "--values", str(1 << 20), "--rounds", "40"], "K=64, native datapath", "bench_agent.json",
     "rows", [{"k": 64, "datapath": "python"}]),
    (["bench", "pipeline", "--only", "basic_forward", "--only", "agg64", "--seconds", "3"], "agg64",
     "bench_pipeline.json", "results", [{"workload": "basic_forward"}]),
    (["bench", "luwu-node", "--params", str(4 << 20), "--steps", "5"], "adamw: node and torch",
     "bench_luwu_node.json", "rows", [{"optimizer": "adam"}]),
])
def test_ctrl_c_in_a_named_bench_writes_the_points_done(args: list[str], marker: str, saved_name: str,
                                                        rows_key: str, done: list[dict[str, object]],
                                                        tmp_path: Path) -> None:
    """Ctrl-C while the second point runs: the first point's row saved, marked partial; one line."""
    if args[1] == "luwu-node":
        pytest.importorskip("torch", reason="torch (the optimizer node's reference) is not installed")
    rc, err = interrupt_when([*args, "--out", str(tmp_path)], marker)
    saved = tmp_path / saved_name
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet {' '.join(args[:2])}: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True
    assert [{key: row[key] for key in want} for row, want in zip(doc[rows_key], done)] == done
    assert len(doc[rows_key]) == len(done)


def test_conformance_keeps_the_suites_own_warnings_for_verbose() -> None:
    """literal_wrap.p4 wraps literals on purpose: its front-end warnings show with -v only."""
    suite = str(ROOT / "tests" / "conformance" / "expressions")
    quiet = run("innet", "conformance", suite)
    loud = run("innet", "conformance", "-v", suite)
    assert (quiet.returncode, quiet.stderr) == (0, "")
    assert loud.returncode == 0 and "literal_wrap.p4:22:26: warning: operand of '/'" in loud.stderr


@pytest.mark.slow
def test_ctrl_c_in_conformance_summarises_what_ran() -> None:
    """Ctrl-C a few seconds into the STF suites: the table and counts of the tests that ran, one line, 130."""
    import signal
    import time

    proc = subprocess.Popen([str(BIN / "innet"), "conformance"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("running ") and first.endswith(" STF tests on the python executor\n"), first
        planned = int(first.split()[1])
        time.sleep(3.0)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, err.strip().splitlines()) == (130, ["innet conformance: interrupted"])
    summary = out.strip().splitlines()[-1]
    passed, failed, ran = (int(summary.split()[i].lstrip("(")) for i in (0, 2, 4))
    assert summary.endswith(f"({ran} of {planned} tests ran before Ctrl-C)")
    assert 0 < ran < planned and passed + failed == ran


@pytest.mark.slow
def test_ctrl_c_in_bench_soak_writes_the_rounds_done(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the testbed's state directory lives under it
    rc, err = interrupt_when(["bench", "soak", "--backend", "loopback", "--workers", "2", "--minutes", "5",
                              "--out", str(tmp_path / "out")], "round 1 ", env)
    (saved,) = (tmp_path / "out").glob("soak-*.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet bench soak: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and [r["index"] for r in doc["rounds"]][:2] == [0, 1]
    assert not any((tmp_path / f"innet-testbed-{os.getuid()}").glob("*/owner"))  # torn down


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the packet runs of bench p4runtime need root (namespaces, veths)")
def test_ctrl_c_in_bench_p4runtime_writes_the_runs_done(tmp_path: Path) -> None:
    """Ctrl-C during the second packet run: the Write rows and the first run kept, marked partial."""
    rc, err = interrupt_when(["bench", "p4runtime", "--write-rounds", "1", "--max-seconds", "1", "--rates",
                              "0,10000", "--seconds", "20", "--out", str(tmp_path)], "packets, 10000 pkt/s")
    saved = tmp_path / "bench_p4runtime.json"
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet bench p4runtime: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and [r["batch"] for r in doc["writes"]] == [1, 1, 1000, 1000]
    assert [r["offered_pkt_per_s"] for r in doc["packets"]] == ["max"]  # rate 0: as fast as it goes


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="bench veth needs root (a veth pair in a namespace)")
def test_ctrl_c_in_bench_veth_keeps_the_complete_workloads(tmp_path: Path) -> None:
    """Ctrl-C during the second workload: the first one's row kept, marked partial, veths gone."""
    rc, err = interrupt_when(["bench", "veth", "--seconds", "2", "--only", "basic_forward", "--only", "agg64",
                              "--out", str(tmp_path)], "agg64: reflector ceiling")
    saved = tmp_path / "bench_veth.json"
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet bench veth: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and [r["workload"] for r in doc["rows"]] == ["basic_forward"]
    assert "innet-bv" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.mark.slow
def test_ctrl_c_in_bench_rail_failover_writes_the_runs_done(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the testbed's state directory lives under it
    rc, err = interrupt_when(["bench", "rail-failover", "--backend", "loopback", "--steps", "60", "--kill-at", "5",
                              "100", "--spare", "cold", "--deadline", "5", "--out", str(tmp_path / "out")],
                             "cold spare, kill at 100", env)
    (saved,) = (tmp_path / "out").glob("rail-failover-*.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet bench rail-failover: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and doc["model_exact"] is True and len(doc["rows"]) == 1
    assert not any((tmp_path / f"innet-testbed-{os.getuid()}").glob("*/owner"))  # torn down


@pytest.mark.slow
def test_ctrl_c_in_rail_train_writes_the_stage_reached(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the testbed's state directory lives under it
    rc, err = interrupt_when(["train", "--topo", "rail-only", "--backend", "loopback", "--domains", "2",
                              "--gpus-per-domain", "2", "--steps", "100000", "--out", str(tmp_path / "out")],
                             "up: P4Runtime", env, delay=2.0)
    (saved,) = (tmp_path / "out").glob("rail-train-rail-only-partial-*.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet train: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and doc["stage"] == "training" and doc["config"]["steps"] == 100000
    assert not any((tmp_path / f"innet-testbed-{os.getuid()}").glob("*/owner"))  # torn down


@pytest.mark.slow
def test_ctrl_c_in_luwu_train_writes_the_stage_reached(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch (the LuWu workers) is not installed")
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the testbed's state directory lives under it
    rc, err = interrupt_when(["train", "--mode", "luwu", "--backend", "loopback", "--workers", "2", "--steps", "5000",
                              "--out", str(tmp_path / "out")], "up: P4Runtime", env, delay=1.0)
    (saved,) = (tmp_path / "out").glob("demo-luwu-*-partial.json")
    assert (rc, err.strip().splitlines()) == (
        130, [f"innet train: interrupted; partial results in {saved} (marked \"partial\": true)"])
    doc = json.loads(saved.read_text())
    assert doc["partial"] is True and doc["stage"] == "luwu" and len(doc["loss"]["local"]) == 5000
    assert not any((tmp_path / f"innet-testbed-{os.getuid()}").glob("*/owner"))  # torn down
