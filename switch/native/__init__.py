"""innet.switch.native: the native (generated C) executor of v1model programs.

- Builds go through ``innet.native_build`` (one build system with the host agent's and the
  testbed's C code): compile with the system compiler, cache by content hash, load with cffi.
- ``cgen`` + ``crt``: one C unit per program from the typed IR (the same IR and slot
  layout as the python executor, which stays the reference).
- ``pipeline.NativePipeline``: the ``Pipeline`` API (tables, registers, counters, PRE,
  digests, ``atomic()``) with the packet path in C, off the GIL.
- ``select.load_pipeline(program, executor="auto"|"native"|"python")``: the choice every
  entry point makes (``innet-switch --executor``, ``innet-stf --executor``, ``innet
  testbed up/bench/demo --executor``, ``bench_pipeline --executor``).

Not (yet) native, refused at load time with file:line:col and the construct (``auto``
then falls back to python with one stderr line): meters and direct meters, action
profiles and selectors, idle-timeout tables, varbit, sub-parsers, values wider than 64
bits, signed division. ``random`` draws from a C xorshift generator (not the python
executor's ``random.Random`` stream), so programs using it are not bit-identical
across executors.

Ports and threads: ``portio`` (``portio.c`` + ``NativePortSet``) is innet-switch's C
port loop: one datapath thread owns the port sockets (``recvmmsg``/``sendmmsg`` on UDP
ports, a PACKET_MMAP receive ring and ``sendmmsg`` on AF_PACKET ports), takes the switch mutex per batch (the mutex the control plane's
``pipeline.lock`` holds, so Write batches stay atomic), and hands PacketIn/digests to
Python through a queue. Scaling beyond one thread (docs/benchmarks.md): per-thread
scratch (``ctx_t``, arena, output buffers), ports or fanout groups per thread, registers
partitioned by slot or updated with atomics, and a reader-writer lock or table epochs
for the control plane.
"""
