"""C code generation for one v1model program: IR to one C translation unit.

Why a second code generator next to ``innet.switch.pipeline``: the Python executor is the
reference; this one produces the same behaviour as C functions over a flat ``uint64_t``
slot array ``S`` laid out exactly like the Python executor's slot list
(``pipeline.layout``), so that per-packet work runs without the GIL. Values are W-bit
unsigned patterns (``int<W>`` too; signed operations sign-extend with ``SX``); booleans
are 0/1.

Control flow: ``exit`` sets ``c->exited`` and every call site returns when ``c->exited``
or ``c->fault`` (a failed ``assert``) is set, after the copy-out of its out/inout
arguments (P4_16 12.5). Parser errors store ``parser_error`` and end the parser.

Everything this generator does not implement raises ``NativeUnsupported`` naming the
construct and its file:line:col; nothing falls through to a guess.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..frontend import ir
from ..lowering.args import annotated_field_list, call_arg, field_slots
from ..lowering.assign import assign_aggregate
from ..lowering.binary import lower_binary, lower_unary, scalar_operator
from ..lowering.branches import switch_branches
from ..lowering.calls import bind_arguments, call_statement, call_value, subparser_bindings, table_result
from ..lowering.casts import without_enum
from ..lowering.compare import aggregate_equal
from ..lowering.errors import Unsupported
from ..lowering.instances import known_instance
from ..lowering.externs import (Check, Checksum, Clone, FieldList, Hash, MarkToDrop, Random, Recirculate, SendDigest,
                                Truncate, Verify, lower_extern_call)
from ..lowering.methods import method_call
from ..lowering.packets import lookahead_place, packet_in_method
from ..lowering.order import Pinned, captured, value_of, visit
from ..lowering.parsers import declare_parser_locals
from ..lowering.places import Place, SlotLayout, resolve_place, runtime_index, scalar_leaves
from ..lowering.types import bits, is_scalar
from ..lowering.v1switch import bind_parameters, field_starts, v1switch_blocks
from .wide import (WIDE_RUNTIME, WideLayout, default_values, field_offset, header_offsets, limbs, limbs_of, nslots,
                   wide_width, word_bits)
from .widegen import WideGen
from ..pipeline.objects import _action_refs
from ..pipeline.tables import KeyDef
from . import reroll
from .crt import ARCH, RUNTIME
from .errors import NativeUnsupported
from .fuse import CellLayout, fuse_mode, register_groups

CORE_ERRORS = ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
               "ParserTimeout", "ParserInvalidArgument")
PACKET_TOO_SHORT, STACK_OUT_OF_BOUNDS = 1, 3
LAZY_MIN_FIELDS = 64
"""Headers with at least this many fields may skip their template copy (``lazy_headers``)."""
VB_MAXW = 8191
"""Widest varbit the native executor stores (see crt: a slot locates the bits)."""
VARBIT = -1
"""The width ``flatten`` gives a varbit field: known at run time only (``vb_w``)."""
ENT_HDR = 5
"""Header words of a C table entry: action, handle, packets, bytes, last hit (ns)."""
SLOTS = SlotLayout(nslots, field_offset)
"""The native slot layout (wide values take several slots), for :func:`resolve_place`."""
HASHES = {"crc16": "h_crc16", "crc16_custom": "h_crc16", "crc32": "h_crc32", "crc32_custom": "h_crc32",
          "csum16": "h_csum16", "xor16": "h_xor16", "identity": "h_identity"}


def _fw(t: ir.Type, node: Any = None) -> int:
    """The width of a scalar field, wide or not (for packing and hashing)."""
    return wide_width(t) or word_bits(t, node)[0]


def _m(w: int) -> str:
    return f"0x{(1 << w) - 1:x}ULL"


@dataclass
class TableMeta:
    """What the Python side needs to push a table's entries into C."""

    index: int
    cp_name: str
    keys: list[KeyDef]
    nparams: int
    exact: bool
    direct_counter: bool
    indirect: bool = False
    """Entries point to action-profile members or (selectors) groups: resolved by Python
    into the entry's action word, or GROUP with the group's offset as the first param."""
    selector: str | None = None  # C hash function of an action_selector
    sel_widths: tuple[int, ...] = ()
    direct_meter: bool = False
    timeout: bool = False

    @property
    def ncols(self) -> int:
        """Key columns of a C entry: a wide key takes one per limb (most significant first)."""
        return sum(limbs_of(k.width) for k in self.keys)

    def kinds(self) -> list[int]:
        """The C kind of each column: 0 exact/masked, 1 range, for a wide range key
        1 + its limbs on its first column and 0 on the others (a lexicographic range)."""
        out: list[int] = []
        for k in self.keys:
            n = limbs_of(k.width)
            if k.kind == "range":
                out += [1] if n == 1 else [1 + n] + [0] * (n - 1)
            else:
                out += [0] * n
        return out


@dataclass
class UnitMeta:
    """The generated unit's objects, in C index order."""

    registers: list[tuple[str, int, int, bool]] = field(default_factory=list)  # name, size, width, signed
    reg_cells: list[CellLayout] = field(default_factory=list)  # where each register's cells live
    blocks: list[tuple[int, int]] = field(default_factory=list)  # register blocks: rows (size + 1), stride
    counters: list[tuple[str, int]] = field(default_factory=list)
    meters: list[tuple[str, int, str, bool]] = field(default_factory=list)  # name, size, kind, direct
    tables: dict[str, TableMeta] = field(default_factory=dict)
    digests: list[tuple[str, tuple[str, ...], tuple[tuple[int, bool], ...]]] = field(default_factory=list)
    nslots: int = 0


