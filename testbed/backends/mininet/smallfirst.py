"""Small frames first on HTB-shaped links: TCP's acknowledgements do not wait behind data.

Why: Mininet shapes a link with one HTB class (``5:1``) whose queue is a 1000-frame FIFO.
At the testbed's rates (0.5-1000 Mbit/s instead of a cluster's 100-400 Gbit/s) that FIFO
holds up to seconds of data, and when a host sends and receives at once (an all-to-all, a
ring) the ACKs of the flow it receives queue behind the data it sends. The other side's
TCP then waits for them and leaves its own link idle. Measured on a two-host Mininet link
(2 Mbit/s, 200 kB each way, docs/rail.md): one way alone 0.82 s (0.80 s at line rate);
both ways at once, the slower side 0.91-1.31 s. With small frames first, both ways take
0.78-0.84 s. Without fq, fq_codel, prio or netem in the kernel, this is done with HTB
itself.

How: the interface's class ``5:1`` (the link's rate) gets two children, ``5:10`` (priority
0) and ``5:20`` (priority 1), both allowed the whole rate; a classic-BPF ``cls_bpf``
classifier on the root sends frames of at most :data:`SMALL_BYTES` bytes (pure ACKs, SYNs,
ARP) to ``5:10`` and every other frame to ``5:20``. HTB serves priority 0 first when both
have frames, so the link's rate and its data queue are unchanged; only the order is.
"""

from __future__ import annotations

from typing import Callable

from innet.testbed.backends.mininet.htb import RATE_CLASS

SMALL_BYTES = 128
"""Frames up to this length (an Ethernet + IPv4 + TCP ACK with options is 66-86 bytes) go first."""
FIRST, REST = 0x50010, 0x50020
"""Class ids ``5:10`` and ``5:20`` as ``major << 16 | minor`` (the classifier's return value)."""

Run = Callable[[str], str]
"""Runs a shell command in the interface's namespace (a Mininet node's ``cmd``), returns its output."""


class SmallFirstError(RuntimeError):
    """tc refused a step; names the interface and tc's message."""


def classifier_bytecode(small_bytes: int = SMALL_BYTES) -> str:
    """The classic-BPF program as ``tc ... bpf bytecode`` wants it: load the frame length,
    return class ``5:10`` when it is at most ``small_bytes``, else ``5:20``."""
    ld_len = "128 0 0 0"                      # BPF_LD | BPF_W | BPF_LEN
    jgt = f"37 1 0 {small_bytes}"             # BPF_JMP | BPF_JGT | BPF_K: longer -> skip one
    return ",".join(["4", ld_len, jgt, f"6 0 0 {FIRST}", f"6 0 0 {REST}"])  # BPF_RET | BPF_K


def commands(iface: str, rate_mbps: float) -> list[str]:
    """The tc commands for one interface whose class ``5:1`` shapes to ``rate_mbps``."""
    rate = f"{rate_mbps:g}mbit"
    return [
        f"tc class add dev {iface} parent {RATE_CLASS} classid 5:10 htb rate {rate_mbps / 10:g}mbit ceil {rate} prio 0",
        f"tc class add dev {iface} parent {RATE_CLASS} classid 5:20 htb rate {rate_mbps * 9 / 10:g}mbit ceil {rate} prio 1",
        f"tc filter add dev {iface} parent 5: protocol all prio 1 bpf bytecode '{classifier_bytecode()}'",
    ]


def apply(run: Run, iface: str, rate_mbps: float) -> None:
    """Small frames first on ``iface`` (shaped by Mininet to ``rate_mbps``). Raises
    :class:`SmallFirstError` with tc's words when a step fails."""
    for command in commands(iface, rate_mbps):
        out = run(f"{command} 2>&1 && echo ok").strip()
        if not out.endswith("ok"):
            raise SmallFirstError(f"small frames first on {iface}: `{command}` failed: {out}")


__all__ = ["SMALL_BYTES", "SmallFirstError", "apply", "classifier_bytecode", "commands"]
