"""innet.switch.pipeline: the v1model executor with BMv2 ``simple_switch`` semantics.

Public API
----------
``Pipeline(program)`` (or ``Pipeline.load(program)``, ``Pipeline.from_file(path)``)
    compiles an ``ir.Program`` once into Python functions (see ``compiler``) and owns the
    switch state.

``pipeline.process(port, data) -> list[tuple[int, bytes]]``
    runs one packet through parser, verifyChecksum, ingress, traffic manager, egress,
    computeChecksum and deparser (``v1model``); a pure function of (state, port, bytes).

State, addressed by control-plane name (``cp_name`` / P4Info name, exact or unique
dotted suffix):

- ``pipeline.table(name)`` -> ``Table``: ``insert/modify/delete(keys, action, params,
  priority)``, ``set_default``, ``list_entries``; keys are ``KeySpec`` per key
  (``KeySpec(v)`` exact, ``KeySpec(v, prefix_len=n)`` lpm, ``KeySpec(v, mask=m)``
  ternary/optional, ``KeySpec(lo, hi=h)`` range). Larger priority wins.
- ``pipeline.register(name)`` -> ``Register`` (``read``, ``write``, ``read_all``, ``cells``),
  ``counter(name)`` -> ``Counter`` (``packets``/``bytes`` lists), ``meter(name)`` ->
  ``Meter`` (``set_rates(index, cir, cburst, pir, pburst)``, rates in units/us),
  ``direct_counter(name)`` (the owning table: entries carry ``packets``/``bytes``),
  ``direct_meter(name)``.
- ``pipeline.action_profile(name)`` -> ``ActionProfile`` (``action_profile`` and
  ``action_selector``): ``add_member(id, action, params)``, ``modify_member``,
  ``delete_member``, ``create_group(id, members)``, ``set_group_members``,
  ``add_member_to_group``, ``remove_member_from_group``, ``delete_group``. Entries of its
  tables point to them: ``table.insert_indirect(keys, member=.. | group=.., priority)``,
  ``modify_indirect``, ``set_default_indirect``, ``reset_default`` (see ``profiles``).
- Idle timeout: entries of tables with ``support_timeout = true`` carry ``last_hit`` (the
  ``clock`` given to ``Pipeline``, default ``time.monotonic_ns``, read once per packet at
  its first hit of such an entry; insertion counts as a hit); ``table.idle_ns(entry)``.
  Other tables generate no ageing code.
- ``pipeline.pre`` -> ``ReplicationEngine``: multicast groups/nodes, clone sessions.
- ``pipeline.pop_digests()`` or a ``digest_sink`` callback given to ``Pipeline``.

Thread safety: ``process`` and every ``Pipeline`` control-plane method hold
``pipeline.lock``; ``with pipeline.atomic():`` groups several updates.

Generated code: ``pipeline.source`` is the Python source the program compiled to; with
``INNET_PIPELINE_DUMP=<dir>`` in the environment it is also written to
``<dir>/<program>-<hash>.py`` and compiled under that file name, so tracebacks and
profilers (``python -m cProfile``) point at its lines.

Unsupported constructs raise ``UnsupportedError`` (message starts with file:line:col) at
load time. See ``v1model`` for the architecture semantics and documented choices.
"""

from .api import Pipeline, resolve
from .errors import (ControlPlaneError, EntryExistsError, EntryNotFoundError, InUseError, PipelineError,
                     UnsupportedError)
from .externs import Counter, DigestMessage, Meter, Register
from .pre import ReplicationEngine
from .profiles import ActionProfile, Group, Member
from .tables import Entry, KeySpec, Table

__all__ = [
    "Pipeline", "resolve", "ControlPlaneError", "EntryExistsError", "EntryNotFoundError", "InUseError", "PipelineError",
    "UnsupportedError", "Counter", "DigestMessage", "Meter", "Register", "ReplicationEngine", "Entry",
    "KeySpec", "Table", "ActionProfile", "Group", "Member",
]
