"""innet.switch.native: the native (generated C) executor of v1model programs.

- Builds go through ``innet.native_build`` (one build system with the host agent's and the
  testbed's C code): compile with the system compiler, cache by content hash, load with cffi.
- ``cgen`` + ``crt``: one C unit per program from the typed IR (the same IR and slot
  layout as the python executor, which stays the reference).
- ``fuse``: register arrays the program always indexes together (``p4/innet``'s per-element
  arrays) share one element-major block (``fuse="auto"|"all"|"off"``, ``$INNET_NATIVE_FUSE``);
  ``reroll``: repeated per-element statements become loops over contiguous slots and
  cells, which the compiler vectorises (built with -O3 -march=native).
- ``pipeline.NativePipeline``: the ``Pipeline`` API (tables, registers, counters, PRE,
  digests, ``atomic()``) with the packet path in C, off the GIL.
- ``select.load_pipeline(program, executor="auto"|"native"|"python")``: the choice every
  entry point makes (``innet-switch --executor``, ``innet-stf --executor``, ``innet
  testbed up/bench/demo --executor``, ``innet bench pipeline --executor``).

What runs natively, mirroring the python executor (the reference): tables of every match
kind, action profiles and selectors (BMv2's selector hash over the selector keys; the
python control plane resolves members and groups when it pushes a table), registers,
counters, direct counters, meters and direct meters (RFC 2698 trTCM in doubles, the
python ``MeterCell``'s arithmetic), digests, idle-timeout stamps (pulled into
``Entry.last_hit`` for the P4Runtime ageing sweep), varbit fields (a slot locates the
extracted bits, up to varbit<8191>) and sub-parsers (inlined per call site). Clocks: C
reads CLOCK_MONOTONIC as the python defaults do (``time.monotonic_ns`` for hit stamps,
``time.monotonic() * 1e6`` for meters); an injected pipeline or meter clock is read once
per call into C. Values wider than 64 bits take one slot per 64-bit limb and are computed
exactly by the ``w_*`` helpers (``wide``, ``widegen``); 64-bit values keep their code.
Still refused at load time with file:line:col and the construct (``auto`` then falls back
to python with one stderr line): varbits wider than varbit<8191>, signed division, parser
value sets and extern objects other than v1model's. ``random``
draws from a C xorshift generator (not the python executor's ``random.Random`` stream),
so programs using it are not bit-identical across executors.

Ports and threads: ``portio`` (``portio.c`` + ``NativePortSet``) is innet-switch's C
port loop: one datapath thread owns the port sockets (``recvmmsg``/``sendmmsg`` on UDP
ports, a PACKET_MMAP receive ring and ``sendmmsg`` on AF_PACKET ports), takes the switch mutex per batch (the mutex the control plane's
``pipeline.lock`` holds, so Write batches stay atomic), and hands PacketIn/digests to
Python through a queue. Scaling beyond one thread (not built: on two cores a second
datapath thread would compete with the traffic's sender): per-thread
scratch (``ctx_t``, arena, output buffers), ports or fanout groups per thread, registers
partitioned by slot or updated with atomics, and a reader-writer lock or table epochs
for the control plane.
"""
