"""Native (C) fast path of the host agent, compiled at run time and loaded with cffi.

The C sources are compiled and cached by content hash through :mod:`innet.native_build`;
``agentlib``: the agent's C library (quantize, pack, the slot-window send/receive loop);
``aggregator``: ``NativeAggregator``, the C twin of ``innet.host.agent.aggregator.Aggregator``;
``datapath``: selecting native or python for an agent, with the python fallback.
"""
