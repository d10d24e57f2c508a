"""P4Runtime bytestrings (spec, "Bytestrings"): a value of a ``bit<W>`` object arrives
either in canonical form (shortest big-endian encoding, at least one byte) or padded to
``ceil(W/8)`` bytes; either way it must fit in W bits. Values going out are canonical.
"""

from __future__ import annotations

from finsy.proto import p4t

from innet.switch.p4rt_codec.status import invalid


def decode_bytes(value: bytes, bitwidth: int, what: str) -> int:
    """The integer of a bytestring for a ``bit<bitwidth>`` object, or INVALID_ARGUMENT."""
    if not value:
        raise invalid(f"{what}: empty bytestring (a value needs at least one byte)")
    nbytes = (bitwidth + 7) // 8
    number = int.from_bytes(value, "big")
    if len(value) > nbytes and value[: len(value) - nbytes].strip(b"\0"):
        raise invalid(f"{what}: {len(value)}-byte value 0x{value.hex()} does not fit in {bitwidth} bits")
    if len(value) > max(nbytes, 1):
        raise invalid(
            f"{what}: {len(value)}-byte value 0x{value.hex()} is longer than {nbytes} bytes "
            f"(bit<{bitwidth}>); send it canonical or padded to {nbytes} bytes"
        )
    if number >> bitwidth:
        raise invalid(f"{what}: value 0x{value.hex()} does not fit in {bitwidth} bits")
    return number


def encode_bytes(number: int) -> bytes:
    """The canonical bytestring of a non-negative integer (at least one byte)."""
    if number < 0:
        raise ValueError(f"bytestring of negative value {number}")
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def encode_padded(number: int, bitwidth: int) -> bytes:
    """The bytestring of ``number`` padded to ``ceil(bitwidth/8)`` bytes."""
    return number.to_bytes(max(1, (bitwidth + 7) // 8), "big")


def bitstring_width(spec: p4t.P4DataTypeSpec, what: str) -> int:
    """Width of a ``bit<W>``/``int<W>`` type spec, or INVALID_ARGUMENT for other types."""
    if spec.HasField("bitstring"):
        kind = spec.bitstring.WhichOneof("type_spec")
        if kind == "bit":
            return int(spec.bitstring.bit.bitwidth)
        if kind == "int":
            return int(spec.bitstring.int.bitwidth)
    if spec.HasField("bool"):
        return 1
    raise invalid(f"{what}: type {spec.WhichOneof('type_spec')} is not a bitstring")
