"""innet.host: the worker side of in-network aggregation.

Subpackages, lowest layer first (each imports only the ones before it):

- ``agent``: the per-worker agent process that emulates the SmartNIC: aggregator (chunks,
  slot window, retransmission), RTO estimator, transports, and its C datapath (``native``).
- ``training``: softmax regression on digits and the training loop the demos share.
- ``pytorch``: the DDP communication hook (torch is optional: import it only with torch).
- ``luwu``, ``rail``, ``geo``: the worker side of LuWu, Rail-only and geo-distributed
  (FusionLLM) training.

The switch test double for agent tests is ``tests/testkit/fake_innet_switch.py``.
"""
