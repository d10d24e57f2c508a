"""Typed, fully resolved intermediate representation produced by the P4_16 front-end.

Why this module exists: the executor (``innet.switch.pipeline``) and the P4Info generator
(``innet.switch.p4info``) must not re-interpret P4 source.  The front-end resolves every
name to its declaration, replaces typedefs and ``type`` by their underlying types, folds
compile-time constants, converts int literals to the width of the other operand, and
attaches a type and a source location to every expression.  Consumers therefore only
ever switch on the node classes defined here.

Conventions
-----------
* ``typedef`` and ``type`` names are resolved to their underlying types (``type`` is not
  kept as a distinct type).  Unsized ``int`` values only survive as ``Const(IntT)`` for
  compile-time operands: shift amounts, ``push_front``/``pop_front`` counts, stack ``size``
  and ``minSizeInBits()``-style results.
* Types are frozen dataclasses (compared structurally, hashable).  Nodes are
  ``eq=False`` dataclasses: identity matters (two ``VarRef`` to the same ``VarDecl`` are
  distinct nodes, the declarations they point to are shared).
* ``annotations`` is always ``dict[str, Annotation]`` keyed by annotation name.
* Every ``Param`` / ``VarDecl`` has a program-unique ``uid`` so an executor can map it
  to a storage slot.
* This module is extended only (new classes, new fields with defaults); nothing is ever
  renamed or removed, because other packages code against it.

How sub-control / sub-parser instances are represented (specialisation)
-----------------------------------------------------------------------
The front-end *specialises every instance*: each instantiation of a parser or control
(the six anonymous ones given to ``V1Switch(...)`` and every ``Sub() s;`` inside a body)
gets its own freshly built ``Control`` / ``Parser`` object, with its own locals, tables,
actions, extern instances and fresh uids.  ``Instance.decl`` points at that copy, and
the copy's ``instance_path`` is the control-plane prefix of everything inside it:

* top-level blocks passed to ``main``: ``instance_path`` = the declaration name
  (``MyIngress``), so a table ``t`` has ``cp_name`` ``MyIngress.t`` (like p4c);
* ``Sub() s;`` declared inside ``MyIngress``: ``instance_path`` = ``MyIngress.s`` and a
  table ``t`` inside ``Sub`` has ``cp_name`` ``MyIngress.s.t``.

``@name("x")`` on an entity overrides the local part (``<path>.x``); ``@name(".x")`` is a
global name (``x``).  Every ``cp_name`` in the IR is final: consumers never compute names.
Top-level actions (``NoAction``) are shared objects with their own name as ``cp_name``.

``Program.parsers`` / ``Program.controls`` hold one specialisation per *declaration*
(``instance_path`` = the declaration name) for inspection; the pipeline that actually runs
is ``Program.main.args`` and what is reachable from it (``Program.reachable_controls()``),
which is what P4Info must be generated from (p4c drops unreachable blocks).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterator, Union


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in an original source file (after mapping back through ``#line``)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOLOC = Loc("<builtin>", 0, 0)


@dataclass(frozen=True, slots=True)
class Annotation:
    """``@name(body)``.  ``body`` holds parsed values: str for string literals and
    identifiers, int for integer literals, (key, value) tuples for ``k=v`` pairs.
    ``text`` is the raw body text (for annotations whose body is not a value list)."""

    name: str
    body: tuple[object, ...] = ()
    text: str = ""


Annotations = dict[str, Annotation]


def _ann() -> Annotations:
    return {}


# ----------------------------------------------------------------------------- types


class Type:
    """Marker base class of all types."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class BitT(Type):
    """``bit<W>`` (signed=False) or ``int<W>`` (signed=True)."""

    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True, slots=True)
class BoolT(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class IntT(Type):
    """Compile-time, infinite-precision ``int``; never survives into runtime expressions."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True, slots=True)
class VarBitT(Type):
    """``varbit<N>``: a header field of 0..N bits whose width is set by the two-argument
    ``extract``; a value carries its current width (the executor stores ``(width, value)``)."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True, slots=True)
class StringT(Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True, slots=True)
class VoidT(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True, slots=True)
class ErrorT(Type):
    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True, slots=True)
