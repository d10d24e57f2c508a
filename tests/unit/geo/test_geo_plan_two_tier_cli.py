"""``innet geo plan --two-tier``: OP-Fence beside unclustered search and greedy at 6+ sites,
run as a user runs it (a subprocess), and its bad values (one line, exit status 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from innet.cli import main


def _plan(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "innet.cli", "geo", "plan", "--task", "lm", *argv],
                          capture_output=True, text=True, timeout=300)


def test_two_tier_comparison_prints_three_planners_per_network() -> None:
    proc = _plan("--two-tier", "6:2,9:3")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    blocks = proc.stdout.split("two-tier network, ")[1:]
    assert [b.split(",")[0] for b in blocks] == ["6 sites in 2 groups", "9 sites in 3 groups"]
    six = blocks[0].splitlines()
    assert six[0].endswith("clusters s0,s1,s2; s3,s4,s5")
    rows = {line.split()[0]: line.split() for line in six[2:5]}
    assert sorted(rows) == ["greedy", "opfence", "search"]
    # OP-Fence plans the two clusters as two stages; the others one stage per site
    assert rows["opfence"][1] == "2" and rows["search"][1] == "6" and rows["greedy"][1] == "6"
    assert sorted(rows["opfence"][5::2]) == ["s0+s1+s2", "s3+s4+s5"] and rows["opfence"][3] == "1.00"
    # the relative column is each planner's predicted step over OP-Fence's
    for name in ("search", "greedy"):
        assert float(rows[name][3]) == pytest.approx(float(rows[name][2]) / float(rows["opfence"][2]), abs=0.006)


def test_without_the_flag_no_two_tier_network_is_planned(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["geo", "plan", "--task", "lm", "--batch", "4"]) == 0
    assert "two-tier network" not in capsys.readouterr().out


@pytest.mark.parametrize("value, message", [
    ("7:2", "two-tier network 7:2: needs at least 2 sites in equal groups (7 sites cannot form 2 equal groups)"),
    ("six", "two-tier network 'six': expected SITES[:GROUPS], e.g. 6:2"),
    ("18:3", "two-tier network '18:3': 18 sites is above the 16"),
])
def test_bad_two_tier_value_is_one_line_and_exit_2(value: str, message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["geo", "plan", "--two-tier", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err)


def test_a_model_too_small_for_the_network_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    # the digits MLP has 7 operators besides its loss: 12 one-site stages cannot fit
    assert main(["geo", "plan", "--two-tier", "12:2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("innet geo plan: --two-tier: ") and "12 stages" in err[-1]
