"""agg64 traffic for tests of the switch's port loops (``p4/examples/agg64.p4``)."""

from __future__ import annotations

import random
from pathlib import Path

from innet.switch.stf import read_stf

REPO = Path(__file__).resolve().parents[2]
AGG64 = REPO / "p4" / "examples" / "agg64.p4"


def agg64_frames(count: int, seed: int) -> list[bytes]:
    """Contributions to random slots 0..7 with random values (the STF's frame as a template)."""
    template = next(d for _, _, d in read_stf(REPO / "p4" / "examples" / "agg64.stf").packets if len(d) > 300)
    rng = random.Random(seed)
    frames = []
    for _ in range(count):
        body = rng.randrange(8).to_bytes(4, "big") + rng.randbytes(256)
        frames.append(template[:42] + body + template[42 + len(body):])
    return frames
