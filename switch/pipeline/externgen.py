"""Code generation for v1model extern functions, extern object methods and packet I/O."""

from __future__ import annotations

import struct
from typing import Any

from ..frontend import ir
from ..lowering.args import call_arg, field_slots
from ..lowering.externs import (Check, Checksum, Clone, FieldList, Hash, LogMsg, MarkToDrop, Random, Recirculate,
                                SendDigest, Truncate, Verify, lower_extern_call)
from ..lowering.packets import lookahead_place, packet_in_method
from ..lowering.places import Place
from ..lowering.types import bits, is_scalar
from . import guards
from .exprgen import VARBIT, ExprGen, StatementHooks, pack_expr, vl_parts, wrap_expr
from .gencontext import GenContext
from .layout import nslots
from .packing import chunk_plan

PACKET_TOO_SHORT = 1
STACK_OUT_OF_BOUNDS = 3


class ExternGen:
    """Extern functions/methods; the packet_in/packet_out methods. A part over the shared
    :class:`GenContext`: expressions come from ``exprs``, stores go to ``hooks``."""

    def __init__(self, ctx: GenContext, exprs: ExprGen, hooks: StatementHooks) -> None:
        self.ctx = ctx
        self.exprs = exprs
        self.hooks = hooks
        self.unsupported = ctx.unsupported

    # ``packet_in_method`` and ``lookahead_place`` are handed this part (see ``PacketInEmitter``).
    @property
    def in_parser(self) -> bool:
        return self.ctx.in_parser

    @in_parser.setter
    def in_parser(self, value: bool) -> None:
        self.ctx.in_parser = value

    def place(self, e: ir.Expr) -> Place:
        return self.exprs.place(e)

    # ------------------------------------------------------------------ hashing
    def algo_name(self, e: ir.Expr) -> str:
        if isinstance(e, ir.EnumMember):
            return e.member
        raise self.unsupported("a hash algorithm that is not a constant HashAlgorithm member", e)

    def hash_expr(self, algo: str, data: ir.Expr, node: Any, payload: bool = False) -> str:
        """Python expression of H(data) (unsigned, before base/max)."""
        fields = self.exprs.flatten(data)
        if algo not in ("crc16", "crc16_custom", "crc32", "crc32_custom", "csum16", "xor16", "identity"):
            raise self.unsupported(f"hash algorithm {algo}", node)
        fn = {"crc16": "_crc16", "crc16_custom": "_crc16", "crc32": "_crc32", "crc32_custom": "_crc32",
              "csum16": "_csum16", "xor16": "_xor16", "identity": "_identity"}[algo]
        if any(w == VARBIT for _, w in fields):
            # the list's width is known only at run time: pack it into bytes then
            data_b = f"_vl_bytes({vl_parts(fields)})"
            if payload:
                data_b = f"{data_b} + S[{self.ctx.prog.slot_payload}]"
            return f"{fn}({data_b})"
        x, total = pack_expr(fields)
        if algo == "csum16" and not payload:
            # 2**16 == 1 (mod 0xFFFF): the sum only needs each field's shift modulo 16,
            # which keeps the arithmetic on small ints (see hashing.csum16_int)
            pad = -total % 16
            shift = total + pad
            terms = []
            for fx, w in fields:
                shift -= w
                sh = shift % 16
                terms.append(f"({fx} << {sh})" if sh else fx)
            return f"_csum16_int({' + '.join(terms) or '0'})"
        pad = -total % 8
        nbytes = (total + pad) // 8
        if algo == "identity" and not payload:
            return f"(({x}) << {pad}) & 0xFFFFFFFFFFFFFFFF" if pad else f"({x}) & 0xFFFFFFFFFFFFFFFF"
        data_b = f"(({x}) << {pad}).to_bytes({nbytes}, 'big')" if pad else f"({x}).to_bytes({nbytes}, 'big')"
        if payload:
            data_b = f"{data_b} + S[{self.ctx.prog.slot_payload}]"
        return f"{fn}({data_b})"

    # ------------------------------------------------------------------ extern functions
    def extern_call(self, e: ir.ExternCall) -> str | None:
        op = lower_extern_call(e, self.unsupported)
        sm = self.ctx.prog
        if isinstance(op, MarkToDrop):
            self.ctx.emit(f"S[{sm.sm_slot('egress_spec')}] = 511")
            self.ctx.emit(f"S[{sm.sm_slot('mcast_grp')}] = 0")
        elif isinstance(op, Hash):
            algo = self.algo_name(op.algo)
            base = self.exprs.expr(op.base)
            h = self.hash_expr(algo, op.data, e)
            if isinstance(op.max, ir.Const):
                mv = int(op.max.value)
                r = f"{base} + ({h}) % {mv}" if mv else base
            else:
                r = f"_hash_result({h}, {base}, {self.exprs.expr(op.max)})"
            w, s = bits(op.result.type)
            self.hooks.store(op.result, f"({r}) & {(1 << w) - 1}" if not s else f"_wrap({r}, {w}, True)")
        elif isinstance(op, Random):
            lo, hi = self.exprs.expr(op.lo), self.exprs.expr(op.hi)
            self.hooks.store(op.result, f"_rng.randint({lo}, {hi}) if {lo} <= {hi} else {lo}")
        elif isinstance(op, Checksum):
            self.checksum(op, e)
        elif isinstance(op, Clone):
            session = self.exprs.expr(op.session)
            self.ctx.emit(f"S[{self.ctx.prog.slot_clone}] = ({session}, {self.field_list(op.fields)})")
        elif isinstance(op, Recirculate):
            slot = self.ctx.prog.slot_resubmit if op.resubmit else self.ctx.prog.slot_recirculate
            self.ctx.emit(f"S[{slot}] = {self.field_list(op.fields)}")
        elif isinstance(op, SendDigest):
            recv = self.exprs.expr(op.receiver)
            names, vals = self.digest_fields(op.data)
            t = op.data.type
            tname = t.name if isinstance(t, (ir.StructT, ir.HeaderT)) else ""
            self.ctx.emit(f"_digest(S, {tname!r}, {recv}, {tuple(names)!r}, ({''.join(v + ', ' for v in vals)}))")
        elif isinstance(op, Truncate):
            self.ctx.emit(f"S[{self.ctx.prog.slot_truncate}] = {self.exprs.expr(op.length)}")
        elif isinstance(op, LogMsg):
            vals = [v for v, _ in self.exprs.flatten(op.values)] if op.values is not None else []
            self.ctx.emit(f"_log_msg({op.text!r}, ({''.join(v + ', ' for v in vals)}))")
        elif isinstance(op, Check):
            c = self.exprs.expr(op.check)
            self.ctx.emit(f"if not {c}: raise _AssertFail({op.name + ' failed at ' + str(e.loc)!r})")
        elif isinstance(op, Verify):
            c = self.exprs.expr(op.check)
            err = self.exprs.expr(op.error)
            self.ctx.emit(f"if not {c}: raise _PErr({err})")
        elif op is None:
            raise self.unsupported(f"extern function {e.name}", e)
        return None

    def field_list(self, fl: FieldList) -> str:
        """The Python tuple of the slots a clone or recirculation carries."""
        if fl.data is not None:
            return self.ctx.prog.ref(self.field_slots(fl.data), "FL")
        if fl.index is not None:
            return self.ctx.prog.ref(self.ctx.prog.field_list(fl.index), "FL")
        return "()"

    def field_slots(self, e: ir.Expr) -> tuple[int, ...]:
        return field_slots(e, self.place, nslots, self.unsupported)

    def digest_fields(self, data: ir.Expr) -> tuple[list[str], list[str]]:
        t = data.type
        if isinstance(data, ir.StructInit):
            names = [n for n, _ in data.fields]
            vals = [self._digest_value(x) if is_scalar(x.type) else "None" for _, x in data.fields]
            return names, vals
        if isinstance(data, ir.ListExpr):
            return [f"f{i}" for i in range(len(data.elems))], [self._digest_value(x) for x in data.elems]
        if isinstance(t, (ir.StructT, ir.HeaderT)):
            p = self.exprs.place(data)
            names, vals = [], []
            off = 1 if isinstance(t, ir.HeaderT) else 0
            for f in t.fields:
                if not is_scalar(f.type):
                    raise self.unsupported("a digest struct with nested aggregates", data)
                names.append(f.name)
                vals.append(f"S[{p.at(off)}]")
                off += 1
            return names, vals
        return ["value"], [self.exprs.expr(data)]

    def _digest_value(self, x: ir.Expr) -> str:
        """A digest field's value: an int<W> as its (signed) value, as a struct field of
        the digest type holds it; other scalars as packed (bool as 0/1)."""
        if isinstance(x.type, ir.BitT) and x.type.signed:
            return self.exprs.expr(x)
        return self.exprs.flatten(x)[0][0]

    def checksum(self, op: Checksum, e: ir.ExternCall) -> None:
        cond = self.exprs.expr(op.condition)
        algo = self.algo_name(op.algo)
        ck = op.checksum
        self.ctx.emit(f"if {cond}:")
        self.ctx.ind += 1
        h = self.hash_expr(algo, op.data, e, op.payload)
        w, _ = bits(ck.type)
        if op.verify:
            self.ctx.emit(f"if ({h}) & {(1 << w) - 1} != {self.exprs.expr(ck)}: S[{self.ctx.prog.sm_slot('checksum_error')}] = 1")
        else:
            self.hooks.store(ck, f"({h}) & {(1 << w) - 1}")
        self.ctx.ind -= 1

    # ------------------------------------------------------------------ extern objects
    def stable(self, e: ir.Expr) -> bool:
        """``e`` is a local or action-data value that nothing writes after its initializer,
        so a range check on it may be hoisted (see :mod:`.guards`)."""
        return (isinstance(e, ir.VarRef) and e.decl.uid in self.ctx.locals and self.ctx.written is not None
                and e.decl.uid not in self.ctx.written)

    def guarded(self, ie: ir.Expr, i: str, size: int, stmt: str) -> None:
        """``stmt`` (an access at index ``i``) when ``i < size``: a constant index is decided
        now; a stable local's check is marked for hoisting."""
        if i.isdigit():
            if int(i) < size:
                self.ctx.emit(stmt)
            return
        line = f"if {i} < {size}: {stmt}"
        self.ctx.emit(guards.mark(line, i, size) if self.stable(ie) else line)

    def extern_method(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        st = self.ctx.prog.objects.instance_state(inst)
        kind = inst.type.name if isinstance(inst.type, ir.ExternT) else ""
        m = e.method
        name = self.ctx.prog.ref(st, "X")
        if kind == "register":
            self.ctx.prog.ns[name + "_c"] = st.cells
            if m == "read":
                dst = call_arg(e, "result", 0)
                ie = call_arg(e, "index", 1)
                i = self.exprs.simple(self.exprs.expr(ie))
                if i.isdigit():
                    self.hooks.store(dst, f"{name}_c[{i}]" if int(i) < st.size else "0")
                    return None
                value = f"{name}_c[{i}] if {i} < {st.size} else 0"
                n = len(self.ctx.lines)
                self.hooks.store(dst, value)
                if self.stable(ie) and len(self.ctx.lines) == n + 1 and self.ctx.lines[-1].endswith(value):
                    self.ctx.lines[-1] = guards.mark(self.ctx.lines[-1], i, st.size)
                return None
            if m == "write":
                ie = call_arg(e, "index", 0)
                i = self.exprs.simple(self.exprs.expr(ie))
                ve = call_arg(e, "value", 1)
                v = self.exprs.expr(ve)
                w, s = st.width, st.signed
                if ve.type != ir.BitT(w, s):
                    v = wrap_expr(v, w, s)
                self.guarded(ie, i, st.size, f"{name}_c[{i}] = {v}")
                return None
        if kind == "counter" and m == "count":
            ie = call_arg(e, "index", 0)
            i = self.exprs.simple(self.exprs.expr(ie))
            self.ctx.prog.ns[name + "_p"] = st.packets
            self.ctx.prog.ns[name + "_b"] = st.bytes
            self.guarded(ie, i, st.size,
                         f"{name}_p[{i}] += 1; {name}_b[{i}] += S[{self.ctx.prog.sm_slot('packet_length')}]")
            return None
        if kind == "direct_counter" and m == "count":
            return None  # BMv2 counts every hit of the owning table
        if kind == "meter" and m == "execute_meter":
            i = self.exprs.expr(call_arg(e, "index", 0))
            dst = call_arg(e, "result", 1)
            self.hooks.store(dst, f"{name}.execute({i}, S[{self.ctx.prog.sm_slot('packet_length')}])")
            return None
        if kind == "direct_meter" and m == "read":
            dst = call_arg(e, "result", 0)
            ent = f"S[{self.ctx.prog.slot_entry}]"
            self.hooks.store(dst, f"({ent}.meter.execute({name}.clock(), 1 if {name}.kind == 'packets' else S[{self.ctx.prog.sm_slot('packet_length')}]) if {ent} is not None and {ent}.meter is not None else 0)")
            return None
        raise self.unsupported(f"method {m} of extern {kind or inst.type}", e)

    # ------------------------------------------------------------------ packets
    def packet_in_method(self, e: ir.MethodCall) -> str | None:
        return packet_in_method(self, e)

    def lookahead_place(self, e: ir.MethodCall) -> Place:
        return lookahead_place(self, e)

    def scratch(self, t: ir.HeaderT, purpose: str) -> int:
        return self.ctx.prog.layout.alloc(t, purpose)

    def bump_next_index(self, stack: Place) -> None:
        self.ctx.emit(f"S[{stack.at()}] += 1")

    def lookahead_value(self, t: ir.Type, e: ir.MethodCall) -> str:
        w, s = bits(t)
        nb = (w + 7) // 8
        self.ctx.emit(f"if pos + {nb} > L: raise _PErr({PACKET_TOO_SHORT})")
        x = f"int.from_bytes(data[pos:pos + {nb}], 'big')"
        if nb * 8 != w:
            x = f"({x} >> {nb * 8 - w})"
        if s:
            x = wrap_expr(x, w, True)
        if isinstance(t, ir.BoolT):
            x = f"({x} != 0)"
        r = self.ctx.tmp()
        self.ctx.emit(f"{r} = {x}")
        return r

    def advance_bytes(self, n: int) -> None:
        self.ctx.emit(f"if pos + {n} > L: raise _PErr({PACKET_TOO_SHORT})")
        self.ctx.emit(f"pos += {n}")

    def advance_bits(self, amount: ir.Expr, e: ir.MethodCall) -> None:
        t = self.ctx.tmp()
        self.ctx.emit(f"{t} = {self.exprs.expr(amount)}")
        self.ctx.emit(f"if {t} & 7: raise _AssertFail('advance by a number of bits that is not a multiple of 8 at {e.loc}')")
        self.ctx.emit(f"if pos + ({t} >> 3) > L: raise _PErr({PACKET_TOO_SHORT})")
        self.ctx.emit(f"pos += {t} >> 3")

    def packet_length(self) -> str:
        return "L"

    def extract_varbit(self, p: Place, ht: ir.HeaderT, size: ir.Expr, node: Any) -> None:
        """Two-argument ``extract``: the header's varbit field gets ``size`` bits. Checked in
        BMv2's order (parser.cpp ``extract_VL``): a size that is not a whole number of bytes
        is ParserInvalidArgument, too few bytes left is PacketTooShort, more than the
        varbit's maximum is HeaderTooShort."""
        vl = [i for i, f in enumerate(ht.fields) if isinstance(f.type, ir.VarBitT)]
        if len(vl) != 1:
            raise self.unsupported(f"two-argument extract into header {ht.name}, which has "
                                   f"{len(vl)} varbit fields (it needs exactly one)", node)
        k = vl[0]
        vt = ht.fields[k].type
        assert isinstance(vt, ir.VarBitT)
        widths = [0 if i == k else bits(f.type)[0] for i, f in enumerate(ht.fields)]
        fixed = sum(widths)
        if fixed % 8 or vt.max_width % 8:
            raise self.unsupported(f"header {ht.name}: fixed fields of {fixed} bits and varbit<{vt.max_width}> "
                                   "are not whole numbers of bytes", node)
        pia = self.ctx.prog.error_number("ParserInvalidArgument", node)
        hts = self.ctx.prog.error_number("HeaderTooShort", node)
        n, nb, x = self.ctx.tmp(), self.ctx.tmp(), self.ctx.tmp()
        self.ctx.emit(f"{n} = {self.exprs.expr(size)}")
        self.ctx.emit(f"if {n} & 7: raise _PErr({pia})")
        self.ctx.emit(f"{nb} = {fixed // 8} + ({n} >> 3)")
        self.ctx.emit(f"if pos + {nb} > L: raise _PErr({PACKET_TOO_SHORT})")
        self.ctx.emit(f"if {nb} > {(fixed + vt.max_width) // 8}: raise _PErr({hts})")
        self.ctx.emit(f"{x} = int.from_bytes(data[pos:pos + {nb}], 'big')")
        if isinstance(p.base, str):
            b = self.ctx.tmp()
            self.ctx.emit(f"{b} = {p.base}")
            p = Place(b, p.type, p.union_siblings)
        after = sum(widths[k + 1:])
        targets, values = [], []
        for i, f in enumerate(ht.fields):
            if i == k:
                v = f"({x} >> {after}) & ((1 << {n}) - 1)" if after else f"{x} & ((1 << {n}) - 1)"
                targets.append(f"S[{p.at(1 + i)}]")
                values.append(f"({n}, {v})")
                continue
            w, signed = bits(f.type)
            if i < k:  # counted from the top: the shift depends on the varbit's width
                sh = f"{after + sum(widths[i + 1:k])} + {n}"
            else:
                sh = str(sum(widths[i + 1:]))
            v = f"({x} >> ({sh})) & {(1 << w) - 1}" if sh != "0" else f"{x} & {(1 << w) - 1}"
            if signed:
                v = wrap_expr(v, w, True)
            if isinstance(f.type, ir.BoolT):
                v = f"({v}) != 0"
            targets.append(f"S[{p.at(1 + i)}]")
            values.append(v)
        self.ctx.emit(f"{', '.join(targets)} = {', '.join(values)}")
        self.ctx.emit(f"S[{p.at()}] = True")
        for sb in p.union_siblings:
            self.ctx.emit(f"S[{sb}] = False")
        self.ctx.emit(f"pos += {nb}")

    def extract_into(self, p: Place, ht: ir.HeaderT, advance: bool, node: Any = None) -> None:
        if any(isinstance(f.type, ir.VarBitT) for f in ht.fields):
            raise self.unsupported(f"header {ht.name} has a varbit field: extract it with "
                                   "extract(hdr, sizeInBits)" if advance else
                                   f"lookahead of header {ht.name}, which has a varbit field", node or ht)
        w = ht.width
        if w % 8:
            raise self.unsupported(f"header {ht.name} of {w} bits (not a whole number of bytes)", node or ht)
        nb = w // 8
        self.ctx.emit(f"if pos + {nb} > L: raise _PErr({PACKET_TOO_SHORT})")
        if isinstance(p.base, str):
            b = self.ctx.tmp()
            self.ctx.emit(f"{b} = {p.base}")
            p = Place(b, p.type, p.union_siblings)
        self.extract_chunks(p, ht)
        self.ctx.emit(f"S[{p.at()}] = True")
        for sb in p.union_siblings:
            self.ctx.emit(f"S[{sb}] = False")
        if advance:
            self.ctx.emit(f"pos += {nb}")

    def extract_chunks(self, p: Place, ht: ir.HeaderT) -> None:
        fields = ht.fields
        if not fields:  # an empty header: extracting it only makes it valid
            return
        fmt, chunks = chunk_plan([bits(f.type)[0] for f in fields])
        unpack = self.ctx.prog.ref(struct.Struct(fmt).unpack_from, "UNPACK")
        plain = all(len(c.codes) == 1 and len(c.fields) == 1 for c in chunks) and not any(
            isinstance(f.type, ir.BoolT) or bits(f.type)[1] for f in fields)
        if plain and len(fields) > 1:
            self.ctx.emit(f"S[{p.at(1)}:{p.at(1 + len(fields))}] = {unpack}(data, pos)")
            return
        names = [self.ctx.tmp() for _ in range(sum(len(c.codes) for c in chunks))]
        self.ctx.emit(f"{''.join(n + ', ' for n in names)}= {unpack}(data, pos)")
        k = 0
        targets, values = [], []
        for c in chunks:
            parts = names[k:k + len(c.codes)]
            k += len(c.codes)
            rest = c.width
            terms = []
            for n, (_, w) in zip(parts, c.codes):
                rest -= w
                terms.append(f"{n} << {rest}" if rest else n)
            cv = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
            if len(c.fields) > 1 and len(terms) > 1:
                t = self.ctx.tmp()
                self.ctx.emit(f"{t} = {cv}")
                cv = t
            for idx, sh, fw in c.fields:
                x = cv
                if sh:
                    x = f"({x} >> {sh})"
                if sh + fw != c.width:
                    x = f"({x} & {(1 << fw) - 1})"
                ft = fields[idx].type
                if bits(ft)[1]:
                    x = wrap_expr(x, fw, True)
                if isinstance(ft, ir.BoolT):
                    x = f"({x} != 0)"
                targets.append(f"S[{p.at(1 + idx)}]")
                values.append(x)
        self.ctx.emit(f"{', '.join(targets)} = {', '.join(values)}")

    def emit_chunks(self, p: Place, ht: ir.HeaderT) -> None:
        fields = ht.fields
        if not fields:  # an empty header writes nothing
            self.ctx.emit("pass")
            return
        fmt, chunks = chunk_plan([bits(f.type)[0] for f in fields])
        pack = self.ctx.prog.ref(struct.Struct(fmt).pack, "PACK")
        plain = all(len(c.codes) == 1 and len(c.fields) == 1 for c in chunks) and not any(
            bits(f.type)[1] for f in fields)
        if plain and len(fields) > 1:
            self.ctx.emit(f"out.append({pack}(*S[{p.at(1)}:{p.at(1 + len(fields))}]))")
            return
        args = []
        for c in chunks:
            terms = []
            for idx, sh, fw in c.fields:
                x = f"S[{p.at(1 + idx)}]"
                if bits(fields[idx].type)[1]:
                    x = f"({x} & {(1 << fw) - 1})"
                terms.append(f"{x} << {sh}" if sh else x)
            cv = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
            if len(c.codes) > 1:
                if len(terms) > 1:
                    t = self.ctx.tmp()
                    self.ctx.emit(f"{t} = {cv}")
                    cv = t
                rest = c.width
                for _, w in c.codes:
                    rest -= w
                    x = f"{cv} >> {rest}" if rest else cv
                    args.append(f"({x}) & {(1 << w) - 1}" if rest != c.width - w else x)
            else:
                args.append(cv)
        self.ctx.emit(f"out.append({pack}({', '.join(args)}))")

    def emit_varbit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        self.ctx.emit(f"if S[{p.at()}]:")
        self.ctx.emit(f"    out.append(_vl_bytes({vl_parts(self.exprs.flatten_place(p, t))}))")

    def emit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        self.ctx.emit(f"if S[{p.at()}]:")
        self.ctx.ind += 1
        self.emit_chunks(p, t)
        self.ctx.ind -= 1
