"""Bit-exact value helpers (innet.switch.pipeline.values)."""

from innet.switch.pipeline import values as v


def test_wrap_unsigned_and_signed() -> None:
    assert v.wrap(0x1FF, 8) == 0xFF
    assert v.wrap(-1, 8) == 0xFF
    assert v.wrap(0x80, 8, signed=True) == -128
    assert v.wrap(0x7F, 8, signed=True) == 127
    assert v.to_signed(0xFE, 8) == -2
    assert v.to_unsigned(-2, 8) == 0xFE


def test_saturating_unsigned() -> None:
    assert v.sat_add(200, 100, 8, False) == 255
    assert v.sat_sub(10, 20, 8, False) == 0
    assert v.sat_add(1, 2, 8, False) == 3


def test_saturating_signed() -> None:
    assert v.sat_add(100, 100, 8, True) == 127
    assert v.sat_sub(-100, 100, 8, True) == -128
    assert v.sat_sub(-128, -1, 8, True) == -127


def test_shifts_by_width_or_more() -> None:
    # conformance 'arith': logical shifts by >= width give 0, int<8> >> fills with the sign bit
    for amount in (8, 9, 200):
        assert v.shl(0xFF, amount, 8, False) == 0
        assert v.shr(0xFF, amount, 8, False) == 0
        assert v.shr(-128, amount, 8, True) == -1
        assert v.shl(-1, amount, 8, True) == 0
    assert v.shl(0x81, 1, 8, False) == 0x02
    assert v.shl(0x40, 1, 8, True) == -128


def test_concat_and_slices() -> None:
    assert v.concat(0xA, 0xB, 4) == 0xAB
    assert v.slice_get(0xABCD, 11, 4) == 0xBC
    assert v.slice_set(0x00, 7, 4, 0xF, 8) == 0xF0
    assert v.slice_set(0x7F, 7, 7, 1, 8, signed=True) == -1


def test_division_by_zero_gives_zero() -> None:
    assert v.div(7, 0) == 0 and v.mod(7, 0) == 0
    assert v.div(7, 2) == 3 and v.mod(7, 2) == 1
