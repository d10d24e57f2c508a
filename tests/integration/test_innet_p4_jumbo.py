"""innet.p4's jumbo build (INNET_K=1024: 3075 registers) compiles and lays out its
registers like the smaller ones; ~10 s of front-end and code generation, so it sits
outside the unit tier (tests/unit/test_innet_p4.py builds K=4, 64, 256)."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.frontend import compile_file
from innet.switch.pipeline import Pipeline

PROGRAM = Path(__file__).resolve().parents[2] / "p4" / "innet.p4"


@pytest.mark.slow
def test_builds_with_1024_values_per_packet() -> None:
    k = 1024
    regs = Pipeline(compile_file(str(PROGRAM), defines={"INNET_K": str(k)})).registers
    assert len(regs) == 3 + 3 * k  # bitmap, count, epoch, then acc/param/mom per value
    for i in (0, k - 1):
        for kind in ("acc", "param", "mom"):
            assert f"MyIngress.innet_{kind}_{i}" in regs
    assert f"MyIngress.innet_acc_{k}" not in regs
    assert regs["MyIngress.innet_acc_0"].size == 2 * 1024
    assert regs[f"MyIngress.innet_param_{k - 1}"].size == 4096
