"""innet.p4: the P4_16 sources (not Python): ``include/`` (core.p4, v1model.p4), ``innet.p4``
and its parts under ``innet/``, ``examples/`` and the STF tests beside them.

A package only so that the sources install with innet (``package_data`` in setup.py).
"""
