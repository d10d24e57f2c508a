"""Hash algorithms against the BMv2 ground truth of the conformance test hash_algos."""

from innet.switch.pipeline import hashing as h

DATA = bytes.fromhex("0102030405")


def test_crc16_is_crc16_arc() -> None:
    assert h.crc16(b"123456789") == 0xBB3D  # CRC-16/ARC check value
    assert h.crc16(DATA) == 0xBB0E
    assert h.crc16(bytes.fromhex("ffffffffff")) == 0x8015


def test_crc32_is_ieee() -> None:
    assert h.crc32(b"123456789") == 0xCBF43926
    assert h.crc32(DATA) == 0x470B99F4


def test_csum16_odd_length_padded_at_end() -> None:
    assert h.csum16(DATA) == 0xF6F9
    assert h.csum16(DATA[:4]) == 0xFBF9
    assert h.csum16(b"") == 0xFFFF
    assert h.csum16(b"\xff\xff") == 0x0000


def test_csum16_int_matches_bytes_version() -> None:
    ip = bytes.fromhex("450000141234000040110000" "0a0000010a000002")
    assert h.csum16_int(int.from_bytes(ip, "big")) == h.csum16(ip) == 0x54A3


def test_xor16_and_identity() -> None:
    assert h.xor16(DATA[:4]) == 0x0206
    assert h.xor16(DATA) == 0x0706
    assert h.identity(DATA) == 0x0102030405
    assert h.identity(bytes(range(1, 11))) == int.from_bytes(bytes(range(3, 11)), "big")


def test_custom_unconfigured_equals_standard() -> None:
    assert h.ALGORITHMS["crc16_custom"](DATA) == h.ALGORITHMS["crc16"](DATA)
    assert h.ALGORITHMS["crc32_custom"](DATA) == h.ALGORITHMS["crc32"](DATA)


def test_hash_result_base_plus_mod() -> None:
    assert h.hash_result(0xBB0E, 100, 1000) == 100 + 0xBB0E % 1000 == 0x3DA
    assert h.hash_result(12, 5, 0) == 5


def test_pack_fields_msb_first_padded() -> None:
    assert h.pack_fields([0x1, 0x2], [4, 4]) == b"\x12"
    assert h.pack_fields([0x1FFF, 0x7], [13, 3]) == b"\xff\xff"
    assert h.pack_fields([0x1], [4]) == b"\x10"
