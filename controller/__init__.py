"""innet.controller: the P4Runtime control plane of innet (docs/PROTOCOL.md).

Layers, each calling only downward (docs/design.md, "Layers"):

- ``client``: innet's one synchronous P4Runtime wire client over finsy's protos (the
  controller, the CLI, tests and benchmarks use it): arbitration (election id; ``None`` =
  read-only session; ``is_primary`` follows later notices), SetForwardingPipelineConfig,
  batched Write (cut under gRPC's 4 MiB) with per-update errors, Read, and the whole
  StreamChannel (``next_message(timeout, kind)`` for DigestLists, arbitration notices,
  stream errors; ``send``, ``ack_digest``, PacketOut/PacketIn); every ``grpc.RpcError``
  becomes a :mod:`.errors` exception here, every RPC has a deadline.
- ``schema``: P4Info index (full or unambiguous short names, "did you mean"), values
  checked against widths (bytestring, priority and key-encoding rules are shared with the
  switch through the codec :mod:`innet.switch.p4rt_codec`, never the switch's server);
  ``entities``: typed TableEntry (exact/lpm/ternary/range/optional), register cells,
  counters, multicast groups <-> protos; ``pipeline``: PipelineConfig from an innet-p4c
  output dir, a .p4 compiled on the fly by ``compiler`` (innet-p4c, or ``INNET_P4C`` such
  as p4c-bm2-ss, as a subprocess), or P4Info + device config (BMv2 JSON).
- ``registers``: RegisterEntry over P4Runtime, falling back to BMv2's ``simple_switch_CLI
  --thrift-port N`` (``register_read``/``register_write``) when the switch answers
  UNIMPLEMENTED and ``SwitchEndpoint.thrift_port`` is set (BMv2's PI does not implement
  registers); ``register_transport`` decides P4Runtime or Thrift before the first register
  operation, ``cli_session`` keeps one long-lived ``simple_switch_CLI`` per switch;
  ``tls``: the channel's TLS options; ``reconnect``: back-off for a lost connection;
  ``switch``: SwitchEndpoint (data) and Switch (a connected session).
- ``jobs`` (InnetLayout from the P4Info, JobSpec/WorkerSpec/Forwarding, the entries they
  become), ``innet_switch`` (InnetSwitch: forwarding, jobs,
  parameters, occupancy, counters on one switch), ``controller`` (Controller over many
  switches), ``inspect`` (SwitchReport, JSON, rich tables).

The wire format the controller shares with the agents comes from :mod:`innet.wire`:
the parameter vector's split across switches (``ShardPlan``) is
:mod:`innet.wire.shard`, and hyperparameters are converted to fixed point by
:func:`innet.wire.quantize.optimizer_params`.
Nothing is imported at package import time.
"""
