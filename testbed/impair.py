"""Link impairments when the kernel has no netem qdisc.

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
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Callable

SKF_AD_RANDOM = 0xFFFFF000 + 56
"""Classic BPF ancillary load of a random 32-bit number (SKF_AD_OFF + SKF_AD_RANDOM) as u32."""
TC_ACT_OK = 0
TC_ACT_SHOT = 2


def netem_available(config: Path = Path("/proc/config.gz")) -> bool:
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
    if not 0 <= loss_pct < 100:
        raise ValueError(f"loss {loss_pct}%: must be within 0..100 (100 excluded)")
    threshold = min(int(loss_pct / 100 * 2**32), 2**32 - 1)
    program = [
        (0x20, 0, 0, SKF_AD_RANDOM),   # ld [random]
        (0x35, 0, 1, threshold),       # jge #threshold -> pass, else drop
        (0x06, 0, 0, TC_ACT_OK),       # ret pass
        (0x06, 0, 0, TC_ACT_SHOT),     # ret drop
    ]
    return ",".join([str(len(program))] + [f"{c} {jt} {jf} {k}" for c, jt, jf, k in program])


def loss_commands(iface: str, loss_pct: float) -> list[str]:
    """tc commands that drop ``loss_pct``% of packets each way on ``iface``."""
    code = random_drop_bytecode(loss_pct)
    return [f"tc qdisc add dev {iface} clsact"] + [
        f"tc filter add dev {iface} {hook} bpf da bytecode '{code}'" for hook in ("ingress", "egress")]


def apply_loss(run: Callable[[str], str], iface: str, loss_pct: float) -> None:
    """Run :func:`loss_commands` with ``run`` (e.g. a Mininet host's ``cmd``); errors name the command."""
    for command in loss_commands(iface, loss_pct):
        out = run(command + "; echo rc=$?").strip()
        if not out.endswith("rc=0"):
            raise RuntimeError(f"link loss on {iface}: `{command}` failed: {out}")