class MatchKindT(Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True, slots=True)
class DontCareT(Type):
    """Type of ``_`` (don't-care)."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True, slots=True)
class EnumT(Type):
    """``enum E {..}`` (underlying/values None) or ``enum bit<N> E {A = 1, ..}``."""

    name: str
    members: tuple[str, ...]
    underlying: BitT | None = None
    values: tuple[int, ...] | None = None

    def value_of(self, member: str) -> int:
        """Numeric value of a member of a serializable enum."""
        assert self.values is not None
        return self.values[self.members.index(member)]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Field:
    """A field of a header/struct/union."""

    name: str
    type: Type
    annotations: Annotations = field(default_factory=_ann, compare=False, hash=False)
    type_name: str | None = field(default=None, compare=False, hash=False)
    """The ``type`` name the field was declared with (``type bit<8> T; T f;``): ``type``
    is a new type p4c checks as such, though innet stores it as its underlying type."""


class _Aggregate(Type):
    """Shared behaviour of headers, structs and unions: named, with named fields.

    Not a dataclass itself (no slots of its own), so the frozen slotted subclasses keep
    their layout; they declare ``name`` and ``fields``."""

    __slots__ = ()
    name: str
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field | None:
        if len(self.fields) > 32:  # thousands of fields (p4/innet's values): an index
            return _field_index(self).get(name)
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __str__(self) -> str:
        return self.name


_FIELD_INDEXES: "OrderedDict[int, tuple[_Aggregate, dict[str, Field]]]" = OrderedDict()


def _field_index(t: _Aggregate) -> dict[str, Field]:
    """Name -> first field of that name, built once per big aggregate (keyed by identity,
    holding the type so an id is not reused while its entry lives; the last 64 kept)."""
    hit = _FIELD_INDEXES.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    index: dict[str, Field] = {}
    for f in t.fields:
        index.setdefault(f.name, f)
    _FIELD_INDEXES[id(t)] = (t, index)
    if len(_FIELD_INDEXES) > 64:
        _FIELD_INDEXES.popitem(last=False)
    return index


@dataclass(frozen=True, slots=True)
class HeaderT(_Aggregate):
    """Header: fields are BitT, BoolT or serializable EnumT (after typedef resolution).

    A header declared with struct-typed fields (P4_16 1.2: a struct of such fields) is
    flattened as p4c's ``FlattenHeaders`` does: ``fields`` are the leaves (``row.e`` of a
    field ``row_t row`` is the field ``_row_e0``) and ``source_fields`` the declared
    fields, so that ``h.row`` (a ``Member`` of struct type, see :meth:`group`) denotes
    the run of leaves that holds it."""

    name: str
    fields: tuple[Field, ...]
    annotations: Annotations = field(default_factory=_ann, compare=False, hash=False)
    source_fields: tuple[Field, ...] = field(default=(), compare=False, hash=False)

    @property
    def width(self) -> int:
        """Size in bits (sum of field widths)."""
        return sum(type_width(f.type) for f in self.fields)

    def group(self, name: str) -> tuple[int, "StructT"] | None:
        """(index of its first leaf in ``fields``, type) of a struct-typed declared field."""
        i = 0
        for f in self.source_fields:
            n = leaf_count(f.type)
            if f.name == name and isinstance(f.type, StructT):
                return i, f.type
            i += n
        return None


def leaf_count(t: Type) -> int:
    """Scalar leaves of a (nested) struct; 1 for a scalar."""
    if isinstance(t, StructT):
        return sum(leaf_count(f.type) for f in t.fields)
    return 1


@dataclass(frozen=True, slots=True)
class StructT(_Aggregate):
    """Struct: any field types."""

    name: str
    fields: tuple[Field, ...]
    annotations: Annotations = field(default_factory=_ann, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class HeaderUnionT(_Aggregate):
    """Header union: every field is a HeaderT; at most one is valid."""

    name: str
    fields: tuple[Field, ...]
    annotations: Annotations = field(default_factory=_ann, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class StackT(Type):
    """Header stack ``H[size]``."""

    elem: Type  # HeaderT | HeaderUnionT
    size: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(frozen=True, slots=True)
class TupleT(Type):
    """Type of list expressions ``{a, b}`` and of ``tuple<...>``."""

    elems: tuple[Type, ...]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elems)) + ">"


@dataclass(frozen=True, slots=True)
class ExternT(Type):
    """Type of an extern object instance (``register<bit<32>>``, ``packet_in``, ...)."""

    name: str
    type_args: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<" + ", ".join(map(str, self.type_args)) + ">"
        return self.name


@dataclass(frozen=True, slots=True)
class ParserT(Type):
    """Type of a parser instance (name = the parser declaration or parser type name)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class ControlT(Type):
    """Type of a control instance."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class PackageT(Type):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class TableApplyT(Type):
    """Result of ``t.apply()``: members ``hit``, ``miss``, ``action_run``."""

    table_name: str

    def __str__(self) -> str:
        return f"apply_result({self.table_name})"


@dataclass(frozen=True, slots=True)
class ActionEnumT(Type):
    """Type of ``t.apply().action_run``."""

    table_name: str

    def __str__(self) -> str:
        return f"action_list({self.table_name})"


@dataclass(frozen=True, slots=True)
class TypeVarT(Type):
    """An unbound generic type parameter (only inside extern/package signatures)."""

    name: str

    def __str__(self) -> str:
        return self.name


def type_width(t: Type) -> int:
    """Width in bits of a fixed-width serializable type (0 if it has none)."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, (HeaderT, StructT)):
        return sum(type_width(f.type) for f in t.fields)
    if isinstance(t, HeaderUnionT):
        return max((type_width(f.type) for f in t.fields), default=0)
    if isinstance(t, StackT):
        return t.size * type_width(t.elem)
    if isinstance(t, TupleT):
        return sum(type_width(e) for e in t.elems)
    return 0


