"""The P4Runtime codec shared by the client (``innet.controller``) and the server
(``innet.switch.p4runtime``).

Why it is its own leaf package: the controller must drive real BMv2 as well as innet's
embedded target, so it may not depend on innet's server or executor; yet both sides
need the same wire rules. Everything here is pure P4Runtime (bytestrings, priorities,
match and action encoding, status and error details, P4Info files) over the generated
protos, and imports nothing from ``innet.switch.p4runtime``, ``innet.switch.pipeline``
or ``innet.switch.frontend`` (``tests/static/test_import_layers.py`` enforces it).

Modules: :mod:`.status` (errors with a gRPC code, google.rpc.Status details),
:mod:`.bytestrings` (canonical/padded bytestrings, widths), :mod:`.matches` (match
values, priorities, FieldMatch and Action encoding), :mod:`.p4info_files` (P4Info
serialisations as p4c writes them), :mod:`.register_range` (innet's extension: many
consecutive cells of one register in one entity).
"""
