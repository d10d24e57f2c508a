"""innet: in-network aggregation and in-network optimizer dataplane for data-parallel training.

The repository root is this package: ``switch/``, ``controller/``, ``host/``, ``testbed/``
and ``p4/`` import as ``innet.switch`` and so on (see setup.py).
"""

__version__ = "0.1.0"
