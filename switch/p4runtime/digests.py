"""Digest lists: batching and duplicate suppression per ``DigestEntry.Config``.

P4Runtime (``p4runtime.proto``, DigestEntry and DigestListAck) asks the server to stream a
DigestList when at least one digest is ready and either the oldest has waited
``max_timeout_ns`` or ``max_list_size`` digests are gathered, and not to report the same
data again until the list carrying it is acknowledged (DigestListAck with its
``list_id``) or ``ack_timeout_ns`` expires. innet reads the fields as BMv2's PI does:

- ``max_list_size`` <= 0: no size limit (lists are closed by the timeout);
- ``max_timeout_ns`` <= 0: every digest is sent at once, in a list of its own;
- ``ack_timeout_ns`` <= 0: sent data is not remembered (no suppression after sending).

Data is compared by its serialized P4Data; a duplicate of data waiting in the current
list, or of data in a sent list that is neither acknowledged nor expired, is dropped.
Pure bookkeeping with explicit ``now_ns``: the device calls it under its lock and a
timer thread of the switch closes lists whose timeout passed.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

from finsy.proto import p4d, p4r


@dataclass
class _Open:
    """The list being gathered for one digest."""

    since_ns: int
    data: list[p4d.P4Data] = field(default_factory=list)
    keys: set[bytes] = field(default_factory=set)


@dataclass
class _Sent:
    """A sent list awaiting its ack."""

    expires_ns: int
    keys: set[bytes]


class DigestLists:
    """The open and unacknowledged digest lists of one pipeline."""

    def __init__(self) -> None:
        self._open: dict[int, _Open] = {}
        self._sent: dict[int, dict[int, _Sent]] = {}
        self._list_ids = itertools.count(1)
        self.suppressed = 0
        """Digests dropped as duplicates (for logs and tests)."""

    def add(self, digest_id: int, config: p4r.DigestEntry.Config, data: p4d.P4Data,
            now_ns: int) -> list[p4r.DigestList]:
        """Queue one digest; the lists to send now (zero or one)."""
        key = data.SerializeToString(deterministic=True)
        sent = self._live_sent(digest_id, now_ns)
        current = self._open.get(digest_id)
        if (current is not None and key in current.keys) or any(key in s.keys for s in sent.values()):
            self.suppressed += 1
            return []
        if current is None:
            current = self._open[digest_id] = _Open(now_ns)
        current.data.append(data)
        current.keys.add(key)
        full = config.max_list_size > 0 and len(current.data) >= config.max_list_size
        if full or config.max_timeout_ns <= 0:
            return [self._close(digest_id, config, now_ns)]
        return []

    def due(self, configs: dict[int, p4r.DigestEntry.Config], now_ns: int) -> list[p4r.DigestList]:
        """Lists whose oldest digest has waited ``max_timeout_ns``."""
        out = []
        for digest_id, current in list(self._open.items()):
            config = configs.get(digest_id)
            if config is None:  # unconfigured since: drop what was gathered
                del self._open[digest_id]
            elif now_ns - current.since_ns >= config.max_timeout_ns:
                out.append(self._close(digest_id, config, now_ns))
        return out

    def next_deadline_ns(self, configs: dict[int, p4r.DigestEntry.Config]) -> int | None:
        """When the earliest open list must be sent; None when no list is open."""
        deadlines = [c.since_ns + configs[d].max_timeout_ns for d, c in self._open.items() if d in configs]
        return min(deadlines) if deadlines else None

    def ack(self, digest_id: int, list_id: int) -> bool:
        """Forget a sent list; False when it is unknown (already acked or expired)."""
        return self._sent.get(digest_id, {}).pop(list_id, None) is not None

    def forget(self, digest_id: int) -> None:
        """Drop open and sent lists of a digest (its DigestEntry was deleted or changed)."""
        self._open.pop(digest_id, None)
        self._sent.pop(digest_id, None)

    def _live_sent(self, digest_id: int, now_ns: int) -> dict[int, _Sent]:
        sent = self._sent.get(digest_id, {})
        for list_id in [i for i, s in sent.items() if s.expires_ns <= now_ns]:
            del sent[list_id]
        return sent

    def _close(self, digest_id: int, config: p4r.DigestEntry.Config, now_ns: int) -> p4r.DigestList:
        current = self._open.pop(digest_id)
        list_id = next(self._list_ids)
        if config.ack_timeout_ns > 0:
            self._sent.setdefault(digest_id, {})[list_id] = _Sent(now_ns + config.ack_timeout_ns,
                                                                   current.keys)
        return p4r.DigestList(digest_id=digest_id, list_id=list_id, data=current.data,
                              timestamp=time.time_ns())
