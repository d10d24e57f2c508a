"""innet.switch.native: the native (generated C) executor of v1model programs.

``build`` compiles and caches C translation units and loads them with cffi (shared with
the host agent's and the testbed's C code).
"""
