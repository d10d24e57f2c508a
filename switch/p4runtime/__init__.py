"""P4Runtime server of the embedded target.

Layers, each calling only downward (the wire rules it shares with clients live in
:mod:`innet.switch.p4rt_codec`):

- ``target_api``: the interface (``typing.Protocol`` classes) between the P4Runtime layer and
  whatever executes the program; ``embedded_target`` and ``embedded_profiles`` implement
  it over innet's executor (a test double lives in ``tests/testkit/fake_target.py``);
- ``schema``: the server's index over a P4Info message, by id;
- ``arbitration``: the pure client-arbitration state machine (primary/backup per role);
- ``tables``, ``action_profiles``, ``externs``, ``packetio``, ``ageing``, ``digests``:
  translation of P4Runtime entities and packets to target calls, with the errors the
  spec prescribes; ``tmp_device_config`` unwraps ``p4.tmp.P4DeviceConfig``;
- ``device``: one device (pipeline config, entity state, the lock that keeps control-plane
  writes atomic relative to packet processing);
- ``service``: the gRPC servicer on top.
"""
