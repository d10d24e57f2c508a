"""innet.host: the worker side of in-network aggregation.

- ``wire``: protocol constants and the innet message / frame format (docs/PROTOCOL.md);
  ``scapy_layer`` binds a scapy dissector when imported.
- ``quantize``: float32 <-> int32 fixed point, overflow-free sum scale, optimizer integers.
- ``transport``: plain UDP or Ethernet frames tunnelled to an ``innet-switch -u`` port.
- ``protocol``: the Aggregator (chunks, slot window, retransmission, AggregationError).
- ``agent``: the per-worker agent process (SmartNIC emulation), shared-memory handoff.
- ``simulate``: the switch's fixed-point arithmetic in numpy (bit-exact reference).
- ``model``, ``train``: softmax regression on digits, data-parallel training through agents.
  (The switch test double for agent tests is ``tests/testkit/fake_innet_switch.py``.)
"""