# ----------------------------------------------------------------------------- expressions


class Expr:
    """Marker base class of expressions; every expression has ``.type`` and ``.loc``."""

    __slots__ = ()
    type: Type
    loc: Loc


@dataclass(eq=False, slots=True)
class Const(Expr):
    """Integer or boolean constant.  For BitT the value is already wrapped to the width
    (unsigned: 0..2^W-1; signed: -2^(W-1)..2^(W-1)-1).  IntT values are unbounded."""

    value: int | bool
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ErrorMember(Expr):
    """``error.Name``."""

    name: str
    type: Type = ErrorT()
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class EnumMember(Expr):
    """``E.Member``; its ``type`` is the enum type."""

    enum: EnumT
    member: str
    type: Type = VoidT()
    loc: Loc = NOLOC

    def __post_init__(self) -> None:
        self.type = self.enum


@dataclass(eq=False, slots=True)
class MatchKindMember(Expr):
    """A match_kind value (``exact``) used as an expression (rare)."""

    name: str
    type: Type = MatchKindT()
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class StringLit(Expr):
    value: str
    type: Type = StringT()
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class VarRef(Expr):
    """Reference to a local variable or a parameter (parser/control/action/function)."""

    decl: "Param | VarDecl"
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class InstanceRef(Expr):
    """Reference to an extern / sub-parser / sub-control instance (a method target)."""

    inst: "Instance"
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Member(Expr):
    """``base.name``: struct/header/union field, or hit/miss/action_run of a TableApply."""

    base: Expr
    name: str
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class StackElem(Expr):
    """``hs[i]``; index is a Const (checked in range) or a runtime expression."""

    base: Expr
    index: Expr
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class StackProp(Expr):
    """``hs.next`` / ``hs.last`` (element type), ``hs.lastIndex`` (bit<32>), ``hs.size``."""

    base: Expr
    prop: str
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Slice(Expr):
    """``base[hi:lo]`` (constant bounds); type bit<hi-lo+1>."""

    base: Expr
    hi: int
    lo: int
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Unary(Expr):
    """``-e``, ``~e``, ``!e``."""

    op: str
    e: Expr
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Binary(Expr):
    """Binary operator.  Operands are already of a common type (int literals converted)
    except for shifts (right operand: any unsigned bit or int) and ``++``."""

    op: str
    left: Expr
    right: Expr
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Cast(Expr):
    """``(type) e``; ``type`` is the target type."""

    type: Type
    e: Expr
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Mux(Expr):
    """``cond ? then : else_``."""

    cond: Expr
    then: Expr
    else_: Expr
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ListExpr(Expr):
    """``{a, b}`` / tuple of select keys; type TupleT."""

    elems: tuple[Expr, ...]
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class StructInit(Expr):
    """``{a = 1, b = x}`` or a list expression assigned to a struct/header type.  For a
    header target the resulting header is valid."""

    type: Type
    fields: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Arg:
    """A call argument bound to its parameter.  ``expr`` None = ``_`` for an out arg."""

    expr: Expr | None
    direction: str | None
    param: "Param | None"


