"""``--switch-impl bmv2`` without BMv2: one line naming the missing binary, exit 2, for every
command that starts a switch."""

from __future__ import annotations

import pytest

from innet.cli import main


@pytest.mark.parametrize("argv", [["testbed", "up", "--switch-impl", "bmv2"], ["bench", "--switch-impl", "bmv2"],
                                  ["demo", "--switch-impl", "bmv2"],
                                  ["demo", "--mode", "luwu", "--switch-impl", "bmv2"],
                                  ["train", "--mode", "luwu", "--switch-impl", "bmv2"],
                                  ["train", "--topo", "rail-only", "--switch-impl", "bmv2"],
                                  ["testbed", "up", "--topo", "rail-optimized", "--switch-impl", "bmv2"]])
def test_missing_bmv2_is_one_line(argv, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("INNET_P4_PREFIX", "/nonexistent")  # not this machine's toolchain, if it has one
    monkeypatch.delenv("INNET_BMV2_BIN", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"innet {argv[0] if argv[0] != 'testbed' else 'testbed up'}: bmv2 backend: "
                             "simple_switch_grpc not found on PATH (or INNET_BMV2_BIN) or in /nonexistent/bin: "
                             "install BMv2")


def test_unknown_switch_impl_is_a_usage_error(capsys):
    assert main(["testbed", "up", "--switch-impl", "tofino"]) == 2
    assert "invalid choice: 'tofino'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, wrong", [
    (["testbed", "up", "--backend", "loopback"], "on the loopback testbed: BMv2 has no UDP ports"),
    (["bench", "--backend", "loopback"], "on the loopback testbed: BMv2 has no UDP ports"),
    (["demo", "--backend", "loopback"], "on the loopback testbed: BMv2 has no UDP ports"),
    (["train", "--mode", "luwu", "--backend", "loopback"], "on the loopback testbed: BMv2 has no UDP ports"),
    (["train", "--topo", "rail-only", "--backend", "loopback"], "on the loopback testbed: BMv2 has no UDP ports"),
    (["testbed", "up", "--topo", "rail-optimized", "--backend", "loopback"], "on the loopback testbed: BMv2 has no UDP ports"),
    (["bench", "--topo", "rail-only", "--backend", "loopback"], "on the loopback testbed: BMv2 has no UDP ports"),
])
def test_what_bmv2_cannot_bring_up_is_one_usage_line(argv, wrong, capsys, monkeypatch):
    """Checked before the binaries are looked for: the answer does not depend on the machine."""
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("INNET_P4_PREFIX", "/nonexistent")
    monkeypatch.delenv("INNET_BMV2_BIN", raising=False)
    assert main(argv + ["--switch-impl", "bmv2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and wrong in err[0], err


def test_missing_simple_switch_cli_is_named(tmp_path, capsys, monkeypatch):
    """A testbed's controller needs simple_switch_CLI for registers: its absence is the one line."""
    for name in ("simple_switch_grpc", "p4c-bm2-ss"):
        (tmp_path / name).write_text("#!/bin/sh\nexit 0\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("INNET_P4_PREFIX", "/nonexistent")
    monkeypatch.setenv("INNET_BMV2_BIN", str(tmp_path))
    monkeypatch.setenv("INNET_P4C", str(tmp_path / "p4c-bm2-ss"))
    assert main(["bench", "--switch-impl", "bmv2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("innet bench: bmv2 backend: simple_switch_CLI not found beside "
                                               f"{tmp_path / 'simple_switch_grpc'} or on PATH"), err


def test_bench_with_both_switches_and_no_bmv2_says_so_and_runs_innet(capsys, monkeypatch):
    """``--switch-impl innet,bmv2`` without BMv2: one line saying the bmv2 rows are left out and
    why; the benchmark goes on with innet (stopped here before any testbed starts)."""
    from innet.testbed.ina import bench

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("INNET_P4_PREFIX", "/nonexistent")
    monkeypatch.delenv("INNET_BMV2_BIN", raising=False)
    seen = {}

    def fake_measure(config, progress, absent):  # type: ignore[no-untyped-def]
        seen["impls"], seen["absent"] = config.switch_impls, dict(absent)
        raise SystemExit(0)

    monkeypatch.setattr(bench, "measure", fake_measure)
    with pytest.raises(SystemExit):
        main(["bench", "--switch-impl", "innet,bmv2", "--backend", "mininet", "--workers", "2", "--sizes", "1K"])
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("innet bench: no bmv2 rows: bmv2 backend: simple_switch_grpc not found")
    assert seen["impls"] == ("innet",)
    assert seen["absent"]["bmv2"].startswith("bmv2 backend: simple_switch_grpc not found")


@pytest.mark.parametrize("value", ["tofino", "innet,innet", "", "innet,,tofino"])
def test_bench_switch_impl_list_is_checked(value, capsys):
    assert main(["bench", "--switch-impl", value]) == 2
    assert "--switch-impl" in capsys.readouterr().err


def test_geo_bench_on_bmv2_needs_mininet(capsys):
    assert main(["geo", "bench", "--switch-impl", "bmv2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["innet geo bench: --switch-impl bmv2: BMv2 has no UDP ports, so its site switches run "
                   "in Mininet: add --backend mininet (as root)"]


def test_geo_wan_delay_without_netem_is_refused_on_bmv2():
    """Without netem the WAN delay is innet-switch's port delay stage, which BMv2 lacks."""
    from innet.testbed.core.topology import Link
    from innet.testbed.geo.testbed import bmv2_wan_problem
    from innet.testbed.geo.topology import DEFAULT_SITES, Wan, geo

    delayed = geo()
    undelayed = geo(DEFAULT_SITES, [Wan("a", "b", Link(bw_mbps=10, delay_ms=0)), Wan("b", "c", Link(bw_mbps=100))])
    assert "simple_switch_grpc lacks" in (bmv2_wan_problem(delayed, "switch") or "")
    assert bmv2_wan_problem(delayed, "netem") is None
    assert bmv2_wan_problem(undelayed, "switch") is None
