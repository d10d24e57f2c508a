"""Link impairments when the kernel has no netem qdisc: random loss and duplication.

Mininet's ``TCLink`` puts loss and delay into ``netem``; kernels built without
``CONFIG_NET_SCH_NETEM`` (this project's CI VM, some minimal cloud kernels) reject it
("Specified qdisc kind is unknown"). Random loss is then emulated with a classic-BPF
``cls_bpf`` filter in direct-action mode on a ``clsact`` qdisc: the program loads the
kernel's per-packet random number (``SKF_AD_RANDOM``) and returns ``TC_ACT_SHOT`` when it
is below ``p * 2**32``. Only ``clsact`` and ``cls_bpf`` are needed. Delay and jitter have no
such substitute and are refused with a clear error.

Per link, both directions are impaired on the host's interface: ``ingress`` (switch to
host, a silent drop after packet taps) and ``egress`` (host to switch; the drop happens
in the host's own stack, which UDP ignores and TCP sees as a local drop, as with a full
qdisc). The switch side cannot be used for host-to-switch loss: the switch's AF_PACKET
socket sees frames before tc ingress runs.

Duplication (which Mininet's ``TCLink`` cannot ask of netem anyway) is a classic-BPF
``cls_bpf`` classifier (not direct-action) matching the same random fraction, with the action
``mirred <ingress|egress> mirror dev <the same interface> continue``: the matched frame is
cloned back into the same hook (a second copy on the wire) and classification continues with
the loss filter. Duplicate filters have ``prio 1`` and loss filters ``prio 2`` on the same
``clsact`` qdisc, so each copy is then lost independently. A clone passes the hook again and
may be duplicated again (probability p each time) until mirred's loop detection stops it,
so the expected extra copies per frame are p/(1-p) at most (5.3% for p = 5%). This needs
``CONFIG_NET_ACT_MIRRED`` besides ``cls_bpf`` and ``clsact`` (:func:`duplication_available`).
Reordering is not emulated (mirred copies follow the original immediately; without netem
there is no delay to reorder with); the loopback switch's lossy ports
(``innet-switch --loss DROP,DUP,REORDER``) cover it.
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path
from typing import Callable

SKF_AD_RANDOM = 0xFFFFF000 + 56
"""Classic BPF ancillary load of a random 32-bit number (SKF_AD_OFF + SKF_AD_RANDOM) as u32."""
TC_ACT_OK = 0
TC_ACT_SHOT = 2
CLS_MATCH = 0xFFFFFFFF
"""A classic (not direct-action) cls_bpf program returning -1: matched, the filter's actions run."""
CLS_NO_MATCH = 0
"""... returning 0: no match, the next filter is tried."""
CONFIG = Path("/proc/config.gz")


def kernel_option(name: str, config: Path = CONFIG) -> bool | None:
    """Whether the running kernel's config builds ``name`` (``=y`` or ``=m``); None when the
    config cannot be read."""
    try:
        text = gzip.decompress(config.read_bytes()).decode(errors="replace")
    except OSError:
        return None
    return re.search(rf"^{re.escape(name)}=[ym]$", text, re.MULTILINE) is not None


def cls_bpf_available(config: Path = CONFIG) -> bool:
    """False when the kernel config says ``clsact`` (NET_SCH_INGRESS) or ``cls_bpf`` is not
    built, so the random drop cannot be installed; True otherwise (or unknown)."""
    return all(kernel_option(o, config) is not False for o in ("CONFIG_NET_SCH_INGRESS", "CONFIG_NET_CLS_BPF"))


def duplication_available(config: Path = CONFIG) -> bool:
    """:func:`cls_bpf_available` and ``mirred`` (NET_ACT_MIRRED) built, or unknown."""
    return cls_bpf_available(config) and kernel_option("CONFIG_NET_ACT_MIRRED", config) is not False


