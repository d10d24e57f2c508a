"""The v1model architecture with BMv2 ``simple_switch`` semantics around a compiled program.

Per input packet (``Pipeline.process``):

1. ingress pass: parser (errors only set ``parser_error``), verifyChecksum, ingress;
2. end of ingress, in order: I2E clone (the packet *as received*, parsed again,
   ``instance_type`` 1), digests, resubmit (the original packet re-enters ingress with
   only the field-list metadata, ``instance_type`` 6, and this pass produces nothing
   else), multicast when ``mcast_grp`` != 0 (one copy per replica, ``egress_rid`` = node
   rid, ``instance_type`` 5), drop when ``egress_spec`` == 511, else unicast (with
   ``instance_type`` set back to 0, as simple_switch does before egress);
3. egress pass: egress; E2E clone (the deparsed output parsed again, ``instance_type``
   2); drop when ``egress_spec`` == 511; computeChecksum, deparser; recirculate (the
   deparsed packet re-enters ingress, ``instance_type`` 4) instead of output; output.

``assert``/``assume`` failures and runtime faults (``hs.next`` past the end outside the
parser, ``advance`` by a number of bits that is not whole bytes) are logged at ERROR
with their source location and drop the packet of that pass; other passes of the same
input are unaffected. A header stack index out of range outside the parser is not a
fault: it reads an invalid scratch element and its writes change nothing (P4_16 8.18).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

from .compiler import Compiled
from .runtime import AssertFail, Exit
from .externs import DigestMessage

log = logging.getLogger("innet.switch.pipeline")

DROP_PORT = 511
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
MAX_PASSES = 64  # resubmit/recirculate loops are cut after this many extra passes


class Architecture:
    """Runs packets through a :class:`Compiled` program (one switch's data path)."""

    def __init__(self, c: Compiled, pre: Any, digest_sink: Any = None) -> None:
        self.c = c
        self.pre = pre
        self.lock = threading.RLock()
        self.digest_sink = digest_sink  # callable(DigestMessage) or None
        self.digest_queue: deque[DigestMessage] = deque(maxlen=65536)
        sm = c.sm
        self.s_ingress_port = sm["ingress_port"]
        self.s_egress_spec = sm["egress_spec"]
        self.s_egress_port = sm["egress_port"]
        self.s_instance_type = sm["instance_type"]
        self.s_packet_length = sm["packet_length"]
        self.s_mcast_grp = sm["mcast_grp"]
        self.s_egress_rid = sm["egress_rid"]
        sl = c.slots
        self.s_clone = sl["clone"]
        self.s_resubmit = sl["resubmit"]
        self.s_recirc = sl["recirculate"]
        self.s_trunc = sl["truncate"]
        self.s_payload = sl["payload"]
        self.s_digests = sl["digests"]
        self.meta_range = c.meta_slots
        self.sm_range = (min(sm.values()), max(sm.values()) + 1)
        self._pending_clones: list[tuple[list[Any], int, int]] = []
        self._deferred: deque[tuple[bytes, int, int, tuple[tuple[int, Any], ...]]] | None = None
        self._fast = self._make_fast()

    # ------------------------------------------------------------------ passes
    def _parse(self, data: bytes, port: int, itype: int, preserved: tuple[tuple[int, Any], ...]) -> list[Any]:
        """A packet entering the parser again. BMv2 resets all metadata (user and standard,
        ``ingress_port`` included) of resubmitted, recirculated and cloned packets, then
        copies the field list in. Only an I2E clone is parsed with its ``ingress_port``
        (the parser may branch on it), and its metadata is reset after that parse."""
        c = self.c
        S = c.template[:]
        if itype == NORMAL or itype == INGRESS_CLONE:
            S[self.s_ingress_port] = port
        S[self.s_instance_type] = itype
        S[self.s_packet_length] = len(data)
        for slot, v in preserved:
            S[slot] = v
        pos = c.parser(S, data)
        S[self.s_payload] = data[pos:] if pos else data
        if itype == INGRESS_CLONE:
            t = c.template
            for lo, hi in (self.meta_range, self.sm_range):
                S[lo:hi] = t[lo:hi]
            for slot, v in preserved:
                S[slot] = v
            S[self.s_instance_type] = itype
            S[self.s_packet_length] = len(data)
        return S

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Outputs ``[(port, bytes), ...]`` for one input packet, in emission order."""
        if type(data) is not bytes:
            data = bytes(data)
        with self.lock:
            return self._fast(port, data)

    def process_burst(self, packets: Any) -> list[tuple[int, bytes]]:
        """Outputs for packets that arrive back to back, in emission order.

        simple_switch's ingress thread takes the queued inputs one after the other and
        puts a resubmitted packet straight back in front of them, so a resubmit completes
        before the next input. A recirculated packet is handed back by an egress thread
        after deparsing; by then the ingress thread has taken the later inputs of the
        burst (BMv2 1.15.5 emits a non-recirculating later input first). So here the
        recirculated packets of a burst wait, in FIFO order, until every input has gone
        through ingress."""
        with self.lock:
            self._deferred = deque()
            try:
                out: list[tuple[int, bytes]] = []
                for port, data in packets:
                    out += self._fast(port, data if type(data) is bytes else bytes(data))
                budget = MAX_PASSES * max(len(packets), 1)
                while self._deferred:
                    if budget == 0:
                        log.error("burst: more than %d recirculation passes, the rest dropped", MAX_PASSES * len(packets))
                        break
                    budget -= 1
                    item = self._deferred.popleft()
                    self._drain_ingress(item[1], deque([item]), out)
                return out
            finally:
                self._deferred = None

    def _make_fast(self) -> Any:
        """The common case (one ingress pass, unicast, no clone/digest/resubmit/recirculate)
        as one closure with every slot index bound; anything else continues on the
        general path from where the fast path stopped."""
        c = self.c
        template, parser, verify, ingress, egress, compute, deparser = (
            c.template, c.parser, c.verify, c.ingress, c.egress, c.compute, c.deparser)
        IP, PL, PAY, CL, DG, RS, MG, ES, EP, RC, TR, RID, IT = (
            self.s_ingress_port, self.s_packet_length, self.s_payload, self.s_clone, self.s_digests,
            self.s_resubmit, self.s_mcast_grp, self.s_egress_spec, self.s_egress_port, self.s_recirc, self.s_trunc,
            self.s_egress_rid, self.s_instance_type)
        general = self._general
        replicas = self.pre.replicas
        mcast_rest = self._mcast_rest

        def mcast(port: int, data: bytes, S: list[Any], grp: int) -> list[tuple[int, bytes]]:
            """Multicast replicas through egress (as ``_end_of_ingress``/``_egress`` do);
            a replica that clones or recirculates hands the rest to the general path."""
            out: list[tuple[int, bytes]] = []
            reps = replicas(grp)
            for k, (rid, eport) in enumerate(reps):
                S2 = S[:]
                S2[RID] = rid
                S2[IT] = REPLICATION
                S2[EP] = eport
                S2[ES] = 0
                S2[CL] = None
                S2[RC] = None
                try:
                    try:
                        egress(S2)
                    except Exit:
                        pass
                    if S2[CL] is not None or S2[RC] is not None:
                        return mcast_rest(port, S, S2, eport, reps[k + 1:], out)
                    if S2[ES] == DROP_PORT:
                        continue
                    compute(S2)
                    parts: list[bytes] = []
                    deparser(S2, parts)
                except AssertFail as e:
                    log.error("egress: %s; packet dropped", e)
                    continue
                parts.append(S2[PAY])
                pkt = b"".join(parts)
                if S2[TR]:
                    pkt = pkt[:S2[TR]]
                out.append((eport, pkt))
            return out

        def fast(port: int, data: bytes) -> list[tuple[int, bytes]]:
            try:
                S = template[:]
                S[IP] = port
                S[PL] = len(data)
                pos = parser(S, data)
                S[PAY] = data[pos:]
                verify(S)
                try:
                    ingress(S)
                except Exit:
                    pass
            except AssertFail as e:
                log.error("ingress: %s; packet dropped", e)
                return []
            if S[CL] is not None or S[DG] or S[RS] is not None:
                return general(port, data, S)
            grp = S[MG]
            if grp:
                return mcast(port, data, S, grp)
            spec = S[ES]
            if spec == DROP_PORT:
                return []
            S[EP] = spec
            S[ES] = 0
            try:
                try:
                    egress(S)
                except Exit:
                    pass
                if S[CL] is not None or S[RC] is not None:
                    return general(port, data, S, spec)
                if S[ES] == DROP_PORT:
                    return []
                compute(S)
                out: list[bytes] = []
                deparser(S, out)
            except AssertFail as e:
                log.error("egress: %s; packet dropped", e)
                return []
            out.append(S[PAY])
            pkt = b"".join(out)
            if S[TR]:
                pkt = pkt[:S[TR]]
            return [(spec, pkt)]

        return fast

    def _general(self, port: int, data: bytes, S0: list[Any] | None = None, eport0: int | None = None) -> list[tuple[int, bytes]]:
        """Every other case. ``S0``: state after the first ingress pass (and after its
        egress run when ``eport0`` is given)."""
        out: list[tuple[int, bytes]] = []
        ingress_q: deque[tuple[bytes, int, int, tuple[tuple[int, Any], ...]]] = deque()
        if S0 is None:
            ingress_q.append((data, port, NORMAL, ()))
        elif eport0 is None:
            self._after_ingress(S0, data, port, ingress_q, out)
        else:
            self._finish_egress(S0, eport0, port, ingress_q, out, 0)
            self._drain_clones(port, ingress_q, out)
        return self._drain_ingress(port, ingress_q, out)

    def _mcast_rest(self, port: int, S: list[Any], S2: list[Any], eport: int, rest: list[tuple[int, int]],
                    out: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """The fast multicast path after replica ``S2`` (egress done) asked for a clone or a
        recirculation: finish it and the ``rest`` of the replicas as ``_after_ingress`` would."""
        ingress_q: deque[tuple[bytes, int, int, tuple[tuple[int, Any], ...]]] = deque()
        self._finish_egress(S2, eport, port, ingress_q, out, 0)
        self._drain_clones(port, ingress_q, out)
        for rid, p in rest:
            S3 = S[:]
            S3[self.s_egress_rid] = rid
            S3[self.s_instance_type] = REPLICATION
            self._egress(S3, p, port, ingress_q, out, 0)
            self._drain_clones(port, ingress_q, out)
        return self._drain_ingress(port, ingress_q, out)

    def _drain_ingress(self, port: int, ingress_q: Any, out: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """Ingress passes of queued resubmitted/recirculated packets (and their outputs)."""
        passes = 1
        while ingress_q:
            pdata, pport, itype, preserved = ingress_q.popleft()
            passes += 1
            if passes > MAX_PASSES:
                log.error("packet from port %d: more than %d resubmit/recirculate passes, dropped", port, MAX_PASSES)
                break
            try:
                S = self._parse(pdata, pport, itype, preserved)
                self.c.verify(S)
                try:
                    self.c.ingress(S)
                except Exit:
                    pass
            except AssertFail as e:
                log.error("ingress: %s; packet dropped", e)
                continue
            self._after_ingress(S, pdata, pport, ingress_q, out)
        return out

    def _after_ingress(self, S: list[Any], pdata: bytes, pport: int, ingress_q: Any, out: list[tuple[int, bytes]]) -> None:
        egress_q: list[tuple[list[Any], int]] = []
        self._end_of_ingress(S, pdata, pport, ingress_q, egress_q)
        for S2, eport in egress_q:
            self._egress(S2, eport, pport, ingress_q, out, 0)
            self._drain_clones(pport, ingress_q, out)

    def _drain_clones(self, pport: int, ingress_q: Any, out: list[tuple[int, bytes]]) -> None:
        while self._pending_clones:
            S3, p3, d3 = self._pending_clones.pop(0)
            self._egress(S3, p3, pport, ingress_q, out, d3)

    def _end_of_ingress(self, S: list[Any], pdata: bytes, pport: int, ingress_q: Any, egress_q: list[tuple[list[Any], int]]) -> None:
        clone = S[self.s_clone]
        if clone is not None:
            session, fl = clone
            self._clone(session, fl, S, pdata, pport, INGRESS_CLONE, egress_q)
        digests = S[self.s_digests]
        if digests:
            for d in digests:
                self._deliver_digest(d)
        resub = S[self.s_resubmit]
        if resub is not None:
            ingress_q.append((pdata, pport, RESUBMIT, tuple((i, S[i]) for i in resub)))
            return
        grp = S[self.s_mcast_grp]
        if grp:
            for rid, p in self.pre.replicas(grp):
                S2 = S[:]
                S2[self.s_egress_rid] = rid
                S2[self.s_instance_type] = REPLICATION
                egress_q.append((S2, p))
            return
        spec = S[self.s_egress_spec]
        if spec == DROP_PORT:
            return
        # simple_switch sets instance_type to NORMAL before a unicast packet enters egress, so
        # a resubmitted or recirculated packet reads 0 there (its ingress pass read 6 or 4)
        S[self.s_instance_type] = NORMAL
        egress_q.append((S, spec))

    def _clone(self, session: int, fl: tuple[int, ...], S: list[Any], pdata: bytes, pport: int, itype: int,
               egress_q: list[tuple[list[Any], int]]) -> None:
        sess = self.pre.sessions.get(session)
        if sess is None:
            return
        preserved = tuple((i, S[i]) for i in fl)
        targets = [(0, sess.port)] if sess.port is not None else self.pre.replicas(sess.mcast_grp)
        for rid, p in targets:
            if p is None:
                continue
            S2 = self._parse(pdata, pport, itype, preserved)
            if sess.truncate:
                S2[self.s_trunc] = sess.truncate
            if sess.port is None:
                S2[self.s_egress_rid] = rid
            egress_q.append((S2, p))

    def _egress(self, S: list[Any], eport: int, pport: int, ingress_q: Any, out: list[tuple[int, bytes]], depth: int) -> None:
        S[self.s_egress_port] = eport
        S[self.s_egress_spec] = 0  # BMv2 clears egress_spec at the start of egress
        S[self.s_clone] = None
        S[self.s_recirc] = None
        try:
            self.c.egress(S)
        except Exit:
            pass
        except AssertFail as e:
            log.error("egress: %s; packet dropped", e)
            return
        self._finish_egress(S, eport, pport, ingress_q, out, depth)

    def _finish_egress(self, S: list[Any], eport: int, pport: int, ingress_q: Any, out: list[tuple[int, bytes]], depth: int) -> None:
        c = self.c
        try:
            clone = S[self.s_clone]
            if clone is not None:
                self._e2e(S, clone, eport, pport, ingress_q, out, depth)
            if S[self.s_egress_spec] == DROP_PORT:
                return
            c.compute(S)
            parts: list[bytes] = []
            c.deparser(S, parts)
        except AssertFail as e:
            log.error("egress: %s; packet dropped", e)
            return
        parts.append(S[self.s_payload])
        pkt = b"".join(parts)
        trunc = S[self.s_trunc]
        if trunc:
            pkt = pkt[:trunc]
        recirc = S[self.s_recirc]
        if recirc is not None:
            q = ingress_q if self._deferred is None else self._deferred
            q.append((pkt, pport, RECIRC, tuple((i, S[i]) for i in recirc)))
            return
        out.append((eport, pkt))

    def _e2e(self, S: list[Any], clone: tuple[int, tuple[int, ...]], eport: int, pport: int, ingress_q: Any,
             out: list[tuple[int, bytes]], depth: int) -> None:
        """E2E clone as BMv2: a copy of the headers at the end of egress, metadata reset
        except the field list; it runs egress again (after the original is deparsed)."""
        if depth >= MAX_PASSES:
            log.error("E2E clone loop deeper than %d, cut", MAX_PASSES)
            return
        session, fl = clone
        sess = self.pre.sessions.get(session)
        if sess is None:
            return
        targets = [(0, sess.port)] if sess.port is not None else self.pre.replicas(sess.mcast_grp)
        t = self.c.template
        for rid, p in targets:
            S2 = S[:]
            for lo, hi in (self.meta_range, self.sm_range):
                S2[lo:hi] = t[lo:hi]
            for i in fl:
                S2[i] = S[i]
            S2[self.s_instance_type] = EGRESS_CLONE
            S2[self.s_packet_length] = S[self.s_packet_length]
            if sess.port is None:
                S2[self.s_egress_rid] = rid
            S2[self.s_clone] = None
            if sess.truncate:
                S2[self.s_trunc] = sess.truncate
            self._pending_clones.append((S2, p, depth + 1))

    def _deliver_digest(self, d: DigestMessage) -> None:
        if self.digest_sink is not None:
            self.digest_sink(d)
        else:
            self.digest_queue.append(d)