class Unit:
    """Generates the C translation unit of one program."""

    def __init__(self, program: ir.Program, fuse: str | None = None, loops: bool = True) -> None:
        if program.main is None or program.main.type_name != "V1Switch":
            raise NativeUnsupported("a program whose main package is not V1Switch",
                                    program.main.loc if program.main else None)
        self.program = program
        self.layout = WideLayout()
        user = [e for e in program.errors if e not in CORE_ERRORS]
        self.errors = {n: i for i, n in enumerate(CORE_ERRORS + tuple(user))}
        self.fns: dict[int, str] = {}
        self.protos: list[str] = []
        self.bodies: list[str] = []
        self.meta = UnitMeta()
        self.states: dict[int, tuple[str, int]] = {}  # extern instance -> (kind, index)
        self.field_lists: list[tuple[int, ...]] = []
        self.deparse_max = 0
        self.ret_slots: dict[int, int] = {}
        self.sm: dict[str, int] = {}
        self.oob: dict[ir.Type, int] = {}
        self.wk = 0
        """Limbs of the C ``wv`` type: the most any wide value of the program needs (0: none)."""
        self.groups = register_groups(program, fuse_mode(fuse))
        self.group_blocks: dict[tuple[str, ...], int] = {}
        self.loops = loops
        """Reroll repeated statements into loops (``reroll``)."""
        self.extracts: dict[int, int] = {}  # validity slot of a header -> extracts into it
        self.lazy: list[tuple[int, int, int]] = []  # (validity slot, first field slot, fields)

    # ------------------------------------------------------------------ layout
    def _setup(self) -> None:
        blocks, (H, M, SM) = v1switch_blocks(self.program, Unsupported(NativeUnsupported))
        self.blocks = blocks
        parser = blocks[0]
        for t, what in ((H, "headers"), (M, "metadata")):
            self._check_type(t, parser.loc, what)
        L = self.layout
        self.h_base, self.m_base, self.sm_base = L.alloc(H, "hdr"), L.alloc(M, "meta"), L.alloc(SM, "sm")
        self.H, self.M, self.SM = H, M, SM
        assert isinstance(SM, ir.StructT)
        self.sm.update(field_starts(SM, self.sm_base, nslots))
        bind_parameters(blocks, {H: self.h_base, M: self.m_base, SM: self.sm_base}, L.bind)
        self.hidden = {n: L.alloc_scalar(n, 0) for n in ("CL", "CLS", "CLF", "RS", "RC", "TR", "PAYP", "PAYL",
                                                          "NOW", "DM")}

    def _check_type(self, t: ir.Type, loc: Any, what: str) -> None:
        if isinstance(t, ir.VarBitT):
            if t.max_width > VB_MAXW:
                raise NativeUnsupported(f"{t} in the {what}: wider than varbit<{VB_MAXW}> (not implemented natively)",
                                        loc)
            return
        if wide_width(t):
            self.wk = max(self.wk, limbs(t))
        if isinstance(t, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)):
            for f in t.fields:
                if isinstance(f.type, ir.VarBitT) and f.type.max_width > VB_MAXW:
                    raise NativeUnsupported(f"field {t.name}.{f.name} of type {f.type}: wider than "
                                            f"varbit<{VB_MAXW}> (not implemented natively)", loc)
                self._check_type(f.type, loc, what)
        if isinstance(t, ir.StackT):
            self._check_type(t.elem, loc, what)

    def var(self, uid: int, t: ir.Type, name: str, loc: Any) -> int:
        if uid not in self.layout.by_uid:
            self._check_type(t, loc, f"variable '{name}'")
        return self.layout.var(uid, t, name)

    def oob_scratch(self, elem: ir.Type) -> int:
        """Slot base of the scratch element out-of-bounds stack accesses use (controls)."""
        base = self.oob.get(elem)
        if base is None:
            base = self.oob[elem] = self.layout.alloc(elem, "oob")
        return base

    def field_list(self, slots: tuple[int, ...]) -> int:
        if slots in self.field_lists:
            return self.field_lists.index(slots)
        self.field_lists.append(slots)
        return len(self.field_lists) - 1

    def field_list_ann(self, index: int) -> tuple[int, ...]:
        return annotated_field_list(index, self.M, self.m_base, self.program.consts, nslots,
                                    Unsupported(NativeUnsupported))

    # ------------------------------------------------------------------ extern state
    def instance(self, inst: ir.Instance) -> tuple[str, int]:
        st = self.states.get(id(inst))
        if st is not None:
            return st
        x = known_instance(inst, Unsupported(NativeUnsupported),
                           lambda kind: f"extern {kind} instance '{inst.cp_name}' (not implemented natively)")
        if x.kind == "register":
            vt = x.value
            assert vt is not None
            if vt.width > 64:
                self.wk = max(self.wk, limbs(vt))
            self.meta.registers.append((x.name, x.size, vt.width, vt.signed))
            # a wide cell is limbs(vt) words of its own block (``fuse`` groups W <= 64 only)
            self.meta.reg_cells.append(self.cell_layout(x.name, x.size * limbs(vt)))
            st = ("register", len(self.meta.registers) - 1)
        elif x.kind == "counter":
            self.meta.counters.append((x.name, x.size))
            st = ("counter", len(self.meta.counters) - 1)
        elif x.kind == "direct_counter":
            st = ("direct_counter", 0)
        elif x.kind in ("meter", "direct_meter"):
            self.meta.meters.append((x.name, x.size, x.unit, x.kind == "direct_meter"))
            st = (x.kind, len(self.meta.meters) - 1)
        else:  # action_profile, action_selector
            if x.kind == "action_selector":
                algo = inst.ctor_args[0] if inst.ctor_args else None
                if not isinstance(algo, ir.EnumMember) or algo.member not in HASHES:
                    raise NativeUnsupported(f"action_selector {inst.cp_name}: hash algorithm "
                                            f"{getattr(algo, 'member', algo)} (not implemented natively)", inst.loc)
            st = ("profile", 0)
        self.states[id(inst)] = st
        return st

    def cell_layout(self, name: str, size: int) -> CellLayout:
        """A register's place: a column of its group's block (``fuse``), or a block of its own."""
        group = self.groups.get(name)
        if group is None:
            self.meta.blocks.append((size + 1, 1))
            return CellLayout(len(self.meta.blocks) - 1, 0, 1)
        blk = self.group_blocks.get(group)
        if blk is None:
            blk = self.group_blocks[group] = len(self.meta.blocks)
            self.meta.blocks.append((size + 1, len(group)))
        return CellLayout(blk, group.index(name), len(group))

    # ------------------------------------------------------------------ functions
    def define(self, proto: str, g: "Gen") -> None:
        self.protos.append(proto + ";")
        self.bodies.append(proto + " {\n" + "\n".join(g.lines) + "\n}\n")

    def action_fn(self, a: ir.Action) -> str:
        name = self.fns.get(id(a))
        if name is None:
            name = self.fns[id(a)] = f"A{len(self.fns)}"
            g = Gen(self, "action")
            j = 0
            for p in a.data_params:  # a wide parameter takes its limbs' words, low limb first
                k = limbs(p.type)
                g.data[p.uid] = f"w_ld(&d[{j}], {k})" if wide_width(p.type) else f"d[{j}]"
                if k > 1:
                    self.wk = max(self.wk, k)
                j += k
            for p in a.params:
                if p.direction is not None:
                    self.var(p.uid, p.type, p.name, p.loc)
            g.block(a.body)
            self.define(f"static void {name}(ctx_t *c, u64 *S, const u64 *d)", g)
        return name

    def function_fn(self, f: ir.Function) -> str:
        name = self.fns.get(id(f))
        if name is None:
            name = self.fns[id(f)] = f"F{len(self.fns)}"
            g = Gen(self, "function")
            g.func = f
            g.ret = "return 0;"
            g.block(f.body)
            g.emit("return 0;")
            self.define(f"static u64 {name}(ctx_t *c, u64 *S)", g)
        return name

    def function_ret(self, f: ir.Function) -> int:
        base = self.ret_slots.get(id(f))
        if base is None:
            base = self.ret_slots[id(f)] = self.layout.alloc(f.return_type, f"{f.name}.return")
        return base

    def control_fn(self, ctl: ir.Control, deparser: bool = False) -> str:
        name = self.fns.get(id(ctl))
        if name is None:
            name = self.fns[id(ctl)] = f"C{len(self.fns)}"
            g = Gen(self, "deparser" if deparser else "control")
            for loc in ctl.locals:
                if isinstance(loc, ir.VarDeclStmt):
                    g.stmt(loc)
                elif isinstance(loc, ir.Instance) and loc.decl is None:
                    self.instance(loc)
            g.block(ctl.body)
            self.define(f"static void {name}(ctx_t *c, u64 *S)", g)
        return name

    def parser_fn(self, p: ir.Parser) -> str:
        name = "P0"
        g = Gen(self, "parser")
        g.in_parser = True
        g.parser_states(p, "", "done")
        g.emit("perr: ;")
        g.emit("done: ;")
        pe = self.sm["parser_error"]
        body = "\n".join(g.lines)
        self.lazy = self.lazy_headers(body)
        self.protos.append(f"static void {name}(ctx_t *c, u64 *S);")
        self.bodies.append(f"static void {name}(ctx_t *c, u64 *S) {{\n    const u8 *data = c->data; u32 L = c->len; (void)data; (void)L;\n"
                           f"    u64 perr_code = 0; (void)perr_code;\n{body}\n"
                           f"    if (perr_code) S[{pe}] = perr_code;\n    return;\n}}\n")
        return name

    def lazy_headers(self, parser: str) -> list[tuple[int, int, int]]:
        """Big headers whose fields need no template copy before parsing.

        Why: a packet's slots start as a copy of TEMPLATE; for a header of thousands of
        fields (agg2048, innet at K=2048) that copy is as much memory traffic as parsing
        the header. When the parser writes the header's fields only by extracting it
        (and sets its valid bit only there), never reads them and never invalidates it,
        every field is either written by an extract or, for a header the parser left
        invalid, copied from TEMPLATE right after parsing: the same slots as before.
        Checked on the generated parser text; anything else (dynamic slot indexes other
        than extracts, whole-range copies) keeps the full copy."""
        H = self.H
        if not isinstance(H, ir.StructT):
            return []
        lines = [ln.strip() for ln in parser.splitlines()]
        if any("&S[" in ln for ln in lines):
            return []
        mentions: dict[int, int] = {}
        for ln in lines:
            extract = "= getbits(" in ln and ln.startswith("S[")
            for idx in re.findall(r"S\[([^\]]*)\]", ln):
                if idx.isdigit():
                    if not (extract and ln.startswith(f"S[{idx}]")):
                        mentions[int(idx)] = mentions.get(int(idx), 0) + 1
                elif not extract:
                    return []
        out = []
        off = self.h_base
        for f in H.fields:
            n = nslots(f.type)
            if isinstance(f.type, ir.HeaderT) and len(f.type.fields) >= LAZY_MIN_FIELDS:
                v = off
                sets = sum(1 for ln in lines if ln == f"S[{v}] = 1;")
                touched = any(k in mentions for k in range(v + 1, v + n))
                if sets == self.extracts.get(v, 0) == mentions.get(v, 0) and not touched:
                    out.append((v, v + 1, n - 1))
            off += n
        return out

    # ------------------------------------------------------------------ unit
    def generate(self) -> tuple[str, UnitMeta]:
        self._setup()
        P, VC, IG, EG, CC, DP = self.blocks
        assert isinstance(P, ir.Parser)
        names = [self.parser_fn(P), self.control_fn(VC), self.control_fn(IG), self.control_fn(EG),  # type: ignore[arg-type]
                 self.control_fn(CC), self.control_fn(DP, deparser=True)]  # type: ignore[arg-type]
        self.meta.nslots = self.layout.size
        return self._assemble(names), self.meta

    def _slot_init(self) -> list[str]:
        """``init_slots``: TEMPLATE into a packet's slots but the lazy headers' fields;
        ``lazy_fields``: after the parser, those of a header it left invalid."""
        init, fix = [], []
        at = 0
        for v, lo, n in sorted(self.lazy, key=lambda x: x[1]):
            if lo > at:
                init.append(f"memcpy(S + {at}, TEMPLATE + {at}, {lo - at} * sizeof(u64));")
            at = lo + n
            fix.append(f"if (!S[{v}]) memcpy(S + {lo}, TEMPLATE + {lo}, {n} * sizeof(u64));")
        init.append(f"memcpy(S + {at}, TEMPLATE + {at}, (NSLOTS - {at}) * sizeof(u64));")
        return ["static void init_slots(u64 *S) { " + " ".join(init) + " }",
                "static void lazy_fields(u64 *S) { " + " ".join(fix) + " (void)S; }"]

    def _assemble(self, names: list[str]) -> str:
        tmpl = []
        for v in self.layout.template:
            tmpl.append("0ULL" if isinstance(v, tuple) else f"{int(v)}ULL")  # a varbit: (0, 0), width 0
        sm = self.sm
        tm = list(self.meta.tables.values())
        d = [
            f"#define NSLOTS {max(1, self.layout.size)}",
            f"#define NREG {len(self.meta.registers)}",
            f"#define NBLK {len(self.meta.blocks)}",
            f"#define NCNT {len(self.meta.counters)}",
            f"#define NMTR {len(self.meta.meters)}",
            f"#define NTBL {len(tm)}",
        ]
        head = RUNTIME + (f"#define WK {self.wk}\n" + WIDE_RUNTIME if self.wk else "")
        lo_m, hi_m = self.m_base, self.m_base + nslots(self.M)
        sm_lo, sm_hi = min(sm.values()), max(sm.values()) + 1
        defs = [
            f"static const u64 TEMPLATE[NSLOTS] = {{{', '.join(tmpl) or '0'}}};",
            f"#define META_LO {lo_m}", f"#define META_HI {hi_m}", f"#define SM_LO {sm_lo}", f"#define SM_HI {sm_hi}",
            *(f"#define SLOT_{k} {v}" for k, v in self.hidden.items()),
            *(f"#define SM_{k.upper()} {sm[k]}" for k in ("ingress_port", "instance_type", "packet_length",
                                                          "egress_spec", "egress_port", "mcast_grp", "egress_rid")),
            f"#define DEPARSE_MAX {self.deparse_max}",
            f"static const u32 REG_SIZES[NREG + 1] = {{{''.join(f'{r[1] * limbs(ir.BitT(r[2]))}, ' for r in self.meta.registers)}0}};",
            f"static const u32 REG_BLK[NREG + 1] = {{{''.join(f'{r.block}, ' for r in self.meta.reg_cells)}0}};",
            f"static const u32 REG_OFF[NREG + 1] = {{{''.join(f'{r.member}, ' for r in self.meta.reg_cells)}0}};",
            f"static const u64 BLK_CELLS[NBLK + 1] = {{{''.join(f'{n * g}ULL, ' for n, g in self.meta.blocks)}0}};",
            f"static const u32 CNT_SIZES[NCNT + 1] = {{{''.join(f'{r[1]}, ' for r in self.meta.counters)}0}};",
            f"static const u32 MTR_SIZES[NMTR + 1] = {{{''.join(f'{r[1]}, ' for r in self.meta.meters)}0}};",
            f"static const int TBL_NKEYS[NTBL + 1] = {{{''.join(f'{t.ncols}, ' for t in tm)}0}};",
            f"static const int TBL_NPARAMS[NTBL + 1] = {{{''.join(f'{t.nparams}, ' for t in tm)}0}};",
            f"static const int TBL_EXACT[NTBL + 1] = {{{''.join(f'{int(t.exact)}, ' for t in tm)}0}};",
            f"static const int TBL_DMETER[NTBL + 1] = {{{''.join(f'{int(t.direct_meter)}, ' for t in tm)}0}};",
        ]
        for t in tm:
            kinds = ", ".join(str(k) for k in t.kinds()) or "0"
            defs.append(f"static const u8 TBLK{t.index}[] = {{{kinds}}};")
        defs.append(f"static const u8 *TBL_KINDS[NTBL + 1] = {{{''.join(f'TBLK{t.index}, ' for t in tm)}0}};")
        for i, fl in enumerate(self.field_lists):
            defs.append(f"static const int32_t FL{i}[] = {{{len(fl)}{''.join(f', {s}' for s in fl)}}};")
        defs.append(f"static const int32_t *FIELD_LISTS[] = {{{''.join(f'FL{i}, ' for i in range(len(self.field_lists)))}0}};")
        defs += self._slot_init()
        macros = [f"#define PARSER {names[0]}", f"#define VERIFY {names[1]}", f"#define INGRESS {names[2]}",
                  f"#define EGRESS {names[3]}", f"#define COMPUTE {names[4]}", f"#define DEPARSER {names[5]}"]
        return "\n".join(d + [head] + defs + ["struct sw;", "static u64 *sw_blk_(ctx_t *c, int b);",
                                               "static u64 *sw_cnt_(ctx_t *c, int r, int b);",
                                               "static tbl_t *sw_tbl_(ctx_t *c, int t);",
                                               "static u64 now_ns(sw_t *sw);",
                                               "static void dig_emit(ctx_t *c, u64 id, u64 recv, u32 n, const u64 *vals);",
                                               "static mcell_t *sw_mtr_(ctx_t *c, int m);",
                                               "static double now_us(ctx_t *c, int m);",
                                               "static u64 rnd_(ctx_t *c, u64 lo, u64 hi);"]
                         + self.protos + self.bodies + macros + [ARCH,
                         "static u64 *sw_blk_(ctx_t *c, int b) { return c->sw->blk[b]; }",
                         "static u64 *sw_cnt_(ctx_t *c, int r, int b) { return b ? c->sw->cnt_b[r] : c->sw->cnt_p[r]; }",
                         "static tbl_t *sw_tbl_(ctx_t *c, int t) { return &c->sw->tbl[t]; }",
                         "static mcell_t *sw_mtr_(ctx_t *c, int m) { return c->sw->mtr[m]; }",
                         "static double now_us(ctx_t *c, int m) { return meter_now(c->sw, m); }",
                         "static u64 rnd_(ctx_t *c, u64 lo, u64 hi) { return rnd_range(c->sw, lo, hi); }"])


