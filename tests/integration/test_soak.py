"""innet.testbed.ina.soak on loopback, briefly: a round of each kind runs, is exact, and is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innet.testbed.ina import soak


@pytest.mark.slow
@pytest.mark.parametrize("restart_every,kind", [(0, "run"), (1, "restart")])
def test_short_soak_round_is_exact(tmp_path: Path, restart_every: int, kind: str) -> None:
    """One round (the time is up after it) of each kind: plain, and a rank killed mid-operation
    with a new worker set attached at once."""
    config = soak.SoakConfig(minutes=0.001, workers=2, loss_pct=5, dup_pct=5, sizes=(300,),
                             restart_every=restart_every, loopback=True, chunk_deadline=10, out=tmp_path)
    lines: list[str] = []
    result = soak.run(config, progress=lines.append)
    assert [(r.kind, r.exact, r.operations, r.note) for r in result.rounds] == [(kind, True, 2, "")]
    assert (result.rounds[0].switch_rss_kb or 0) > 0
    path = soak.save(result, tmp_path)
    saved = json.loads(path.read_text())
    assert saved["summary"]["inexact_rounds"] == [] and saved["rounds"][0]["kind"] == kind
    assert lines[0].startswith(f"round 0 {kind}: 2 ops, exact=True")


def test_config_errors_name_the_option() -> None:
    with pytest.raises(ValueError, match=r"--loss 100 must be within 0..100"):
        soak.SoakConfig(loss_pct=100)
    with pytest.raises(ValueError, match=r"--minutes 0 must be positive"):
        soak.SoakConfig(minutes=0)
    from innet.cli import main

    assert main(["bench", "soak", "--workers", "1", "--backend", "loopback"]) == 2
