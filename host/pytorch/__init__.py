"""innet from PyTorch (torch is an optional dependency: import this package only with it).

- ``ddp_hook``: a ``DistributedDataParallel`` communication hook that allreduces gradient
  buckets through an innet agent and the switch (INA sum)::

      ddp.register_comm_hook(InnetHookState(agent, world_size), innet_allreduce_hook)

- ``model_in_network``: ``ModelInNetwork(model, worker)``, LuWu mode: per-layer gradient
  push during backward, per-layer parameter pull before forward, against optimizer nodes;
  the worker keeps no optimizer state and drops parameters after use.
"""

from innet.host.pytorch.ddp_hook import InnetHookState, innet_allreduce_hook, register_innet_hook
from innet.host.luwu.model_in_network import ModelInNetwork, flat_parameters, layer_table

__all__ = ["InnetHookState", "ModelInNetwork", "flat_parameters", "innet_allreduce_hook", "layer_table",
           "register_innet_hook"]
