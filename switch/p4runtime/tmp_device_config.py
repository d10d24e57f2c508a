"""Forms of ``ForwardingPipelineConfig.p4_device_config`` the server accepts.

1. innet's device config, the bytes ``innet-p4c`` writes (passed to the target as is);
2. the same bytes (or a BMv2-style payload) wrapped in a serialized
   ``p4.tmp.P4DeviceConfig`` (``bool reassign = 1; Extras extras = 2; bytes device_data
   = 3``), as the p4lang tutorials' helper sends: the wrapper is removed here;
3. P4 source text: passed to the target, which compiles it.

The wrapper is recognised only when the whole buffer parses as that message with a
non-empty ``device_data``, so JSON or P4 text is never mistaken for it.
"""

from __future__ import annotations


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def parse_tmp_device_config(data: bytes) -> bytes | None:
    """``device_data`` of a serialized ``p4.tmp.P4DeviceConfig``, or None if ``data`` is not one."""
    pos = 0
    device_data: bytes | None = None
    try:
        while pos < len(data):
            tag, pos = _varint(data, pos)
            number, wire = tag >> 3, tag & 7
            if number == 1 and wire == 0:
                _, pos = _varint(data, pos)
            elif number in (2, 3) and wire == 2:
                length, pos = _varint(data, pos)
                if pos + length > len(data):
                    return None
                if number == 3:
                    device_data = data[pos : pos + length]
                pos += length
            else:
                return None
    except ValueError:
        return None
    return device_data or None


def unwrap_device_config(data: bytes) -> bytes:
    """The payload of ``data`` with a ``p4.tmp.P4DeviceConfig`` wrapper removed, if any."""
    inner = parse_tmp_device_config(data)
    return data if inner is None else inner


def wrap_tmp_device_config(device_data: bytes, reassign: bool = True) -> bytes:
    """Serialize a ``p4.tmp.P4DeviceConfig`` holding ``device_data`` (tests, helpers)."""

    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            byte = n & 0x7F
            n >>= 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    head = b"\x08\x01" if reassign else b""
    return head + b"\x1a" + varint(len(device_data)) + device_data
