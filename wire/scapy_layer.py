"""Scapy dissection of innet messages: importing this module binds ``InnetAgg`` to UDP 18766.

    from innet.wire import scapy_layer   # binds the layer (scapy's convention)
    pkt = Ether(frame_bytes)
    pkt[scapy_layer.InnetAgg].chunk

The values follow the header as ``Raw`` payload of K*4 bytes (none with ``HDRONLY``);
``InnetAgg.values()`` decodes the ``count`` valid ones. Field names and widths are those of ``innet.wire``.
"""

from __future__ import annotations

import numpy as np
from scapy.fields import ByteEnumField, FlagsField, IntField, ShortField, XIntField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from innet import wire


class InnetAgg(Packet):
    """The 24-byte innet header (docs/PROTOCOL.md); values are the payload."""

    name = "InnetAgg"
    fields_desc = [
        ByteEnumField("msg_type", wire.MsgType.CONTRIB, {m.value: m.name for m in wire.MsgType}),
        FlagsField("flags", 0, 8, ["VER", "RETRANS", "HDRONLY"]),
        ShortField("job", 0),
        ShortField("worker", 0),
        ShortField("slot", 0),
        IntField("chunk", 0),
        ShortField("count", 0),
        ShortField("num_workers", 0),
        XIntField("bitmap", 0),
        IntField("epoch", 0),
    ]

    def values(self) -> np.ndarray:
        """The ``count`` valid int32 values of the payload (none with ``HDRONLY``)."""
        if self.flags.HDRONLY:
            return np.zeros(0, np.int32)
        raw = bytes(self.payload)
        count = min(self.count, len(raw) // 4)
        return np.frombuffer(raw, dtype=wire.VALUE_DTYPE, count=count).astype(np.int32)


bind_layers(UDP, InnetAgg, dport=wire.UDP_PORT)
bind_layers(UDP, InnetAgg, sport=wire.UDP_PORT)