class Gen(WideGen):
    """Generates the body of one C function from IR statements and expressions (values
    wider than 64 bits: :class:`.widegen.WideGen`)."""

    u: Unit

    def __init__(self, unit: Unit, kind: str) -> None:
        self.u = unit
        self.unsupported = Unsupported(NativeUnsupported)
        self.kind = kind
        self.lines: list[str] = []
        self.ind = 1
        self.ntmp = 0
        self.data: dict[int, str] = {}
        self.in_parser = False
        self.func: ir.Function | None = None
        self.ret = "return;"
        self.pinned = Pinned()
        self.place_memo: dict[int, tuple[ir.Expr, Place]] = {}  # l-values already evaluated
        self.loops: list[int] = []  # label numbers of the enclosing for loops (innermost last)

    # ------------------------------------------------------------------ helpers
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def tmp(self, init: str | None = None) -> str:
        self.ntmp += 1
        t = f"_t{self.ntmp}"
        self.emit(f"u64 {t}{' = ' + init if init is not None else ' = 0'};")
        return t

    def stop(self) -> None:
        """After a call: leave this function when the callee exited or faulted."""
        if self.in_parser:
            self.emit("if (c->fault) return;")
        else:
            self.emit(f"if (c->exited | c->fault) {self.ret}")

    def oob(self, e: Any) -> str:
        if self.in_parser:
            return f"{{ perr_code = {STACK_OUT_OF_BOUNDS}; goto perr; }}"
        return f"{{ c->fault = 1; {self.ret} }}"

    def oob_place(self, bad: str, pos: str, elem: ir.Type) -> Place:
        """A stack element at a run-time index outside a parser, as the python executor's
        ``oob_place``: out of bounds it is a scratch element reset to invalid."""
        scratch = Place(self.u.oob_scratch(elem), elem)
        t = self.tmp(pos)
        self.emit(f"if ({bad}) {{")
        self.ind += 1
        self.emit(f"{t} = {scratch.base};")
        self.reset(scratch)
        self.ind -= 1
        self.emit("}")
        return Place(t, elem)

    # ------------------------------------------------------------------ places
    def place(self, e: ir.Expr) -> Place:
        memo = self.place_memo.get(id(e))
        if memo is not None and memo[0] is e:
            return memo[1]
        return resolve_place(e, self, SLOTS)

    def var_slot(self, e: ir.VarRef) -> int | None:
        if e.decl.uid in self.data:
            return None
        return self.u.var(e.decl.uid, e.decl.type, e.decl.name, e.loc)

    def stack_index(self, e: ir.StackElem, base: Place, esz: int) -> Place:
        st = e.base.type
        assert isinstance(st, ir.StackT)
        if wide_width(e.index.type):
            w, s = 64, False
            idx = self.tmp(f"w_sat64({self.expr(e.index)})")
        else:
            w, s = word_bits(e.index.type, e)
            idx = self.tmp(self.expr(e.index))
        cond = f"SX({idx}, {w}) < 0 || SX({idx}, {w}) >= {st.size}" if s else f"{idx} >= {st.size}"
        if not self.in_parser:
            return self.oob_place(cond, f"{base.at(1)}+{idx}*{esz}", st.elem)
        self.emit(f"if ({cond}) {self.oob(e)}")
        return Place(f"({base.at(1)}+{idx}*{esz})", st.elem)

    def stack_end(self, e: ir.StackProp, base: Place, esz: int) -> Place:
        st = e.base.type
        assert isinstance(st, ir.StackT)
        if e.prop == "next":
            t = self.tmp(f"S[{base.at()}]")
            self.emit(f"if ({t} >= {st.size}) {self.oob(e)}")
        else:
            t = self.tmp(f"S[{base.at()}] - 1")
            if not self.in_parser:
                return self.oob_place(f"S[{base.at()}] == 0", f"{base.at(1)}+{t}*{esz}", st.elem)
            self.emit(f"if (S[{base.at()}] == 0) {self.oob(e)}")
        return Place(f"({base.at(1)}+{t}*{esz})", st.elem)

    # ------------------------------------------------------------------ expressions
    def expr(self, e: ir.Expr) -> str:
        return value_of(self, e)

    def x_Const(self, e: ir.Const) -> str:
        if isinstance(e.value, bool) or isinstance(e.type, ir.BoolT):
            return "1" if e.value else "0"
        v = int(e.value)
        if wide_width(e.type):
            return self.w_const(e)
        if isinstance(e.type, ir.BitT):
            v &= (1 << e.type.width) - 1
        elif v < 0 or v >> 64:
            raise self.unsupported(f"compile-time integer {v} outside 0..2**64-1", e)
        return f"{v}ULL"

    def x_ErrorMember(self, e: ir.ErrorMember) -> str:
        n = self.u.errors.get(e.name)
        if n is None:
            raise self.unsupported(f"unknown error member {e.name}", e)
        return str(n)

    def x_EnumMember(self, e: ir.EnumMember) -> str:
        if e.enum.values is not None:
            assert e.enum.underlying is not None
            return f"{e.enum.value_of(e.member) & ((1 << e.enum.underlying.width) - 1)}ULL"
        return str(e.enum.members.index(e.member))

    def x_VarRef(self, e: ir.VarRef) -> str:
        d = self.data.get(e.decl.uid)
        if d is not None:
            return d
        if not is_scalar(e.type):
            raise self.unsupported(f"aggregate '{e.decl.name}' used as a scalar", e)
        return self.load(self.place(e), e.type)

    def x_Member(self, e: ir.Member) -> str:
        if isinstance(e.base, ir.TableApply):
            return table_result(e, self)
        return self.load(self.place(e), e.type)

    def x_StackElem(self, e: ir.StackElem) -> str:
        return self.load(self.place(e), e.type)

    def x_StackProp(self, e: ir.StackProp) -> str:
        st = e.base.type
        assert isinstance(st, ir.StackT)
        if e.prop == "size":
            return f"{st.size}ULL"
        if e.prop == "lastIndex":
            return f"((S[{self.place(e.base).at()}] - 1) & 0xFFFFFFFFULL)"
        raise self.unsupported(f"stack property {e.prop!r} as a value", e)

    def x_Slice(self, e: ir.Slice) -> str:
        if wide_width(e.base.type):
            return self.w_slice(e)
        base = self.expr(e.base)
        return f"(({base} >> {e.lo}) & {_m(e.hi - e.lo + 1)})"

    def x_Unary(self, e: ir.Unary) -> str:
        return lower_unary(self, e)

    def scalar_unary(self, e: ir.Unary, x: str) -> str:
        if isinstance(e.type, ir.IntT):
            raise self.unsupported(f"unary {e.op} on a compile-time int", e)
        if wide_width(e.type):
            return self.w_unary(e)
        w, _ = word_bits(e.type, e)
        if e.op == "~":
            return f"((~{x}) & {_m(w)})"
        return f"((0ULL - {x}) & {_m(w)})"

    def x_Binary(self, e: ir.Binary) -> str:
        return lower_binary(self, e)

    def read_left(self, e: ir.Expr) -> str:
        return self.vtmp(e.type, self.expr(e))

    def short_circuit(self, op: str, a: str, b: str, pre: list[str]) -> str:
        if not pre:
            return f"({a} {op} {b})"
        t = self.tmp(f"!!({a})")
        self.emit(f"if ({'' if op == '&&' else '!'}{t}) {{")
        self.lines.extend(pre)
        self.emit(f"    {t} = !!({b});")
        self.emit("}")
        return t

    def negate(self, cond: str) -> str:
        return f"(!{cond})"

    def scalar_binary(self, e: ir.Binary) -> str:
        op = e.op
        lt = e.left.type
        if wide_width(lt) or wide_width(e.right.type) or wide_width(e.type):
            return self.w_binary(e)
        a, b = self.expr(e.left), self.expr(e.right)
        if op in ("==", "!=") and isinstance(lt, ir.VarBitT):
            return f"({'' if op == '==' else '!'}vb_eq({a}, {b}))"
        if op in ("==", "!="):
            return f"({a} {op} {b})"
        if op in ("<", "<=", ">", ">="):
            if isinstance(lt, ir.IntT):
                return f"({a} {op} {b})"
            w, s = word_bits(lt, e)
            return f"(SX({a}, {w}) {op} SX({b}, {w}))" if s else f"({a} {op} {b})"
        rt = e.type
        if isinstance(rt, ir.IntT):
            raise self.unsupported(f"compile-time int operation {op} at run time", e)
        w, s = word_bits(rt, e)
        return scalar_operator(self, e, a, b, w, s)

    zero = "0ULL"

    def arith(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        return f"(({a} {e.op} {b}) & {_m(w)})"

    def shift_left(self, e: ir.Binary, a: str, b: str, w: int, s: bool, n: int | None) -> str:
        return f"SHL({a}, {b}, {w})" if n is None else f"(({a} << {n}) & {_m(w)})"

    def shift_right(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        if s:
            return f"SSHR({a}, {b}, {w})"
        if isinstance(e.right, ir.Const):
            n = int(e.right.value)
            return "0ULL" if n >= 64 else f"({a} >> {n})"
        return f"SHR({a}, {b})"

    def div_mod(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        if s:
            raise self.unsupported(f"signed {e.op} (not implemented natively)", e)
        return f"{'DIV' if e.op == '/' else 'MOD'}({a}, {b})"

    def concat(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        wr, _ = word_bits(e.right.type, e)
        return f"((({a}) << {wr}) | ({b}))" if wr < 64 else f"({b})"

    def saturating(self, e: ir.Binary, a: str, b: str, w: int, s: bool) -> str:
        if e.op == "|+|":
            return f"SATS((__int128)SX({a}, {w}) + SX({b}, {w}), {w})" if s else f"SATADDU({a}, {b}, {w})"
        return f"SATS((__int128)SX({a}, {w}) - SX({b}, {w}), {w})" if s else f"SATSUBU({a}, {b})"

    def x_Cast(self, e: ir.Cast) -> str:
        return self.cast(self.expr(e.e), e.e.type, e.type, e)

    def cast(self, x: str, src: ir.Type, dst: ir.Type, node: Any) -> str:
        if src == dst:
            return x
        if wide_width(src) or wide_width(dst):
            return self.w_cast(x, src, dst, node)
        if isinstance(dst, ir.BoolT):
            return f"({x} != 0)"
        if isinstance(dst, ir.EnumT) or isinstance(src, ir.EnumT):
            return self.cast(x, *without_enum(src, dst, node, self.unsupported), node)
        if isinstance(dst, ir.BitT):
            w, _ = word_bits(dst, node)
            if isinstance(src, ir.BoolT):
                return x
            if isinstance(src, ir.IntT):
                return f"(({x}) & {_m(w)})"
            if isinstance(src, ir.BitT):
                sw_, ss = word_bits(src, node)
                if ss and w > sw_:
                    return f"((u64)SX({x}, {sw_}) & {_m(w)})"
                return f"(({x}) & {_m(w)})" if w < sw_ else x
        raise self.unsupported(f"cast from {src} to {dst}", node)

    def x_Mux(self, e: ir.Mux) -> str:
        c = self.expr(e.cond)
        self.ind += 1
        a, pre_a = captured(self.lines, lambda: self.expr(e.then))
        b, pre_b = captured(self.lines, lambda: self.expr(e.else_))
        self.ind -= 1
        if not pre_a and not pre_b:
            return f"(({c}) ? ({a}) : ({b}))"
        t = self.vtmp(e.type)
        self.emit(f"if ({c}) {{")
        self.lines.extend(pre_a)
        self.emit(f"    {t} = {a};")
        self.emit("} else {")
        self.lines.extend(pre_b)
        self.emit(f"    {t} = {b};")
        self.emit("}")
        return t

    def agg_equal(self, a: Place, b: Place, t: ir.Type, node: Any) -> str:
        return aggregate_equal(a, b, t, node, self, SLOTS)

    def header_equal(self, a: Place, b: Place, t: ir.HeaderT) -> str:
        fields = " && ".join(_slot_eq(a.at(o), b.at(o), f.type) for o, f in zip(header_offsets(t), t.fields)) or "1"
        return f"(S[{a.at()}] == S[{b.at()}] && (!S[{a.at()}] || ({fields})))"

    def slot_equal(self, a: str, b: str, t: ir.Type) -> str:
        return _slot_eq(a, b, t)

    def conjunction(self, parts: list[str]) -> str:
        return "(" + " && ".join(parts or ["1"]) + ")"

    def x_MethodCall(self, e: ir.MethodCall) -> str:
        return call_value(e, self)

    x_TableApply = x_FunctionCall = x_ExternCall = x_MethodCall

    # ------------------------------------------------------------------ statements
    def block(self, b: ir.Block | None) -> None:
        if b is not None:
            self.stmts(b.stmts)

    def stmts(self, ss: Any) -> None:
        """A statement list; repeated statements become loops (``reroll``)."""
        start = len(self.lines)
        spans = []
        for s in ss:
            a = len(self.lines)
            self.stmt(s)
            spans.append(a)
        if self.u.loops and len(ss) >= reroll.MIN_REPS:
            spans.append(len(self.lines))
            texts = [self.lines[a:b] for a, b in zip(spans, spans[1:])]
            self.lines[start:] = reroll.compress(texts, self.fresh)

    def reroll_lines(self, start: int) -> None:
        """Lines from ``start`` on, one C statement each: repeated ones become loops."""
        if self.u.loops and len(self.lines) - start >= reroll.MIN_REPS:
            self.lines[start:] = reroll.compress([[ln] for ln in self.lines[start:]], self.fresh)

    def fresh(self) -> str:
        """A new C identifier for a loop index or a loop's local."""
        self.ntmp += 1
        return f"_r{self.ntmp}"

    def stmt(self, s: Any) -> None:
        visit(self, "s_", s, "statement", self.unsupported)

    def s_Block(self, s: ir.Block) -> None:
        self.emit("{")
        self.ind += 1
        self.stmts(s.stmts)
        self.ind -= 1
        self.emit("}")

    def s_EmptyStmt(self, s: ir.EmptyStmt) -> None:
        pass

    def s_Exit(self, s: ir.Exit) -> None:
        if self.kind == "function" or self.in_parser:
            raise self.unsupported("exit inside a function or parser", s)
        self.emit(f"c->exited = 1; {self.ret}")

    def s_Return(self, s: ir.Return) -> None:
        if s.value is None:
            self.emit(self.ret if not self.in_parser else "goto done;")
            return
        if not is_scalar(s.value.type):
            if self.func is None:
                raise self.unsupported("return of an aggregate value outside a function", s)
            self.assign_agg(Place(self.u.function_ret(self.func), self.func.return_type), s.value)
            self.emit("return 0;")
            return
        if wide_width(s.value.type) and self.func is not None:  # a wide result travels in slots too
            ret = Place(self.u.function_ret(self.func), self.func.return_type)
            self.store_slot(ret, self.func.return_type, self.expr(s.value), s)
            self.emit("return 0;")
            return
        self.emit(f"return {self.expr(s.value)};")

    def s_If(self, s: ir.If) -> None:
        c = self.expr(s.cond)
        self.emit(f"if ({c}) {{")
        self.ind += 1
        self.block(s.then)
        self.ind -= 1
        if s.else_ is not None and s.else_.stmts:
            self.emit("} else {")
            self.ind += 1
            self.block(s.else_)
            self.ind -= 1
        self.emit("}")

    def s_For(self, s: ir.For) -> None:
        """``for`` as a C loop with labels: ``continue`` jumps to the update, ``break``
        past the loop (gotos: a C ``switch`` in between would capture a C break)."""
        self.ntmp += 1
        n = self.ntmp
        self.emit("{")
        self.ind += 1
        for x in s.init:
            self.stmt(x)
        self.emit("for (;;) {")
        self.ind += 1
        if s.cond is not None:
            self.emit(f"if (!({self.expr(s.cond)})) goto brk{n};")
        self.loops.append(n)
        try:
            self.s_Block(s.body)
        finally:
            self.loops.pop()
        self.emit(f"cont{n}: ;")
        for x in s.update:
            self.stmt(x)
        self.ind -= 1
        self.emit("}")
        self.emit(f"brk{n}: ;")
        self.ind -= 1
        self.emit("}")

    def s_ForIn(self, s: ir.ForIn) -> None:
        d = s.var
        if wide_width(d.type):
            self.w_for_in(s)
            return
        self.ntmp += 1
        n = self.ntmp
        w, sg = word_bits(d.type, s)
        v = f"S[{self.u.var(d.uid, d.type, d.name, d.loc)}]"
        self.emit("{")
        self.ind += 1
        lo, hi = self.tmp(self.expr(s.lo)), self.tmp(self.expr(s.hi))
        le = f"SX({lo}, {w}) <= SX({hi}, {w})" if sg else f"{lo} <= {hi}"
        self.emit(f"if ({le}) for ({v} = {lo};; {v} = ({v} + 1) & {_m(w)}) {{")
        self.ind += 1
        self.loops.append(n)
        try:
            self.s_Block(s.body)
        finally:
            self.loops.pop()
        self.emit(f"cont{n}: if ({v} == {hi}) break;")
        self.ind -= 1
        self.emit("}")
        self.emit(f"brk{n}: ;")
        self.ind -= 1
        self.emit("}")

    def s_Break(self, s: ir.Break) -> None:
        self.emit(f"goto brk{self.loops[-1]};")

    def s_Continue(self, s: ir.Continue) -> None:
        self.emit(f"goto cont{self.loops[-1]};")

    def s_Switch(self, s: ir.Switch) -> None:
        branches = switch_branches(s, self.unsupported)
        e = s.expr
        v = self.vtmp(e.type, self.expr(e))
        first = True
        for br in branches:
            conds = []
            for lab in br.labels:
                if isinstance(lab, int):
                    conds.append(f"{v} == {lab}")
                else:
                    lv = self.expr(lab)
                    conds.append(f"w_eq({v}, {lv})" if wide_width(e.type) else f"{v} == {lv}")
            if br.default:
                self.emit("else {" if not first else "{")
            else:
                self.emit(f"{'if' if first else 'else if'} ({' || '.join(conds)}) {{")
            first = False
            self.ind += 1
            self.block(br.body)
            self.ind -= 1
            self.emit("}")

    def s_VarDeclStmt(self, s: ir.VarDeclStmt) -> None:
        d = s.decl
        if s.init is not None:
            self.assign(ir.VarRef(d, d.type, s.loc), s.init)
            return
        self.reset(Place(self.u.var(d.uid, d.type, d.name, d.loc), d.type))

    def reset(self, p: Place) -> None:
        vals = [0 if isinstance(v, tuple) else v for v in default_values(p.type)]  # varbit: width 0
        if len(vals) == 1:
            self.emit(f"S[{p.at()}] = {int(vals[0])};")
            return
        self.emit(f"memset(&S[{p.at()}], 0, {len(vals)} * sizeof(u64));")
        for i, v in enumerate(vals):
            if v:
                self.emit(f"S[{p.at(i)}] = {int(v)};")

    def s_CallStmt(self, s: ir.CallStmt) -> None:
        call_statement(s, self)

    def s_Assign(self, s: ir.Assign) -> None:
        self.assign(s.lhs, s.rhs)

    def assign(self, lhs: ir.Expr, rhs: ir.Expr) -> None:
        if is_scalar(lhs.type):
            if isinstance(lhs.type, ir.BitT) and not wide_width(lhs.type):
                word_bits(lhs.type, lhs)
            if isinstance(lhs, (ir.Member, ir.StackElem, ir.Slice)) and runtime_index(lhs):
                # the l-value is evaluated first and once ('a op= b' reads the same node)
                node: ir.Expr = lhs
                while isinstance(node, ir.Slice):
                    node = node.base
                p = self.place(node)
                if not isinstance(p.base, int):
                    p = Place(self.tmp(str(p.base)), p.type, p.union_siblings)
                self.place_memo[id(node)] = (node, p)
                try:
                    tgt = self.lvalue(lhs)
                    value = self.expr(rhs)
                finally:
                    del self.place_memo[id(node)]
                self.store_to(tgt, lhs, value)
                return
            v = self.expr(rhs)
            self.store_to(self.lvalue(lhs), lhs, v)
        else:
            self.assign_agg(self.place(lhs), rhs)

    def lvalue(self, lhs: ir.Expr) -> tuple[str, ir.Expr]:
        """The C l-value of a scalar target (the base of a slice) and the folded target."""
        while isinstance(lhs, ir.Slice) and isinstance(lhs.base, ir.Slice):
            inner = lhs.base
            lhs = ir.Slice(inner.base, inner.lo + lhs.hi, inner.lo + lhs.lo, lhs.type, lhs.loc)
        base = lhs.base if isinstance(lhs, ir.Slice) else lhs
        if isinstance(base, ir.VarRef) and base.decl.uid in self.data:
            raise self.unsupported(f"assignment to action data '{base.decl.name}'", lhs)
        return f"S[{self.place(base).at()}]", lhs

    def store_to(self, tgt: tuple[str, ir.Expr], orig: ir.Expr, value: str) -> None:
        lv, lhs = tgt
        if wide_width(lhs.base.type if isinstance(lhs, ir.Slice) else lhs.type):
            self.w_store(lv, lhs, value)
            return
        if isinstance(lhs, ir.Slice):
            w, _ = word_bits(lhs.base.type, lhs)
            m = ((1 << (lhs.hi - lhs.lo + 1)) - 1) << lhs.lo
            self.emit(f"{lv} = ({lv} & 0x{((1 << w) - 1) ^ m:x}ULL) | ((({value}) << {lhs.lo}) & 0x{m:x}ULL);")
            return
        self.emit(f"{lv} = {value};")

    def store_slot(self, p: Place, t: ir.Type, value: str, node: Any) -> None:
        """``value`` (a C expression of type ``t``) into the scalar slot(s) at ``p``."""
        if wide_width(t):
            self.emit(f"w_st(&S[{p.at()}], {self.wk(t)[1]}, {value});")
            return
        self.emit(f"S[{p.at()}] = {value};")

    def store(self, lhs: ir.Expr, value: str) -> None:
        self.store_to(self.lvalue(lhs), lhs, value)

    def assign_agg(self, dst: Place, rhs: ir.Expr) -> None:
        assign_aggregate(dst, rhs, self, SLOTS)

    def set_valid(self, dst: Place) -> None:
        self.emit(f"S[{dst.at()}] = 1;")

    def if_else(self, cond: ir.Expr, then: Callable[[], None], else_: Callable[[], None]) -> None:
        self.emit(f"if ({self.expr(cond)}) {{")
        self.ind += 1
        then()
        self.ind -= 1
        self.emit("} else {")
        self.ind += 1
        else_()
        self.ind -= 1
        self.emit("}")

    def function_ret_place(self, f: ir.Function) -> Place:
        return Place(self.u.function_ret(f), f.return_type)

    def copy_slots(self, dst: Place, src: Place, n: int) -> None:
        if n == 1:
            self.emit(f"S[{dst.at()}] = S[{src.at()}];")
        else:
            self.emit(f"memmove(&S[{dst.at()}], &S[{src.at()}], {n} * sizeof(u64));")

    def invalidate_siblings_when_valid(self, dst: Place) -> None:
        self.emit(f"if (S[{dst.at()}]) {{ {' '.join(f'S[{sb}] = 0;' for sb in dst.union_siblings)} }}")

    # ------------------------------------------------------------------ calls
    def bind_args(self, params: tuple[ir.Param, ...], args: tuple[ir.Arg, ...], node: Any
                  ) -> tuple[list[str], list[tuple[ir.Expr, Place]]]:
        return bind_arguments(params, args, node, self)

    def data_argument(self, e: ir.Expr, p: ir.Param) -> list[str]:
        if wide_width(p.type):
            return self.w_words(self.expr(e), p.type)
        return [self.tmp(self.expr(e))]

    def param_place(self, p: ir.Param) -> Place:
        return Place(self.u.var(p.uid, p.type, p.name, p.loc), p.type)

    def copy_in(self, dst: Place, e: ir.Expr) -> None:
        self.store_slot(dst, dst.type, self.expr(e), e)

    def copy_out(self, outs: list[tuple[ir.Expr, Place]]) -> None:
        for expr, pp in outs:
            if is_scalar(pp.type):
                self.store(expr, self.load(pp, pp.type))
            else:
                dst = self.place(expr)
                self.emit(f"memmove(&S[{dst.at()}], &S[{pp.at()}], {nslots(pp.type)} * sizeof(u64));")

    def data_array(self, data: list[str]) -> str:
        if not data:
            return "NULL"
        self.ntmp += 1
        name = f"_d{self.ntmp}"
        self.emit(f"u64 {name}[{len(data)}] = {{{', '.join(data)}}};")
        return name

    def action_call(self, e: ir.ActionCall) -> None:
        fn = self.u.action_fn(e.action)
        data, outs = self.bind_args(e.action.params, e.args, e)
        self.emit(f"{fn}(c, S, {self.data_array(data)});")
        self.copy_out(outs)
        self.stop()

    def function_call(self, e: ir.FunctionCall) -> str | None:
        fn = self.u.function_fn(e.func)
        params = tuple(p if p.direction is not None else dataclasses.replace(p, direction="in") for p in e.func.params)
        _, outs = self.bind_args(params, e.args, e)
        if isinstance(e.func.return_type, ir.VoidT) or not is_scalar(e.func.return_type):
            self.emit(f"{fn}(c, S);")
            self.copy_out(outs)
            self.stop()
            return None
        rt = e.func.return_type
        if wide_width(rt):  # a wide result comes back in the function's return slots
            self.emit(f"{fn}(c, S);")
            t = self.wtmp(self.load(Place(self.u.function_ret(e.func), rt), rt))
        else:
            t = self.tmp(f"{fn}(c, S)")
        self.copy_out(outs)
        self.stop()
        return t

    def method_call(self, e: ir.MethodCall) -> str | None:
        return method_call(e, self, SLOTS)

    def instance_apply(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        m = e.method
        if m != "apply" or not isinstance(inst.decl, ir.Control):
            if m == "apply" and isinstance(inst.decl, ir.Parser):
                self.subparser_apply(inst.decl, e)
                return None
            raise self.unsupported(f"{m} of {inst.name} (sub-parsers are not implemented natively)", e)
        fn = self.u.control_fn(inst.decl)
        _, outs = self.bind_args(inst.decl.params, e.args, e)
        self.emit(f"{fn}(c, S);")
        self.copy_out(outs)
        self.stop()
        return None

    def set_invalid(self, slot: str) -> None:
        self.emit(f"S[{slot}] = 0;")

    def number(self, value: int) -> str:
        return f"{value}ULL"

    def any_valid(self, slots: list[str]) -> str:
        return "(" + " || ".join([f"S[{s}]" for s in slots] or ["0"]) + ")"

    def stack_shift(self, p: Place, st: ir.StackT, m: str, e: ir.MethodCall) -> None:
        arg = e.args[0].expr
        if not isinstance(arg, ir.Const) or not isinstance(p.base, int):
            raise self.unsupported(f"{m} with a non-constant count or on a stack at a runtime index", e)
        n = int(arg.value)
        size, esz = st.size, nslots(st.elem)
        first = p.base + 1
        if n >= size:
            for i in range(size):
                self.reset(p.sub(1 + i * esz, st.elem))
        elif m == "push_front":
            self.emit(f"memmove(&S[{first + n * esz}], &S[{first}], {(size - n) * esz} * sizeof(u64));")
            for i in range(n):
                self.reset(p.sub(1 + i * esz, st.elem))
        else:
            self.emit(f"memmove(&S[{first}], &S[{first + n * esz}], {(size - n) * esz} * sizeof(u64));")
            for i in range(size - n, size):
                self.reset(p.sub(1 + i * esz, st.elem))
        nb = p.at()
        if m == "push_front":
            self.emit(f"S[{nb}] = S[{nb}] + {n} > {size} ? {size} : S[{nb}] + {n};")
        else:
            self.emit(f"S[{nb}] = S[{nb}] > {n} ? S[{nb}] - {n} : 0;")

    # ------------------------------------------------------------------ tables
    def apply_result(self, r: str, action: bool) -> str:
        """``r`` packs the hit flag above the 16-bit action number."""
        return f"({r} & 0xffff)" if action else f"({r} >> 16)"

    def table_apply(self, e: ir.TableApply) -> str:
        """Lookup, then (as the python executor, in its order) selector pick, direct
        counter, idle-timeout stamp, direct-meter entry, and the action."""
        t = e.table
        info = self.table_meta(t)
        kvals: list[str] = []
        sels: list[str] = []
        for k in t.keys:
            if wide_width(k.expr.type):  # a wide key: one column per limb, most significant first
                if k.match_kind == "selector":
                    sels.append(self.wtmp(self.expr(k.expr)))
                else:
                    kvals += self.w_words(self.expr(k.expr), k.expr.type, msb_first=True)
                continue
            (sels if k.match_kind == "selector" else kvals).append(self.tmp(self.expr(k.expr)))
        kname = self.data_array(kvals) if kvals else "NULL"
        r = self.tmp()
        self.ntmp += 1
        n = self.ntmp
        ent, tb = f"_e{n}", f"_tb{n}"
        self.emit(f"tbl_t *{tb} = sw_tbl_(c, {info.index});")
        self.emit(f"u64 *{ent} = {('tbl_find(' + tb + ', ' + kname + ')') if kvals else 'NULL'};")
        self.emit(f"{r} = {ent} != NULL;")
        if t.direct_counter is not None:
            self.emit(f"if ({ent}) {{ {ent}[2]++; {ent}[3] += S[{self.u.sm['packet_length']}]; }}")
        if info.timeout:
            self.emit(f"if ({ent}) {{ if (!S[SLOT_NOW]) S[SLOT_NOW] = now_ns(c->sw); {ent}[4] = S[SLOT_NOW]; }}")
        if info.direct_meter:
            self.emit(f"S[SLOT_DM] = {ent} ? (u64)(uintptr_t)&{tb}->mc[({ent} - {tb}->ents) / {tb}->stride] : 0;")
        self.emit(f"if (!{ent}) {ent} = {tb}->def;")
        base = ENT_HDR + 2 * info.ncols
        act, dat = f"_a{n}", f"_d{n}"
        self.emit(f"u64 {act} = {ent}[0]; const u64 *{dat} = {ent} + {base};")
        if info.selector is not None:
            np1 = 1 + info.nparams
            self.emit(f"if ({act} == ACT_GROUP) {{")
            self.ind += 1
            g = f"_g{n}"
            self.emit(f"const u64 *{g} = {tb}->gp + {dat}[0]; u64 _i{n} = 0;")
            if sels:
                fields = list(zip(sels, info.sel_widths))
                self.emit(f"if ({g}[0] > 1) _i{n} = ({self.hash_fields(info.selector, fields)} & 0xFFFFFFFFULL) % {g}[0];")
            self.emit(f"{act} = {g}[1 + _i{n} * {np1}]; {dat} = {g} + 2 + _i{n} * {np1};")
            self.ind -= 1
            self.emit("}")
        self.emit(f"{r} = ({r} << 16) | ({act} & 0xffff);")
        self.emit(f"switch ({act}) {{")
        for i, ref in enumerate(_action_refs(t)):
            self.emit(f"case {i}: {{")
            self.ind += 1
            fn = self.u.action_fn(ref.action)
            dirs = [p for p in ref.action.params if p.direction is not None]
            if dirs:
                args = tuple(ir.Arg(x, p.direction, p) for x, p in zip(ref.args, ref.action.params))
                if len(ref.args) < len(dirs):
                    raise self.unsupported(f"action {ref.action.name}: directional parameters without arguments", ref)
                _, outs = self.bind_args(tuple(dirs), args[: len(dirs)], ref)
                self.emit(f"{fn}(c, S, {dat});")
                self.copy_out(outs)
            else:
                self.emit(f"{fn}(c, S, {dat});")
            self.emit("break; }")
            self.ind -= 1
        self.emit("}")
        self.stop()
        return r

    def table_meta(self, t: ir.Table) -> TableMeta:
        tm = self.u.meta.tables.get(t.cp_name)
        if tm is not None:
            return tm
        selector: str | None = None
        impl = t.implementation
        if impl is not None:
            self.u.instance(impl)
            if isinstance(impl.type, ir.ExternT) and impl.type.name == "action_selector":
                selector = HASHES[impl.ctor_args[0].member]  # type: ignore[attr-defined]
        if t.direct_meter is not None:
            self.u.instance(t.direct_meter)
        keys = []
        sel_widths = []
        for k in t.keys:
            if k.match_kind == "selector" and selector is not None:
                sel_widths.append(_fw(k.expr.type, k))
                continue
            if k.match_kind not in ("exact", "lpm", "ternary", "range", "optional"):
                raise self.unsupported(f"table {t.cp_name}: match kind {k.match_kind}", k)
            keys.append(KeyDef(k.name, k.match_kind, _fw(k.expr.type, k)))
        nparams = 1 if impl is not None else 0
        for r in _action_refs(t):
            for p in r.action.data_params:
                _fw(p.type, p)
            nparams = max(nparams, sum(limbs(p.type) for p in r.action.data_params))
        exact = bool(keys) and all(k.kind == "exact" for k in keys)
        tm = TableMeta(len(self.u.meta.tables), t.cp_name, keys, nparams, exact, t.direct_counter is not None,
                       indirect=impl is not None, selector=selector, sel_widths=tuple(sel_widths),
                       direct_meter=t.direct_meter is not None, timeout=bool(t.idle_timeout))
        self.u.meta.tables[t.cp_name] = tm
        return tm

    # ------------------------------------------------------------------ externs
    def algo(self, e: ir.Expr) -> str:
        if isinstance(e, ir.EnumMember) and e.member in HASHES:
            return HASHES[e.member]
        raise self.unsupported(f"hash algorithm {getattr(e, 'member', type(e).__name__)} (not implemented natively)", e)

    def flatten(self, e: ir.Expr) -> list[tuple[str, int]]:
        if isinstance(e, ir.ListExpr):
            return [x for item in e.elems for x in self.flatten(item)]
        if isinstance(e, ir.StructInit):
            return [x for _, item in e.fields for x in self.flatten(item)]
        t = e.type
        if isinstance(t, ir.VarBitT):
            return [(self.expr(e), VARBIT)]
        if is_scalar(t):
            return [(self.expr(e), _fw(t, e))]
        return self.flatten_place(self.place(e), t, e)

    def flatten_place(self, p: Place, t: ir.Type, node: Any) -> list[tuple[str, int]]:
        return [(f"S[{f.at()}]", VARBIT) if isinstance(f.type, ir.VarBitT)
                else (self.load(f, f.type), _fw(f.type, node))
                for f, _ in scalar_leaves(p, t, SLOTS, self.unsupported, node)]

    def hash_fields(self, fn: str, fields: list[tuple[str, int]]) -> str:
        """``fn`` over ``fields`` packed MSB first, zero-padded to a byte (BMv2)."""
        total = sum(w for _, w in fields)
        nb = (total + 7) // 8
        self.ntmp += 1
        buf = f"_hb{self.ntmp}"
        self.emit(f"u8 {buf}[{nb + 1}];")
        self.emit(f"memset({buf}, 0, {nb + 1});")
        off = 0
        for x, w in fields:
            self.emit(f"{_put(buf, str(off), w, x)};")
            off += w
        return f"{fn}({buf}, {nb})"

    def hash_of(self, fn: str, data: ir.Expr, payload: bool) -> str:
        fields = self.flatten(data)
        if any(w == VARBIT for _, w in fields):
            return self.hash_vl(fn, fields, data, payload)
        total = sum(w for _, w in fields)
        nb = (total + 7) // 8
        self.ntmp += 1
        buf = f"_hb{self.ntmp}"
        if payload:
            self.emit(f"u32 {buf}_n = {nb} + (u32)S[SLOT_PAYL];")
            self.emit(f"u8 {buf}[{nb} + 1 + 65536];")
            self.emit(f"if ({buf}_n > {nb} + 65536) {buf}_n = {nb} + 65536;")
        else:
            self.emit(f"u8 {buf}[{nb + 1}];")
        self.emit(f"memset({buf}, 0, {nb + 1});")
        off = 0
        for x, w in fields:
            self.emit(f"{_put(buf, str(off), w, x)};")
            off += w
        if payload:
            self.emit(f"memcpy({buf} + {nb}, (const u8 *)(uintptr_t)S[SLOT_PAYP], {buf}_n - {nb});")
            return f"{fn}({buf}, {buf}_n)"
        return f"{fn}({buf}, {nb})"

    def hash_vl(self, fn: str, fields: list[tuple[str, int]], data: ir.Expr, payload: bool) -> str:
        """A field list with varbit fields: its width is known at run time only; packed
        MSB first and zero-padded to a byte as the python executor's ``_vl_bytes``."""
        maxw = 0
        for x, w in fields:
            maxw += w if w != VARBIT else 0
        for t in _varbit_types(data.type):
            maxw += t.max_width
        nb = (maxw + 7) // 8
        self.ntmp += 1
        buf = f"_hb{self.ntmp}"
        self.emit(f"u8 {buf}[{nb + 1}{' + 65536' if payload else ''}]; u32 {buf}_o = 0;")
        self.emit(f"memset({buf}, 0, {nb + 1});")
        for x, w in fields:
            if w == VARBIT:
                self.emit(f"{buf}_o = vb_put({buf}, {buf}_o, {x});")
            else:
                self.emit(f"{_put(buf, buf + '_o', w, x)}; {buf}_o += {w};")
        self.emit(f"u32 {buf}_n = ({buf}_o + 7) >> 3;")
        if payload:
            self.emit(f"u32 {buf}_p = (u32)S[SLOT_PAYL]; if ({buf}_p > 65536) {buf}_p = 65536;")
            self.emit(f"memcpy({buf} + {buf}_n, (const u8 *)(uintptr_t)S[SLOT_PAYP], {buf}_p); {buf}_n += {buf}_p;")
        return f"{fn}({buf}, {buf}_n)"

    def extern_call(self, e: ir.ExternCall) -> str | None:
        op = lower_extern_call(e, self.unsupported)
        sm = self.u.sm
        if isinstance(op, MarkToDrop):
            self.emit(f"S[{sm['egress_spec']}] = 511; S[{sm['mcast_grp']}] = 0;")
        elif isinstance(op, Hash):
            dst, be, me = op.result, op.base, op.max
            fn = self.algo(op.algo)
            if any(wide_width(x.type) for x in (dst, be, me)):
                self.w_hash(dst, be, me, fn, op.data)
                return None
            base = self.tmp(self.expr(be))
            h = self.tmp(self.hash_of(fn, op.data, False))
            mx = self.tmp(self.expr(me))
            w, _ = word_bits(dst.type, dst)
            self.store(dst, f"(({mx} ? {base} + {h} % {mx} : {base}) & {_m(w)})")
        elif isinstance(op, Random):
            dst = op.result
            lo, hi = self.narrow(self.expr(op.lo), op.lo.type), self.narrow(self.expr(op.hi), op.hi.type)
            self.store(dst, self.fit(f"rnd_(c, {lo}, {hi})", dst.type))
        elif isinstance(op, Checksum):
            self.checksum(op)
        elif isinstance(op, Clone):
            session = self.expr(op.session)
            fl = self.field_list(op.fields, clone=True)
            self.emit(f"S[SLOT_CL] = 1; S[SLOT_CLS] = {session}; S[SLOT_CLF] = {fl + 1};")
        elif isinstance(op, Recirculate):
            fl = self.field_list(op.fields, clone=False)
            self.emit(f"S[{'SLOT_RS' if op.resubmit else 'SLOT_RC'}] = {fl + 1};")
        elif isinstance(op, SendDigest):
            recv = self.expr(op.receiver)
            names, vals, types = self.digest_fields(op.data)
            t = op.data.type
            tname = t.name if isinstance(t, (ir.StructT, ir.HeaderT)) else ""
            self.u.meta.digests.append((tname, tuple(names), tuple(types)))
            did = len(self.u.meta.digests) - 1
            arr = self.data_array(vals)
            self.emit(f"dig_emit(c, {did}, {recv}, {len(vals)}, {arr});")
        elif isinstance(op, Truncate):
            self.emit(f"S[SLOT_TR] = {self.expr(op.length)};")
        elif isinstance(op, Check):
            c = self.expr(op.check)
            self.emit(f"if (!({c})) {{ c->fault = 1; {self.ret if not self.in_parser else 'return;'} }}")
        elif isinstance(op, Verify):
            c = self.expr(op.check)
            err = self.expr(op.error)
            self.emit(f"if (!({c})) {{ perr_code = {err}; goto perr; }}")
        elif op is None:
            raise self.unsupported(f"extern function {e.name} (not implemented natively)", e)
        return None  # log_msg and static_assert: nothing at run time

    def checksum(self, op: Checksum) -> None:
        sm = self.u.sm
        cond = self.expr(op.condition)
        fn = self.algo(op.algo)
        ck = op.checksum
        self.emit(f"if ({cond}) {{")
        self.ind += 1
        h = self.hash_of(fn, op.data, op.payload)
        if wide_width(ck.type):  # a 64-bit hash in a wide field: its value, zero above
            if op.verify:
                self.emit(f"if (!w_eq(w_u({h}), {self.expr(ck)})) S[{sm['checksum_error']}] = 1;")
            else:
                self.store(ck, f"w_u({h})")
        else:
            w, _ = word_bits(ck.type, ck)
            if op.verify:
                self.emit(f"if ((({h}) & {_m(w)}) != {self.expr(ck)}) S[{sm['checksum_error']}] = 1;")
            else:
                self.store(ck, f"(({h}) & {_m(w)})")
        self.ind -= 1
        self.emit("}")

    def field_list(self, fl: FieldList, clone: bool) -> int:
        """The number of the field list a clone or recirculation carries (-1: a clone
        without one; a recirculation always carries one, maybe empty)."""
        if fl.data is not None:
            return self.u.field_list(self.field_slots(fl.data))
        if fl.index is not None:
            return self.u.field_list(self.u.field_list_ann(fl.index))
        return -1 if clone else self.u.field_list(())

    def field_slots(self, e: ir.Expr) -> tuple[int, ...]:
        return field_slots(e, self.place, nslots, self.unsupported)

    def digest_fields(self, data: ir.Expr) -> tuple[list[str], list[str], list[tuple[int, bool]]]:
        """Names, value words (a wide field: its limbs, low first) and (width, signed)."""
        t = data.type
        names: list[str] = []
        vals: list[str] = []
        types: list[tuple[int, bool]] = []

        def add(name: str, x: str, ft: ir.Type, node: Any) -> None:
            names.append(name)
            if wide_width(ft):
                vals.extend(self.w_words(x, ft))
                types.append(bits(ft))
            else:
                vals.append(x)
                types.append(word_bits(ft, node))

        if isinstance(data, ir.StructInit):
            for n, x in data.fields:
                if not is_scalar(x.type):
                    raise self.unsupported("a digest with nested aggregates", data)
                add(n, self.expr(x), x.type, x)
            return names, vals, types
        if isinstance(data, ir.ListExpr):
            for i, x in enumerate(data.elems):
                add(f"f{i}", self.expr(x), x.type, x)
            return names, vals, types
        if isinstance(t, (ir.StructT, ir.HeaderT)):
            p = self.place(data)
            for f in t.fields:
                if not is_scalar(f.type):
                    raise self.unsupported("a digest struct with nested aggregates", data)
                add(f.name, self.load(p.sub(field_offset(t, f.name)[0], f.type), f.type), f.type, data)
            return names, vals, types
        add("value", self.expr(data), t, data)
        return names, vals, types

    def extern_method(self, inst: ir.Instance, e: ir.MethodCall) -> str | None:
        kind, idx = self.u.instance(inst)
        m = e.method
        if kind == "register":
            size, width = self.u.meta.registers[idx][1], self.u.meta.registers[idx][2]
            cl = self.u.meta.reg_cells[idx]
            if width > 64:  # never fused: the cells' limbs are its own block
                self.w_register(cl.block, size, width, e)
                return None

            def cell(i: str) -> str:
                return f"sw_blk_(c, {cl.block})[{i} * {cl.stride} + {cl.member}]" if cl.stride > 1 \
                    else f"sw_blk_(c, {cl.block})[{i}]"

            if m == "read":
                dst = call_arg(e, "result", 0)
                i = self.tmp(self.expr(call_arg(e, "index", 1)))
                self.store(dst, f"({i} < {size} ? {cell(i)} : 0)")
                return None
            if m == "write":
                i = self.tmp(self.expr(call_arg(e, "index", 0)))
                v = self.expr(call_arg(e, "value", 1))
                self.emit(f"if ({i} < {size}) {cell(i)} = ({v}) & {_m(width)};")
                return None
        if kind == "counter" and m == "count":
            size = self.u.meta.counters[idx][1]
            i = self.tmp(self.expr(call_arg(e, "index", 0)))
            self.emit(f"if ({i} < {size}) {{ sw_cnt_(c, {idx}, 0)[{i}]++; "
                      f"sw_cnt_(c, {idx}, 1)[{i}] += S[{self.u.sm['packet_length']}]; }}")
            return None
        if kind == "direct_counter" and m == "count":
            return None
        if kind == "meter" and m == "execute_meter":
            _, size, mkind, _ = self.u.meta.meters[idx]
            i = self.tmp(self.expr(call_arg(e, "index", 0)))
            dst = call_arg(e, "result", 1)
            w = min(_fw(dst.type, dst), 64)
            amount = "1" if mkind == "packets" else f"S[{self.u.sm['packet_length']}]"
            self.store(dst, self.fit(f"(({i} < {size} ? meter_exec(&sw_mtr_(c, {idx})[{i}], now_us(c, {idx}), {amount}) : 0)"
                                     f" & {_m(w)})", dst.type))
            return None
        if kind == "direct_meter" and m == "read":
            mkind = self.u.meta.meters[idx][2]
            dst = call_arg(e, "result", 0)
            w = min(_fw(dst.type, dst), 64)
            amount = "1" if mkind == "packets" else f"S[{self.u.sm['packet_length']}]"
            self.store(dst, self.fit(f"((S[SLOT_DM] ? meter_exec((mcell_t *)(uintptr_t)S[SLOT_DM], now_us(c, {idx}), {amount}) : 0)"
                                     f" & {_m(w)})", dst.type))
            return None
        raise self.unsupported(f"method {m} of extern {kind} (not implemented natively)", e)

    # ------------------------------------------------------------------ parser and deparser
    def parser_states(self, p: ir.Parser, prefix: str, done: str) -> None:
        """The states of parser ``p`` as labels ``<prefix>st<i>``; accept and reject go
        to ``done`` (the python executor ends a parser on either without an error)."""
        declare_parser_locals(p, self.stmt, self.unsupported)
        ids = {n: i for i, n in enumerate(p.states)}
        self.emit(f"goto {prefix}st{ids['start']};")
        for n, s in p.states.items():
            self.emit(f"{prefix}st{ids[n]}: ;")
            self.stmts(s.body)
            self.transition(s.transition, ids, prefix, done)

    def subparser_apply(self, decl: ir.Parser, e: ir.MethodCall) -> None:
        """A sub-parser inlined at its call site (as p4c does): its parameters alias the
        arguments' slots, scalar ``in`` ones are copied, ``out`` ones reset first."""
        if not self.in_parser:
            raise self.unsupported("a parser applied outside a parser", e)
        layout = self.u.layout
        bindings, _ = subparser_bindings(decl, e, self)
        saved = {uid: layout.by_uid.get(uid) for uid in bindings}
        layout.by_uid.update(bindings)
        self.ntmp += 1
        prefix = f"sp{self.ntmp}_"
        try:
            self.emit("{")
            self.parser_states(decl, prefix, f"{prefix}done")
            self.emit(f"{prefix}done: ;")
            self.emit("}")
        finally:
            for uid, base in saved.items():
                if base is None:
                    layout.by_uid.pop(uid, None)
                else:
                    layout.by_uid[uid] = base

    def copy_in_param(self, prm: ir.Param, a: ir.Expr) -> None:
        pp = self.u.var(prm.uid, prm.type, prm.name, prm.loc)
        self.store_slot(Place(pp, prm.type), prm.type, self.expr(a), a)

    def copy_unaliased(self, prm: ir.Param, a: ir.Expr) -> bool:
        return False

    def transition(self, tr: ir.Goto | ir.Select, ids: dict[str, int], prefix: str = "", done: str = "done") -> None:
        def go(state: str) -> str:
            if state in ("accept", "reject"):
                return f"goto {done};"
            if state not in ids:
                raise self.unsupported(f"transition to unknown state {state}", tr)
            return f"goto {prefix}st{ids[state]};"

        if isinstance(tr, ir.Goto):
            self.emit(go(tr.state))
            return
        keys = [self.vtmp(k.type, self.expr(k)) for k in tr.keys]
        for case in tr.cases:
            conds = []
            for kx, ks, key in zip(keys, case.keys, tr.keys):
                if isinstance(ks, ir.DefaultKey):
                    continue
                if wide_width(key.type):
                    conds.append(self.w_keyset(kx, ks, key.type))
                    continue
                if isinstance(ks, ir.Mask):
                    m = self.expr(ks.mask)
                    conds.append(f"({kx} & {m}) == ({self.expr(ks.value)} & {m})")
                elif isinstance(ks, ir.Range):
                    w, s = word_bits(ks.lo.type, ks)
                    lo, hi = self.expr(ks.lo), self.expr(ks.hi)
                    if s:
                        conds.append(f"SX({lo}, {w}) <= SX({kx}, {w}) && SX({kx}, {w}) <= SX({hi}, {w})")
                    else:
                        conds.append(f"{lo} <= {kx} && {kx} <= {hi}")
                elif isinstance(ks, ir.ListExpr):
                    raise self.unsupported("a tuple keyset inside a select case", ks)
                else:
                    conds.append(f"{kx} == {self.expr(ks)}")
            self.emit(f"if ({' && '.join(conds) or '1'}) {go(case.state)}")
        self.emit(f"goto {done};")

    def packet_in_method(self, e: ir.MethodCall) -> str | None:
        return packet_in_method(self, e)

    def lookahead_place(self, e: ir.MethodCall) -> Place:
        return lookahead_place(self, e)

    def scratch(self, t: ir.HeaderT, purpose: str) -> int:
        return self.u.layout.alloc(t, purpose)

    def bump_next_index(self, stack: Place) -> None:
        self.emit(f"S[{stack.at()}] += 1;")

    def lookahead_value(self, t: ir.Type, e: ir.MethodCall) -> str:
        if wide_width(t):
            w, _ = self.wk(t)
            self.emit(f"if (c->pos + {(w + 7) // 8} > L) {{ perr_code = {PACKET_TOO_SHORT}; goto perr; }}")
            return self.wtmp(f"w_get(data + c->pos, 0, {w})")
        w, _ = word_bits(t, e)
        nb = (w + 7) // 8
        self.emit(f"if (c->pos + {nb} > L) {{ perr_code = {PACKET_TOO_SHORT}; goto perr; }}")
        x = f"getbits(data + c->pos, 0, {w})"
        if isinstance(t, ir.BoolT):
            x = f"({x} != 0)"
        return self.tmp(x)

    def advance_bytes(self, n: int) -> None:
        self.emit(f"if (c->pos + {n} > L) {{ perr_code = {PACKET_TOO_SHORT}; goto perr; }}")
        self.emit(f"c->pos += {n};")

    def advance_bits(self, amount: ir.Expr, e: ir.MethodCall) -> None:
        amt = self.tmp(self.expr(amount))
        self.emit(f"if ({amt} & 7) {{ c->fault = 1; return; }}")
        self.emit(f"if (c->pos + ({amt} >> 3) > L) {{ perr_code = {PACKET_TOO_SHORT}; goto perr; }}")
        self.emit(f"c->pos += {amt} >> 3;")

    def packet_length(self) -> str:
        return "(u64)L"

    def extract_varbit(self, p: Place, ht: ir.HeaderT, size: ir.Expr, node: Any) -> None:
        """Two-argument ``extract``, checked in BMv2's order as the python executor's: a
        size that is not whole bytes is ParserInvalidArgument, too few bytes left
        PacketTooShort, more than the varbit's maximum HeaderTooShort."""
        vl = [i for i, f in enumerate(ht.fields) if isinstance(f.type, ir.VarBitT)]
        if len(vl) != 1:
            raise self.unsupported(f"two-argument extract into header {ht.name}, which has {len(vl)} varbit fields "
                           "(it needs exactly one)", node)
        k = vl[0]
        vt = ht.fields[k].type
        assert isinstance(vt, ir.VarBitT)
        self.u._check_type(vt, getattr(node, "loc", None), f"header {ht.name}")
        widths = [0 if i == k else _fw(f.type, node) for i, f in enumerate(ht.fields)]
        offs = header_offsets(ht)
        fixed = sum(widths)
        if fixed % 8 or vt.max_width % 8:
            raise self.unsupported(f"header {ht.name}: fixed fields of {fixed} bits and varbit<{vt.max_width}> "
                           "are not whole numbers of bytes", node)
        errs = self.u.errors
        n = self.tmp(self.expr(size))
        self.emit(f"if ({n} & 7) {{ perr_code = {errs['ParserInvalidArgument']}; goto perr; }}")
        nb = self.tmp(f"{fixed // 8} + ({n} >> 3)")
        self.emit(f"if ((u64)c->pos + {nb} > L) {{ perr_code = {PACKET_TOO_SHORT}; goto perr; }}")
        self.emit(f"if ({nb} > {(fixed + vt.max_width) // 8}) {{ perr_code = {errs['HeaderTooShort']}; goto perr; }}")
        if not isinstance(p.base, int):
            p = Place(self.tmp(str(p.base)), p.type, p.union_siblings)
        off = 0
        for i, f in enumerate(ht.fields):
            at = f"{off} + (u32){n}" if i > k else str(off)
            if i == k:
                self.emit(f"S[{p.at(offs[i])}] = vb_make(data + c->pos, {off}, {n});")
                continue
            self.store_slot(p.sub(offs[i], f.type), f.type, _get("data + c->pos", at, widths[i]), node)
            off += widths[i]
        self.emit(f"S[{p.at()}] = 1;")
        for sb in p.union_siblings:
            self.emit(f"S[{sb}] = 0;")
        self.emit(f"c->pos += (u32){nb};")

    def extract_into(self, p: Place, ht: ir.HeaderT, advance: bool, node: Any = None) -> None:
        for f in ht.fields:
            if isinstance(f.type, ir.VarBitT):
                raise self.unsupported(f"header {ht.name} has a varbit field: extract it with the two-argument extract",
                               node or ht)
            _fw(f.type, node)
        w = ht.width
        if w % 8:
            raise self.unsupported(f"header {ht.name} of {w} bits (not a whole number of bytes)", node or ht)
        nb = w // 8
        self.emit(f"if (c->pos + {nb} > L) {{ perr_code = {PACKET_TOO_SHORT}; goto perr; }}")
        if isinstance(p.base, int):
            self.u.extracts[p.base] = self.u.extracts.get(p.base, 0) + 1
        else:
            b = self.tmp(str(p.base))
            p = Place(b, p.type, p.union_siblings)
        off = 0
        first = len(self.lines)
        for o, f in zip(header_offsets(ht), ht.fields):
            fw = _fw(f.type, node)
            self.store_slot(p.sub(o, f.type), f.type, _get(f"data + c->pos{_bytes(off)}", str(off & 7), fw), node)
            off += fw
        self.reroll_lines(first)
        self.emit(f"S[{p.at()}] = 1;")
        for sb in p.union_siblings:
            self.emit(f"S[{sb}] = 0;")
        if advance:
            self.emit(f"c->pos += {nb};")

    def emit_varbit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        maxw = sum(f.type.max_width if isinstance(f.type, ir.VarBitT) else _fw(f.type, at) for f in t.fields)
        self.u.deparse_max += (maxw + 7) // 8
        self.emit(f"if (S[{p.at()}]) {{")
        self.ind += 1
        self.ntmp += 1
        bo = f"_bo{self.ntmp}"
        self.emit(f"u32 {bo} = 0;")
        for o, f in zip(header_offsets(t), t.fields):
            if isinstance(f.type, ir.VarBitT):
                self.emit(f"{bo} = vb_put(c->ob + c->olen, {bo}, S[{p.at(o)}]);")
            else:
                fw = _fw(f.type, at)
                self.emit(f"{_put('c->ob + c->olen', bo, fw, self.load(p.sub(o, f.type), f.type))}; {bo} += {fw};")
        self.emit(f"c->olen += ({bo} + 7) >> 3;")
        self.ind -= 1
        self.emit("}")

    def emit_header(self, p: Place, t: ir.HeaderT, at: Any) -> None:
        w = t.width
        self.u.deparse_max += w // 8
        self.emit(f"if (S[{p.at()}]) {{")
        self.ind += 1
        off = 0
        first = len(self.lines)
        for o, f in zip(header_offsets(t), t.fields):
            fw = _fw(f.type, at)
            self.emit(f"{_put(f'c->ob + c->olen{_bytes(off)}', str(off & 7), fw, self.load(p.sub(o, f.type), f.type))};")
            off += fw
        self.reroll_lines(first)
        self.emit(f"c->olen += {w // 8};")
        self.ind -= 1
        self.emit("}")


def _get(buf: str, off: str, w: int) -> str:
    """C for the ``w``-bit value at bit offset ``off`` of ``buf`` (MSB first)."""
    return f"w_get({buf}, {off}, {w})" if w > 64 else f"getbits({buf}, {off}, {w})"


def _put(buf: str, off: str, w: int, x: str) -> str:
    """C that writes the ``w``-bit value ``x`` at bit offset ``off`` of ``buf`` (MSB first)."""
    return f"w_put({buf}, {off}, {w}, {x})" if w > 64 else f"putbits({buf}, {off}, {w}, {x})"


def _slot_eq(a: str, b: str, t: ir.Type) -> str:
    """Equality of the scalar values at slots ``a`` and ``b`` (C index expressions)."""
    if isinstance(t, ir.VarBitT):
        return f"vb_eq(S[{a}], S[{b}])"
    if wide_width(t):
        return f"!memcmp(&S[{a}], &S[{b}], {limbs(t)} * sizeof(u64))"
    return f"S[{a}] == S[{b}]"


def _bytes(off: int) -> str:
    """`` + <whole bytes of a bit offset>``: the pointer part of a field's offset, so that
    the bit part is a constant the compiler folds, also in a rerolled loop (``+ 0`` too:
    every field of a header reads alike)."""
    return f" + {off >> 3}"


def _varbit_types(t: ir.Type) -> list[ir.VarBitT]:
    """Every varbit type inside ``t`` (for the maximum size of a field list)."""
    if isinstance(t, ir.VarBitT):
        return [t]
    if isinstance(t, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)):
        return [v for f in t.fields for v in _varbit_types(f.type)]
    if isinstance(t, ir.StackT):
        return _varbit_types(t.elem) * t.size
    if isinstance(t, ir.TupleT):
        return [v for x in t.elems for v in _varbit_types(x)]
    return []


def generate(program: ir.Program, fuse: str | None = None, loops: bool = True) -> tuple[str, UnitMeta]:
    """The C source of ``program`` and the objects it declares; raises NativeUnsupported.
    ``fuse``: the register layout (``fuse.FUSE_MODES``; None: ``$INNET_NATIVE_FUSE`` or
    auto); ``loops``: reroll repeated statements into loops."""
    return Unit(program, fuse, loops).generate()
