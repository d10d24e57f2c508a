"""innet from PyTorch (torch is an optional dependency: import this package only with it).

``ddp_hook``: a ``DistributedDataParallel`` communication hook that allreduces gradient
buckets through an innet agent and the switch (INA sum)::

    ddp.register_comm_hook(InnetHookState(agent, world_size), innet_allreduce_hook)

LuWu's ``ModelInNetwork`` (no optimizer state on the worker) is in ``innet.host.luwu``.
"""

from innet.host.pytorch.ddp_hook import InnetHookState, innet_allreduce_hook, register_innet_hook

__all__ = ["InnetHookState", "innet_allreduce_hook", "register_innet_hook"]
