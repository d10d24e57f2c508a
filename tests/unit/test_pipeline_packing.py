"""Header chunking for struct-based extraction/emission (innet.switch.pipeline.packing)."""

import struct

import pytest

from innet.switch.pipeline.packing import chunk_plan


def test_ipv4_chunks() -> None:
    fmt, chunks = chunk_plan([4, 4, 8, 16, 16, 3, 13, 8, 8, 16, 32, 32])
    assert fmt == "!BBHHHBBHII"
    assert chunks[0].fields == ((0, 4, 4), (1, 0, 4))
    assert chunks[4].fields == ((5, 13, 3), (6, 0, 13))
    assert struct.calcsize(fmt) == 20


def test_mac_is_split_largest_code_first() -> None:
    fmt, chunks = chunk_plan([48, 48, 16])
    assert fmt == "!IHIHH"
    assert chunks[0].codes == (("I", 32), ("H", 16))


def test_odd_total_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_plan([4, 8])
