"""Hash and checksum algorithms of v1model, bit-exact with BMv2.

Every algorithm maps the field-list bytes to an unsigned int. Field lists are packed
MSB first, field after field, and padded with zero bits at the end to a whole byte
(BMv2's byte buffer). ``hash()``'s result is ``base + H % max`` truncated to the
destination width by the caller.

- ``crc16``: CRC-16/ARC (poly 0x8005 reflected, init 0, xorout 0).
- ``crc32``: CRC-32/IEEE (reflected, init and xorout 0xFFFFFFFF), i.e. ``zlib.crc32``.
- ``crc16_custom`` / ``crc32_custom`` without runtime configuration: same as crc16/crc32.
- ``csum16``: Internet checksum, ones' complement of the ones' complement sum of
  16-bit words; an odd length is padded with one zero byte at the end.
- ``xor16``: XOR of the 16-bit words (odd length padded likewise).
- ``identity``: the bytes as a big-endian number, keeping the low 64 bits.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

HashFn = Callable[[bytes], int]


def _crc16_arc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC16_TABLE = _crc16_arc_table()


def crc16(data: bytes) -> int:
    """CRC-16/ARC of ``data``."""
    crc = 0
    table = _CRC16_TABLE
    for b in data:
        crc = (crc >> 8) ^ table[(crc ^ b) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    """CRC-32/IEEE of ``data``."""
    return zlib.crc32(data)


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071) of ``data``, odd length padded with a zero byte."""
    if len(data) & 1:
        data = data + b"\x00"
    return csum16_int(int.from_bytes(data, "big"))


def csum16_int(x: int) -> int:
    """Internet checksum of a big-endian number made of whole 16-bit words.

    Since 2**16 == 1 (mod 0xFFFF), the ones' complement sum of the words is ``x % 0xFFFF``
    except that a non-zero multiple of 0xFFFF sums to 0xFFFF.
    """
    if x == 0:
        return 0xFFFF
    s = x % 0xFFFF
    if s == 0:
        return 0
    return s ^ 0xFFFF


def xor16(data: bytes) -> int:
    """XOR of the 16-bit big-endian words of ``data``, odd length padded with a zero byte."""
    if len(data) & 1:
        data = data + b"\x00"
    r = 0
    for i in range(0, len(data), 2):
        r ^= (data[i] << 8) | data[i + 1]
    return r


def identity(data: bytes) -> int:
    """``data`` as a big-endian number, low 64 bits."""
    return int.from_bytes(data, "big") & 0xFFFFFFFFFFFFFFFF


ALGORITHMS: dict[str, HashFn] = {
    "crc16": crc16,
    "crc16_custom": crc16,
    "crc32": crc32,
    "crc32_custom": crc32,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
}


def pack_fields(values: Sequence[int], widths: Sequence[int]) -> bytes:
    """Field list as BMv2's byte buffer: MSB first, zero bits padded at the end."""
    acc = 0
    nbits = 0
    for v, w in zip(values, widths):
        acc = (acc << w) | (v & ((1 << w) - 1))
        nbits += w
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def hash_result(h: int, base: int, max_: int) -> int:
    """``base + h % max``; a ``max`` of 0 yields ``base`` (no modulo range)."""
    return base + (h % max_) if max_ else base
