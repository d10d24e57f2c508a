"""innet.testbed.impair: the random-drop classic BPF program and the tc commands around it."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from innet.testbed.impair import loss_commands, netem_available, random_drop_bytecode


def _run_cbpf(code: str, random: int) -> int:
    """Interpret the 4-instruction program for one value of the random load."""
    count, *insns = code.split(",")
    prog = [tuple(int(x) for x in i.split()) for i in insns]
    assert int(count) == len(prog)
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = prog[pc]
        if op == 0x20:
            assert k == 0xFFFFF000 + 56  # SKF_AD_OFF + SKF_AD_RANDOM
            acc, pc = random, pc + 1
        elif op == 0x35:
            pc = pc + 1 + (jt if acc >= k else jf)
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")


def test_drops_exactly_below_the_threshold() -> None:
    code = random_drop_bytecode(5.0)
    threshold = int(0.05 * 2**32)
    assert _run_cbpf(code, 0) == 2  # TC_ACT_SHOT
    assert _run_cbpf(code, threshold - 1) == 2
    assert _run_cbpf(code, threshold) == 0  # TC_ACT_OK
    assert _run_cbpf(code, 2**32 - 1) == 0
    assert _run_cbpf(random_drop_bytecode(0.0), 0) == 0


def test_rejects_bad_percentages() -> None:
    with pytest.raises(ValueError, match=r"loss 100%: must be within 0\.\.100"):
        random_drop_bytecode(100)


def test_commands_cover_both_directions() -> None:
    cmds = loss_commands("h1-eth0", 1.0)
    assert cmds[0] == "tc qdisc add dev h1-eth0 clsact"
    assert [c.split()[5] for c in cmds[1:]] == ["ingress", "egress"]


def test_netem_detection_reads_the_kernel_config(tmp_path: Path) -> None:
    config = tmp_path / "config.gz"
    config.write_bytes(gzip.compress(b"CONFIG_NET_SCH_HTB=y\n# CONFIG_NET_SCH_NETEM is not set\n"))
    assert not netem_available(config)
    config.write_bytes(gzip.compress(b"CONFIG_NET_SCH_NETEM=m\n"))
    assert netem_available(config)
