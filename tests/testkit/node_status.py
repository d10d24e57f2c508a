"""An optimizer node's status as its writer produces it, without a running node.

``OptimizerNode.status`` is called on a stand-in that has only what it reads (the plan,
the Adam state's counters, the agent's last operation), so tests of the status reader
check it against the writer's own format, not a copy of it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def written_status(state: str = "done", step: int = 3, error: str | None = None,
                   agent_stats: dict[str, int] | None = None) -> dict[str, Any]:
    """The ``status.json`` document of node ``o1`` of a two-node plan."""
    from innet.host.luwu.node import OptimizerNode
    from innet.host.luwu.ooc_adam import AdamConfig
    from innet.host.luwu.plan import LuwuPlan

    plan = LuwuPlan(job=1, num_workers=2, nodes=("o1", "o2"), layer_sizes=(8320, 2080, 650), epoch=1)
    adam = SimpleNamespace(step=step, config=AdamConfig(lr=0.01), bytes_on_disk=6 << 20, size=plan.shards[0][1],
                           working_set_bytes=1 << 20)
    agent = SimpleNamespace(last=SimpleNamespace(stats=agent_stats) if agent_stats is not None else None)
    node = SimpleNamespace(config=SimpleNamespace(index=0, name="o1"), plan=plan, state=adam,
                           seconds={"adam": 0.5, "comm": 1.25}, agent=agent)
    return OptimizerNode.status(node, state, error)  # type: ignore[arg-type]
