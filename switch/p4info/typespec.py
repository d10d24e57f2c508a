"""IR types to P4Runtime ``P4DataTypeSpec`` messages, filling ``P4Info.type_info``.

Mirrors p4c's TypeSpecConverter: named types (structs, headers, unions, enums,
serializable enums, error) are described once in ``type_info`` and referred to by name.
Typedefs and ``type`` declarations are already resolved to their underlying types by the
front-end, so ``new_types`` / ``@p4runtime_translation`` are never produced.
"""

from __future__ import annotations

from finsy.proto import p4t

from innet.switch.frontend import ir


class TypeSpecError(ValueError):
    """A type that P4Runtime cannot describe (e.g. ``int`` or an extern)."""


def encode_value(value: int, width: int) -> bytes:
    """``value`` as big-endian bytes padded to the byte size of ``width`` bits, as p4c
    writes constants in P4Info (two's complement for negative values)."""
    nbytes = max(1, (width + 7) // 8)
    return (value & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "big")


class TypeSpecConverter:
    """Converts IR types; one instance per P4Info so named types are described once."""

    def __init__(self, type_info: p4t.P4TypeInfo, errors: tuple[str, ...] = ()) -> None:
        self._info = type_info
        self._errors = errors

    def convert(self, t: ir.Type) -> p4t.P4DataTypeSpec:
        spec = p4t.P4DataTypeSpec()
        if isinstance(t, ir.BitT):
            spec.bitstring.CopyFrom(self._bitstring(t))
        elif isinstance(t, ir.VarBitT):
            spec.bitstring.varbit.max_bitwidth = t.max_width
        elif isinstance(t, ir.BoolT):
            spec.bool.SetInParent()
        elif isinstance(t, ir.TupleT):
            spec.tuple.SetInParent()
            for elem in t.elems:
                spec.tuple.members.append(self.convert(elem))
        elif isinstance(t, ir.StructT):
            spec.struct.name = t.name
            self._add_struct(t)
        elif isinstance(t, ir.HeaderT):
            spec.header.name = t.name
            self._add_header(t)
        elif isinstance(t, ir.HeaderUnionT):
            spec.header_union.name = t.name
            self._add_union(t)
        elif isinstance(t, ir.StackT):
            if isinstance(t.elem, ir.HeaderUnionT):
                spec.header_union_stack.header_union.name = t.elem.name
                spec.header_union_stack.size = t.size
                self._add_union(t.elem)
            elif isinstance(t.elem, ir.HeaderT):
                spec.header_stack.header.name = t.elem.name
                spec.header_stack.size = t.size
                self._add_header(t.elem)
            else:
                raise TypeSpecError(f"header stack of {t.elem} cannot be described in P4Info")
        elif isinstance(t, ir.EnumT):
            if t.underlying is not None:
                spec.serializable_enum.name = t.name
                self._add_serializable_enum(t)
            else:
                spec.enum.name = t.name
                self._add_enum(t)
        elif isinstance(t, ir.ErrorT):
            spec.error.SetInParent()
            if not self._info.HasField("error"):
                self._info.error.members.extend(self._errors)
        else:
            raise TypeSpecError(f"type {t} cannot be described in P4Info")
        return spec

    @staticmethod
    def _bitstring(t: ir.BitT) -> p4t.P4BitstringLikeTypeSpec:
        spec = p4t.P4BitstringLikeTypeSpec()
        if t.signed:
            spec.int.bitwidth = t.width
        else:
            spec.bit.bitwidth = t.width
        return spec

    def _add_struct(self, t: ir.StructT) -> None:
        if t.name in self._info.structs:
            return
        entry = self._info.structs[t.name]
        for f in t.fields:
            member = entry.members.add()
            member.name = _field_name(f)
            member.type_spec.CopyFrom(self.convert(f.type))

    def _add_header(self, t: ir.HeaderT) -> None:
        if t.name in self._info.headers:
            return
        entry = self._info.headers[t.name]
        for f in t.fields:
            member = entry.members.add()
            member.name = _field_name(f)
            ftype = f.type
            if isinstance(ftype, ir.EnumT) and ftype.underlying is not None:
                ftype = ftype.underlying
            elif isinstance(ftype, ir.BoolT):
                ftype = ir.BitT(1)
            if isinstance(ftype, ir.BitT):
                member.type_spec.CopyFrom(self._bitstring(ftype))
            elif isinstance(ftype, ir.VarBitT):
                member.type_spec.varbit.max_bitwidth = ftype.max_width
            else:
                raise TypeSpecError(f"header field {t.name}.{f.name} of type {ftype} cannot be described in P4Info")

    def _add_union(self, t: ir.HeaderUnionT) -> None:
        if t.name in self._info.header_unions:
            return
        entry = self._info.header_unions[t.name]
        for f in t.fields:
            member = entry.members.add()
            member.name = _field_name(f)
            assert isinstance(f.type, ir.HeaderT)
            member.header.name = f.type.name
            self._add_header(f.type)

    def _add_enum(self, t: ir.EnumT) -> None:
        if t.name in self._info.enums:
            return
        entry = self._info.enums[t.name]
        for name in t.members:
            entry.members.add().name = name

    def _add_serializable_enum(self, t: ir.EnumT) -> None:
        if t.name in self._info.serializable_enums:
            return
        assert t.underlying is not None and t.values is not None
        entry = self._info.serializable_enums[t.name]
        entry.underlying_type.bitwidth = t.underlying.width
        for name, value in zip(t.members, t.values):
            member = entry.members.add()
            member.name = name
            member.value = encode_value(value, t.underlying.width)


def _field_name(f: ir.Field) -> str:
    ann = f.annotations.get("name")
    if ann is not None and ann.body and isinstance(ann.body[0], str):
        return ann.body[0]
    return f.name


def bitwidth(t: ir.Type) -> int:
    """Width P4Info reports for a match field / action parameter / metadata of type ``t``
    (0 for ``error`` and other types without a fixed width, as p4c does)."""
    if isinstance(t, ir.BitT):
        return t.width
    if isinstance(t, ir.BoolT):
        return 1
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, ir.VarBitT):
        return t.max_width
    return ir.type_width(t)
