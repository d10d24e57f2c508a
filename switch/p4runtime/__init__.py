"""P4Runtime server of the embedded target.

Layers, each calling only downward:

- ``target``: the small adapter interface (a ``typing.Protocol``) between the P4Runtime
  layer and whatever executes the program (innet's pipeline, or a fake in tests);
- ``schema``: an index over a P4Info message and the bytestring rules of P4Runtime;
- ``arbitration``: the pure client-arbitration state machine (primary/backup per role);
- ``tables``, ``externs``, ``packetio``: translation of P4Runtime entities and packets to
  target calls, with the errors the spec prescribes;
- ``device``: one device (pipeline config, entity state, the lock that keeps control-plane
  writes atomic relative to packet processing);
- ``service``: the gRPC servicer on top.
"""
