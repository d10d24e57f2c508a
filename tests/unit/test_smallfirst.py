"""Small frames first (``innet.testbed.backends.mininet.smallfirst``): the classifier's program
and the tc steps, without root. The Mininet tier checks the classes on real links
(tests/mininet/rail/test_rail_testbed.py)."""

from __future__ import annotations

import pytest

from innet.testbed.backends.mininet import smallfirst


def _run_classic_bpf(bytecode: str, frame_len: int) -> int:
    """Evaluates the few classic-BPF instructions the classifier uses (as the kernel would)."""
    count, *lines = bytecode.split(",")
    prog = [tuple(int(x) for x in line.split()) for line in lines]
    assert int(count) == len(prog)
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == 0x80:                       # BPF_LD | BPF_W | BPF_LEN
            acc, pc = frame_len, pc + 1
        elif code == 0x25:                     # BPF_JMP | BPF_JGT | BPF_K
            pc += 1 + (jt if acc > k else jf)
        elif code == 0x06:                     # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


@pytest.mark.parametrize("length, klass", [(42, "5:10"), (66, "5:10"), (128, "5:10"), (129, "5:20"),
                                           (1514, "5:20"), (9014, "5:20")])
def test_the_classifier_sends_only_small_frames_to_the_first_class(length: int, klass: str) -> None:
    major, minor = klass.split(":")
    assert _run_classic_bpf(smallfirst.classifier_bytecode(), length) == int(major, 16) << 16 | int(minor, 16)


def test_both_classes_may_use_the_whole_rate_and_the_first_is_served_first() -> None:
    add_first, add_rest, add_filter = smallfirst.commands("d1g1-eth0", 2.5)
    assert "parent 5:1 classid 5:10" in add_first and "ceil 2.5mbit prio 0" in add_first
    assert "parent 5:1 classid 5:20" in add_rest and "ceil 2.5mbit prio 1" in add_rest
    assert add_filter.startswith("tc filter add dev d1g1-eth0 parent 5: protocol all prio 1 bpf bytecode")


def test_a_tc_failure_names_the_interface_and_tc_s_words() -> None:
    def refuse(command: str) -> str:
        return "Error: Specified class not found." if "classid 5:20" in command else "ok"

    with pytest.raises(smallfirst.SmallFirstError, match=r"small frames first on s1-eth2: `tc class add dev s1-eth2 "
                                                         r"parent 5:1 classid 5:20 .*` failed: Error: Specified class"):
        smallfirst.apply(refuse, "s1-eth2", 10.0)