def netem_available(config: Path = CONFIG) -> bool:
    """False when the running kernel's config says netem is not built; True otherwise (or unknown)."""
    try:
        text = gzip.decompress(config.read_bytes()).decode(errors="replace")
    except OSError:
        module = Path(f"/lib/modules/{os.uname().release}")
        if module.is_dir():
            return any(module.rglob("sch_netem.ko*"))
        return True
    return "CONFIG_NET_SCH_NETEM=y" in text or "CONFIG_NET_SCH_NETEM=m" in text


def random_drop_bytecode(loss_pct: float) -> str:
    """tc's ``bytecode`` text of the drop-with-probability program (4 instructions)."""
    threshold = _threshold(loss_pct, "loss")
    program = [
        (0x20, 0, 0, SKF_AD_RANDOM),   # ld [random]
        (0x35, 0, 1, threshold),       # jge #threshold -> pass, else drop
        (0x06, 0, 0, TC_ACT_OK),       # ret pass
        (0x06, 0, 0, TC_ACT_SHOT),     # ret drop
    ]
    return ",".join([str(len(program))] + [f"{c} {jt} {jf} {k}" for c, jt, jf, k in program])


def _threshold(pct: float, what: str) -> int:
    if not 0 <= pct < 100:
        raise ValueError(f"{what} {pct}%: must be within 0..100 (100 excluded)")
    return min(int(pct / 100 * 2**32), 2**32 - 1)


def random_match_bytecode(dup_pct: float) -> str:
    """tc's ``bytecode`` text of a classifier matching ``dup_pct``% of packets (4 instructions)."""
    threshold = _threshold(dup_pct, "duplication")
    program = [
        (0x20, 0, 0, SKF_AD_RANDOM),   # ld [random]
        (0x35, 1, 0, threshold),       # jge #threshold -> no match, else match
        (0x06, 0, 0, CLS_MATCH),       # ret match
        (0x06, 0, 0, CLS_NO_MATCH),    # ret no match
    ]
    return ",".join([str(len(program))] + [f"{c} {jt} {jf} {k}" for c, jt, jf, k in program])


def impair_commands(iface: str, loss_pct: float = 0.0, dup_pct: float = 0.0) -> list[str]:
    """tc commands that duplicate ``dup_pct``% (prio 1) and then drop ``loss_pct``% (prio 2)
    of packets each way on ``iface``; only the clsact qdisc when both are 0."""
    out = [f"tc qdisc add dev {iface} clsact"]
    if dup_pct > 0:
        match = random_match_bytecode(dup_pct)
        out += [f"tc filter add dev {iface} {hook} prio 1 bpf bytecode '{match}' "
                f"action mirred {hook} mirror dev {iface} continue" for hook in ("ingress", "egress")]
    if loss_pct > 0:
        drop = random_drop_bytecode(loss_pct)
        out += [f"tc filter add dev {iface} {hook} prio 2 bpf da bytecode '{drop}'" for hook in ("ingress", "egress")]
    return out


def loss_commands(iface: str, loss_pct: float) -> list[str]:
    """tc commands that drop ``loss_pct``% of packets each way on ``iface``."""
    code = random_drop_bytecode(loss_pct)
    return [f"tc qdisc add dev {iface} clsact"] + [
        f"tc filter add dev {iface} {hook} bpf da bytecode '{code}'" for hook in ("ingress", "egress")]


def apply_loss(run: Callable[[str], str], iface: str, loss_pct: float) -> None:
    """Run :func:`loss_commands` with ``run`` (e.g. a Mininet host's ``cmd``); errors name the command."""
    _run_all(run, loss_commands(iface, loss_pct), f"link loss on {iface}")


def apply_impairments(run: Callable[[str], str], iface: str, loss_pct: float = 0.0, dup_pct: float = 0.0) -> None:
    """Run :func:`impair_commands` with ``run``; errors name the command."""
    _run_all(run, impair_commands(iface, loss_pct, dup_pct),
             f"link impairment (loss {loss_pct:g}%, duplication {dup_pct:g}%) on {iface}")


def _run_all(run: Callable[[str], str], commands: list[str], what: str) -> None:
    for command in commands:
        out = run(command + "; echo rc=$?").strip()
        if not out.endswith("rc=0"):
            raise RuntimeError(f"{what}: `{command}` failed: {out}")
