"""The top-k ablation: every variant is a valid compression (the int8-activation ones used to
be refused by ``CompressionConfig`` mid-run), and a row saves the keys the documents have."""

from __future__ import annotations

import pytest

from innet.testbed.geo.ablation import AblationRow, main, train, variants


def test_every_variant_builds_and_names_are_unique() -> None:
    vs = variants(0.08)
    assert len({v.name for v in vs}) == len(vs) == 11
    int8_fwd = [v for v in vs if v.name.startswith("activations int8")]
    assert int8_fwd and all(v.fwd is not None and v.fwd.mode == "int8" for v in int8_fwd)


def test_a_trained_row_saves_the_document_keys() -> None:
    row = train(variants(0.08)[0], steps=1, seed=0)
    assert isinstance(row, AblationRow)
    assert list(row.to_json()) == ["variant", "seed", "accuracy", "test_loss", "wall_s"]
    assert row.variant == "dense" and 0.0 <= row.accuracy <= 1.0 and row.test_loss > 0


def test_bad_ratio_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--ratio", "0"]) == 2
    assert capsys.readouterr().err.strip() == "ablation: ratio must be within (0, 1], steps and seeds >= 1"