@dataclass(eq=False, slots=True)
class MethodCall(Expr):
    """Method call on an object: extern instance methods (``reg.read``), packet_in /
    packet_out methods (target VarRef to the parameter: extract, lookahead, advance,
    length, emit), header isValid/setValid/setInvalid, union isValid, stack
    push_front/pop_front, sub-parser / sub-control ``apply`` (target InstanceRef whose
    ``inst.decl`` is the specialised Parser/Control)."""

    target: Expr
    method: str
    args: tuple[Arg, ...]
    type_args: tuple[Type, ...]
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class TableApply(Expr):
    """``t.apply()``; use ``Member(TableApply, 'hit'|'miss'|'action_run')``."""

    table: "Table"
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ExternCall(Expr):
    """Call of an extern *function*: mark_to_drop, hash, clone, clone3,
    clone_preserving_field_list, resubmit(_preserving_field_list),
    recirculate(_preserving_field_list), digest, verify_checksum(_with_payload),
    update_checksum(_with_payload), random, truncate, log_msg, assert, assume,
    verify (parser), static_assert."""

    name: str
    args: tuple[Arg, ...]
    type_args: tuple[Type, ...]
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ActionCall(Expr):
    """An action called directly from a body (all params bound by ``args``)."""

    action: "Action"
    args: tuple[Arg, ...]
    type: Type = VoidT()
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class FunctionCall(Expr):
    func: "Function"
    args: tuple[Arg, ...]
    type: Type
    loc: Loc = NOLOC


# keyset expressions (select cases and const entries); plain Exprs are also keysets.


@dataclass(eq=False, slots=True)
class DefaultKey(Expr):
    """``default`` or ``_`` in a keyset: matches anything."""

    type: Type = DontCareT()
    loc: Loc = NOLOC
    is_default: bool = False  # True when written ``default``, False for ``_``


@dataclass(eq=False, slots=True)
class Mask(Expr):
    """``value &&& mask`` (both converted to the key type)."""

    value: Expr
    mask: Expr
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Range(Expr):
    """``lo .. hi`` (inclusive, converted to the key type)."""

    lo: Expr
    hi: Expr
    type: Type
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ActionLabel(Expr):
    """Label of a ``switch (t.apply().action_run)`` case."""

    action: "Action"
    type: Type = VoidT()
    loc: Loc = NOLOC


Keyset = Union[Expr, DefaultKey, Mask, Range]


# ----------------------------------------------------------------------------- statements


class Stmt:
    """Marker base class of statements."""

    __slots__ = ()
    loc: Loc


@dataclass(eq=False, slots=True)
class Assign(Stmt):
    lhs: Expr
    rhs: Expr
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class CallStmt(Stmt):
    """A call used as a statement (MethodCall, ExternCall, ActionCall, FunctionCall,
    TableApply)."""

    call: Expr
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Block(Stmt):
    stmts: tuple[Stmt, ...]
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class If(Stmt):
    cond: Expr
    then: Block
    else_: Block | None
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class SwitchCase:
    """Labels are Exprs / DefaultKey / ActionLabel.  The front-end merges fall-through
    labels (``a: b: {...}``) into one case with several labels, so ``body`` is None only
    for trailing labels that have no body at all (nothing runs)."""

    labels: tuple[Expr, ...]
    body: Block | None
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Switch(Stmt):
    """``switch (expr)``; for ``switch (t.apply().action_run)`` ``expr`` is
    ``Member(TableApply, 'action_run')`` and labels are ActionLabel."""

    expr: Expr
    cases: tuple[SwitchCase, ...]
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Exit(Stmt):
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Return(Stmt):
    value: Expr | None = None
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class VarDeclStmt(Stmt):
    """Local variable declaration; without ``init`` the value is unspecified (the
    executor zero-initialises it; headers start invalid)."""

    decl: "VarDecl"
    init: Expr | None = None
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class EmptyStmt(Stmt):
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class For(Stmt):
    """``for (init; cond; update) body`` (P4_16 1.2.5): ``init`` runs once, then
    ``cond`` (None: true) before each iteration and ``update`` after each one, also
    after a ``continue``.  A variable ``init`` declares is local to the loop."""

    init: tuple[Stmt, ...]
    cond: Expr | None
    update: tuple[Stmt, ...]
    body: Block
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ForIn(Stmt):
    """``for (T v in lo .. hi) body``: ``v`` takes lo, lo+1, ..., hi in turn (no
    iteration when lo > hi); the bounds are evaluated once, before the loop."""

    var: VarDecl
    lo: Expr
    hi: Expr
    body: Block
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Break(Stmt):
    """``break``: leaves the innermost ``for`` loop."""

    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Continue(Stmt):
    """``continue``: the innermost ``for`` loop's next iteration (its update first)."""

    loc: Loc = NOLOC


