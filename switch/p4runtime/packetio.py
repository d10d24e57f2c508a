"""Packet I/O through ``@controller_header`` headers.

A PacketOut's metadata is bit-packed (most significant bit first) in P4Info order into
the ``packet_out`` header, which is prepended to the payload and injected on the CPU
port. A packet the program sends to the CPU port starts with the ``packet_in`` header:
it is cut off and its fields become the PacketIn metadata. Metadata missing from a
PacketOut (typically ``@padding`` fields) are zero.
"""

from __future__ import annotations

from finsy.proto import p4i, p4r

from innet.switch.p4runtime.errors import P4RuntimeError, invalid
from innet.switch.p4rt_codec.bytestrings import decode_bytes, encode_bytes

import grpc


def header_bytes(header: p4i.ControllerPacketMetadata) -> int:
    """Byte length of a controller header; INTERNAL if it is not byte-aligned."""
    bits = sum(int(m.bitwidth) for m in header.metadata)
    if bits % 8:
        raise P4RuntimeError(
            grpc.StatusCode.INTERNAL,
            f"controller header {header.preamble.name!r} is {bits} bits, not a whole number of bytes",
        )
    return bits // 8


def pack_packet_out(header: p4i.ControllerPacketMetadata | None, packet: p4r.PacketOut) -> bytes:
    """The bytes to inject on the CPU port for ``packet``."""
    if header is None:
        if packet.metadata:
            raise invalid("PacketOut has metadata but the program has no packet_out controller header")
        return bytes(packet.payload)
    fields = {m.id: m for m in header.metadata}
    values: dict[int, int] = {}
    for md in packet.metadata:
        spec = fields.get(md.metadata_id)
        if spec is None:
            raise invalid(f"PacketOut: header {header.preamble.name!r} has no metadata with id "
                          f"{md.metadata_id}")
        if md.metadata_id in values:
            raise invalid(f"PacketOut: metadata {spec.name!r} given twice")
        values[md.metadata_id] = decode_bytes(md.value, int(spec.bitwidth),
                                              f"PacketOut metadata {spec.name!r}")
    number = 0
    for m in header.metadata:
        number = (number << int(m.bitwidth)) | values.get(m.id, 0)
    return number.to_bytes(header_bytes(header), "big") + bytes(packet.payload)


def unpack_packet_in(header: p4i.ControllerPacketMetadata | None, data: bytes) -> p4r.PacketIn:
    """The PacketIn of bytes the program sent to the CPU port."""
    if header is None:
        return p4r.PacketIn(payload=data)
    size = header_bytes(header)
    if len(data) < size:
        raise invalid(f"packet to the CPU port is {len(data)} bytes, shorter than the "
                      f"{size}-byte packet_in header")
    number = int.from_bytes(data[:size], "big")
    shift = size * 8
    packet = p4r.PacketIn(payload=data[size:])
    for m in header.metadata:
        shift -= int(m.bitwidth)
        value = (number >> shift) & ((1 << int(m.bitwidth)) - 1)
        packet.metadata.add(metadata_id=m.id, value=encode_bytes(value))
    return packet
