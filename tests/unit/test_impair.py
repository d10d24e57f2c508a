"""innet.testbed.backends.mininet.impair: the random-drop and random-match classic BPF programs behind link
loss and duplication, the tc commands around them, and the kernel-config preconditions."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from innet.testbed.backends.mininet.impair import (CLS_MATCH, CLS_NO_MATCH, cls_bpf_available, duplication_available, impair_commands, kernel_option, loss_commands, netem_available, random_drop_bytecode, random_match_bytecode)


def _run_cbpf(code: str, random: int) -> int:
    """Interpret a 4-instruction ld-random / jge / ret / ret program for one random value."""
    count, *insns = code.split(",")
    prog = [tuple(int(x) for x in i.split()) for i in insns]
    assert int(count) == len(prog) == 4
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = prog[pc]
        if op == 0x20:
            assert k == 0xFFFFF000 + 56
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


def test_matches_exactly_below_the_threshold() -> None:
    code = random_match_bytecode(5.0)
    threshold = int(0.05 * 2**32)
    assert _run_cbpf(code, 0) == CLS_MATCH == 0xFFFFFFFF
    assert _run_cbpf(code, threshold - 1) == CLS_MATCH
    assert _run_cbpf(code, threshold) == CLS_NO_MATCH == 0
    assert _run_cbpf(code, 2**32 - 1) == CLS_NO_MATCH
    assert _run_cbpf(random_match_bytecode(0.0), 0) == CLS_NO_MATCH
    with pytest.raises(ValueError, match=r"duplication 100%: must be within 0\.\.100"):
        random_match_bytecode(100)


def test_duplicate_filters_run_before_the_drop_on_both_hooks() -> None:
    cmds = impair_commands("h1-eth0", loss_pct=5, dup_pct=5)
    assert cmds[0] == "tc qdisc add dev h1-eth0 clsact"
    dup, drop = cmds[1:3], cmds[3:5]
    for hook, cmd in zip(("ingress", "egress"), dup):
        assert cmd.startswith(f"tc filter add dev h1-eth0 {hook} prio 1 bpf bytecode '{random_match_bytecode(5)}'")
        # mirrored back into the same hook, then the next filter (the drop) still runs
        assert cmd.endswith(f"action mirred {hook} mirror dev h1-eth0 continue")
    assert drop == [f"tc filter add dev h1-eth0 {hook} prio 2 bpf da bytecode '{random_drop_bytecode(5)}'"
                    for hook in ("ingress", "egress")]
    assert impair_commands("h1-eth0", loss_pct=1) == [cmds[0]] + [
        c.replace(random_drop_bytecode(5), random_drop_bytecode(1)) for c in drop]
    assert [c.split()[5] for c in impair_commands("h2-eth0", dup_pct=1)[1:]] == ["ingress", "egress"]


def test_preconditions_read_the_kernel_config(tmp_path: Path) -> None:
    config = tmp_path / "config.gz"
    config.write_bytes(gzip.compress(b"CONFIG_NET_SCH_INGRESS=y\nCONFIG_NET_CLS_BPF=m\n"
                                     b"# CONFIG_NET_ACT_MIRRED is not set\nCONFIG_NET_ACT_MIRRED_X=y\n"))
    assert kernel_option("CONFIG_NET_CLS_BPF", config) is True
    assert kernel_option("CONFIG_NET_ACT_MIRRED", config) is False
    assert cls_bpf_available(config) and not duplication_available(config)
    config.write_bytes(gzip.compress(b"CONFIG_NET_SCH_INGRESS=y\n# CONFIG_NET_CLS_BPF is not set\n"))
    assert not cls_bpf_available(config)
    missing = tmp_path / "absent.gz"
    assert kernel_option("CONFIG_NET_CLS_BPF", missing) is None
    assert cls_bpf_available(missing) and duplication_available(missing)  # unknown: try, tc names the failure
