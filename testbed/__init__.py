"""innet.testbed: bring topologies up, run the systems on them, and benchmark them.

``core`` (topology values, the Testbed base, processes, reports) < ``backends`` (loopback,
Mininet, Docker; BMv2 as a switch implementation) < one folder per system (``ina``,
``luwu``, ``rail``, ``geo``) and ``microbench`` < ``cli`` (argparse only).
"""