# ----------------------------------------------------------------------------- declarations


@dataclass(eq=False, slots=True)
class Param:
    """Parameter.  direction None = directionless (action data / constructor param)."""

    name: str
    direction: str | None
    type: Type
    uid: int
    loc: Loc = NOLOC
    annotations: Annotations = field(default_factory=_ann)
    default: Expr | None = None  # default value (optional params in extern signatures)
    type_name: str | None = None
    """The ``type`` name it was declared with (see ``Field.type_name``)."""


@dataclass(eq=False, slots=True)
class VarDecl:
    name: str
    type: Type
    uid: int
    loc: Loc = NOLOC
    annotations: Annotations = field(default_factory=_ann)
    is_const: bool = False
    type_name: str | None = None
    """The ``type`` name it was declared with (see ``Field.type_name``)."""


@dataclass(eq=False, slots=True)
class Instance:
    """``register<bit<32>>(1024) r;`` / ``Sub() s;`` / the blocks given to ``main``.
    For parser/control instances ``decl`` is the specialised copy (see module doc)."""

    name: str
    cp_name: str
    type: Type  # ExternT | ParserT | ControlT
    decl: "Parser | Control | None"
    ctor_args: tuple[Expr, ...]
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Action:
    """Directional params first, then directionless (action data, control plane)."""

    name: str
    cp_name: str
    params: tuple[Param, ...]
    body: Block
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC

    @property
    def data_params(self) -> tuple[Param, ...]:
        """The directionless params, in declaration order (P4Info param ids 1..n)."""
        return tuple(p for p in self.params if p.direction is None)


@dataclass(eq=False, slots=True)
class Function:
    name: str
    params: tuple[Param, ...]
    return_type: Type
    body: Block
    loc: Loc = NOLOC
    annotations: Annotations = field(default_factory=_ann)


@dataclass(eq=False, slots=True)
class Key:
    """A table key element.  ``name`` = ``@name`` or the key expression text as p4c
    writes it (``hdr.ipv4.dstAddr``)."""

    expr: Expr
    match_kind: str
    name: str
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ActionRef:
    """An action in a table's action list / default action / entry.  ``args`` are the
    given arguments (bind the first len(args) params: directional ones in ``actions``,
    all of them in default_action / entries)."""

    action: Action
    args: tuple[Expr, ...] = ()
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ConstEntry:
    keys: tuple[Expr, ...]  # Expr | Mask | Range | DefaultKey, one per table key
    action: ActionRef
    priority: int | None = None
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Table:
    name: str
    cp_name: str
    keys: tuple[Key, ...]
    actions: tuple[ActionRef, ...]
    default_action: ActionRef
    default_is_const: bool = False
    const_entries: tuple[ConstEntry, ...] | None = None
    size: int | None = None
    implementation: Instance | None = None
    direct_counter: Instance | None = None
    direct_meter: Instance | None = None
    idle_timeout: bool = False
    properties: dict[str, Expr] = field(default_factory=dict)
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC
    default_action_given: bool = False  # False: default_action defaulted to NoAction


@dataclass(eq=False, slots=True)
class Goto:
    """``transition state;`` (``accept`` and ``reject`` are terminal names)."""

    state: str
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class SelectCase:
    keys: tuple[Expr, ...]  # one keyset per select key (Expr | Mask | Range | DefaultKey)
    state: str
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Select:
    keys: tuple[Expr, ...]
    cases: tuple[SelectCase, ...]
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ParserState:
    name: str
    body: tuple[Stmt, ...]
    transition: Goto | Select
    loc: Loc = NOLOC
    annotations: Annotations = field(default_factory=_ann)


