"""argparse ``type=`` converters shared by every innet command line.

Why one module: each CLI (``innet``, ``innet-switch``, ``innet-p4c``, ``innet-stf``) takes
paths, addresses and bounded numbers, and a bad value must give the same one-line,
named error everywhere, at parse time, before anything starts. argparse turns an
``ArgumentTypeError`` into ``<prog>: error: argument <flag>: <message>`` and exit status 2.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable

UINT64_MAX = (1 << 64) - 1
UINT128_MAX = (1 << 128) - 1


def input_file(text: str) -> Path:
    """A file to read: it must exist and must not be a directory."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r}: no such file")
    return path


def output_dir(text: str) -> Path:
    """A directory to write into (created later if missing); an existing non-directory is refused."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a directory")
    return path


def parse_host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6addr]:PORT`` too) with PORT in 0..65535; ValueError says what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r}: expected HOST:PORT")
    if not port.isdigit():
        raise ValueError(f"{text!r}: port {port!r} is not a number")
    number = int(port)
    if number > 65535:
        raise ValueError(f"{text!r}: port {number} is outside 0..65535")
    return host, number


def host_port(text: str) -> str:
    """argparse type for ``HOST:PORT``; returns the text unchanged once it is valid."""
    try:
        parse_host_port(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """argparse type: an integer (decimal or 0x..) within ``low..high`` (no upper bound: None)."""

    def convert(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            try:
                value = int(text)  # decimal with leading zeros
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bound = f"{low}..{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"{value} is outside {bound}")
        return value

    convert.__name__ = "integer"
    return convert


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (timeouts, durations)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a number > 0")
    return value


__all__ = ["UINT64_MAX", "UINT128_MAX", "host_port", "input_file", "int_range", "output_dir",
           "parse_host_port", "positive_float"]


def sizes(text: str) -> tuple[int, ...]:
    """``1K,64K,1M`` -> (1024, 65536, 1048576)."""
    out = []
    for part in text.split(","):
        part = part.strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(part[-1:], 1)
        number = part[:-1] if scale != 1 else part
        try:
            out.append(int(number) * scale)
        except ValueError:
            raise argparse.ArgumentTypeError(f"size {part!r}: expected a number with optional K or M") from None
    return tuple(out)


def int_list(text: str) -> tuple[int, ...]:
    """``2,4,8`` -> (2, 4, 8)."""
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers") from None


def float_list(text: str) -> tuple[float, ...]:
    """``0,0.5`` -> (0.0, 0.5)."""
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated numbers") from None
