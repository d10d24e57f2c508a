"""innet.switch: innet's embedded P4_16 target (v1model, BMv2 ``simple_switch`` semantics).

- ``frontend``: preprocessor, parser and type checker to a typed IR; ``p4info``: P4Info with
  p4c's ids; ``device_config`` and ``startcache``: the device config ``innet-p4c`` writes and
  the cache that makes a second start of the same program fast; ``p4c_compat``: checks
  that a program stays valid p4c input.
- ``pipeline``: the python executor (the reference); ``native``: the generated C executor
  and the C port loop.
- ``p4rt_codec``: P4Runtime rules shared with the controller; ``p4runtime``: the P4Runtime
  server; ``ports``, ``server`` and ``tls``: the ``innet-switch`` process around it.
- ``stf`` and ``stf_dialect``: the STF test runner; ``cli``: the console scripts.
"""