@dataclass(eq=False, slots=True)
class Parser:
    """A (specialised) parser.  ``instance_path`` prefixes the cp_names inside."""

    name: str
    params: tuple[Param, ...]
    ctor_params: tuple[Param, ...]
    locals: tuple[object, ...]  # VarDeclStmt | Instance
    states: dict[str, ParserState]
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC
    instance_path: str = ""


@dataclass(eq=False, slots=True)
class Control:
    """A (specialised) control.  ``instance_path`` prefixes the cp_names inside."""

    name: str
    params: tuple[Param, ...]
    ctor_params: tuple[Param, ...]
    locals: tuple[object, ...]  # VarDeclStmt | Instance | Action | Table
    body: Block
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC
    instance_path: str = ""

    @property
    def tables(self) -> tuple[Table, ...]:
        return tuple(x for x in self.locals if isinstance(x, Table))

    @property
    def actions(self) -> tuple[Action, ...]:
        return tuple(x for x in self.locals if isinstance(x, Action))

    @property
    def instances(self) -> tuple[Instance, ...]:
        return tuple(x for x in self.locals if isinstance(x, Instance))


@dataclass(eq=False, slots=True)
class MethodSig:
    """Signature of an extern method, extern function, or constructor."""

    name: str
    params: tuple[Param, ...]
    return_type: Type
    type_params: tuple[str, ...] = ()
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class ExternDecl:
    """An extern object type (``extern register<T> {...}``) or, with ``is_function``,
    an extern function (``extern void mark_to_drop(...)``; its signature in ``methods``)."""

    name: str
    type_params: tuple[str, ...]
    methods: tuple[MethodSig, ...]
    ctors: tuple[MethodSig, ...] = ()
    is_function: bool = False
    annotations: Annotations = field(default_factory=_ann)
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class PackageInstance:
    """``V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;``"""

    name: str
    type_name: str
    args: tuple[Instance, ...]
    loc: Loc = NOLOC


@dataclass(eq=False, slots=True)
class Program:
    types: dict[str, Type]
    errors: tuple[str, ...]
    match_kinds: tuple[str, ...]
    parsers: dict[str, Parser]
    controls: dict[str, Control]
    actions: dict[str, Action]  # top-level actions
    functions: dict[str, Function]
    externs: dict[str, ExternDecl]
    consts: dict[str, Expr]
    main: PackageInstance | None
    source_files: tuple[str, ...] = ()
    digest_calls: list[ExternCall] = field(default_factory=list)  # all digest<T>() sites
    warnings: tuple[str, ...] = ()
    """The front-end's warnings on this program, as it logged them (``file:line:col:
    warning: ...``); kept so that a build from the start-up cache can give them again."""
    cache_key: str = ""
    """Start-up cache key of the source this program was compiled from
    (``innet.switch.startcache``; set by ``device_config.build``); empty: not cached."""
    body_uses: dict[Block, list[object]] = field(default_factory=dict)
    """Per control body, its table applications and calls in pre-order: a memo of
    ``pipeline.compiler.body_uses`` (a K=2048 ``innet.p4``'s bodies are 280,000 nodes, walked
    at every load), filled by the executor's compiler, and by ``device_config.build``
    before the program goes into the start-up cache."""

    def reachable_blocks(self) -> Iterator[Parser | Control]:
        """Every specialised parser/control reachable from ``main`` (depth first)."""
        stack: list[Parser | Control] = []
        if self.main is not None:
            stack = [a.decl for a in self.main.args if a.decl is not None]
        seen: set[int] = set()
        while stack:
            blk = stack.pop(0)
            if id(blk) in seen:
                continue
            seen.add(id(blk))
            yield blk
            for loc in blk.locals:
                if isinstance(loc, Instance) and loc.decl is not None:
                    stack.append(loc.decl)

    def reachable_controls(self) -> Iterator[Control]:
        for b in self.reachable_blocks():
            if isinstance(b, Control):
                yield b

    def reachable_parsers(self) -> Iterator[Parser]:
        for b in self.reachable_blocks():
            if isinstance(b, Parser):
                yield b

    def header_types(self) -> list[HeaderT]:
        """Every named header type (e.g. for ``@controller_header``)."""
        return [t for n, t in self.types.items() if isinstance(t, HeaderT) and t.name == n]
