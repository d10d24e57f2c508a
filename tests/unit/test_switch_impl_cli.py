"""``--switch-impl bmv2`` without BMv2: one line naming the missing binary, exit 2, for every
command that starts a switch."""

from __future__ import annotations

import pytest

from innet.cli import main


@pytest.mark.parametrize("argv", [["testbed", "up", "--switch-impl", "bmv2"], ["bench", "--switch-impl", "bmv2"],
                                  ["demo", "--switch-impl", "bmv2"]])
def test_missing_bmv2_is_one_line(argv, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("INNET_BMV2_BIN", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"innet {argv[0] if argv[0] != 'testbed' else 'testbed up'}: bmv2 backend: "
                             "simple_switch_grpc not found on PATH (or INNET_BMV2_BIN): install BMv2")


def test_unknown_switch_impl_is_a_usage_error(capsys):
    assert main(["testbed", "up", "--switch-impl", "tofino"]) == 2
    assert "invalid choice: 'tofino'" in capsys.readouterr().err
