"""Idle timeout: the ageing sweep that sends ``IdleTimeoutNotification`` to the primary.

P4Runtime spec, "Idle-timeout" and "Table Idle Timeout Notification": an entry of a table
with ``idle_timeout_behavior = NOTIFY_CONTROL`` whose ``idle_timeout_ns`` (TTL) is not 0
and that no packet hit for at least its TTL is reported in an ``IdleTimeoutNotification``
(one message per table and sweep, ``timestamp`` in ns since the Epoch). The switch never
deletes it: the controller decides. After a notification the entry's timer restarts (the
spec's "reset"): it is reported again only after another TTL without a hit, so a
notification lost while no primary was connected is repeated. ``time_since_last_hit``
reads keep the real time since the last hit; the restart only moves the next report.

BMv2 differs in two details, both noted in ``docs/p4runtime.md``: its ageing monitor
(``bm_sim/ageing.cpp``) sweeps every 1000 ms by default and suppresses an entry that was
reported by the previous sweep only, so an entry that stays idle is reported every second
sweep whatever its TTL.

Hit times come from the target (``AgeingPipeline``): innet's executor stamps an entry of
a ``support_timeout`` table with the packet's clock reading when the packet hits it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Callable

from finsy.proto import p4i, p4r

from innet.switch.p4runtime.target_api import AgeingPipeline

if TYPE_CHECKING:
    from innet.switch.p4runtime.tables import Installed, TableState

LOG = logging.getLogger(__name__)

DEFAULT_SWEEP_INTERVAL = 0.1
"""Seconds between two sweeps (the spec's pseudo-code uses 10 ms, BMv2 1000 ms)."""


def ageing_tables(tables: "TableState") -> list[int]:
    """Ids of the tables whose entries can time out."""
    return [info.id for info in tables.schema.tables.values()
            if info.table.idle_timeout_behavior == p4i.Table.NOTIFY_CONTROL]


def notification_entry(installed: "Installed") -> p4r.TableEntry:
    """What a notification says about an entry: its key, metadata and TTL (spec)."""
    e = installed.entry
    out = p4r.TableEntry(table_id=e.table_id, match=e.match, priority=e.priority,
                         metadata=e.metadata, idle_timeout_ns=e.idle_timeout_ns)
    if e.controller_metadata:
        out.controller_metadata = e.controller_metadata
    return out


def expired(tables: "TableState") -> list[p4r.IdleTimeoutNotification]:
    """One sweep: a notification per table that has entries idle for their TTL (or for
    another TTL since they were last reported); restarts the timers of those entries.
    Empty when the target does not track hit times."""
    target = tables.pipeline
    if not isinstance(target, AgeingPipeline):
        return []
    out = []
    now: int | None = None
    for table_id in ageing_tables(tables):
        ageing = [i for i in tables.entries[table_id].values()
                  if i.handle is not None and i.entry.idle_timeout_ns > 0]
        if not ageing:
            continue
        name = tables.schema.table(table_id).name
        if now is None:
            now = target.clock_ns()
        hits = target.table_last_hits(name, [i.handle for i in ageing])
        message = p4r.IdleTimeoutNotification()
        for installed, last_hit in zip(ageing, hits):
            since = last_hit if installed.notified_at is None else max(last_hit, installed.notified_at)
            if now - since >= installed.entry.idle_timeout_ns:
                message.table_entry.append(notification_entry(installed))
                installed.notified_at = now
        if message.table_entry:
            message.timestamp = time.time_ns()
            out.append(message)
    return out


class AgeingSweeper:
    """A thread that calls ``sweep`` every ``interval`` seconds until ``stop()``.

    ``sweep`` is ``Device.sweep_idle_timeouts``; an exception in it is logged and the
    thread goes on with the next sweep.
    """

    def __init__(self, sweep: Callable[[], object], interval: float = DEFAULT_SWEEP_INTERVAL) -> None:
        if not interval > 0:
            raise ValueError(f"ageing sweep interval must be > 0 seconds, got {interval}")
        self.interval = interval
        self._sweep = sweep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "AgeingSweeper":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="innet-ageing", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._sweep()
            except Exception:  # a sweep bug must not end ageing for the server's lifetime
                LOG.exception("idle-timeout sweep failed")

    def stop(self) -> None:
        """Stop and join the thread; safe to call more than once."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def __enter__(self) -> "AgeingSweeper":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
