"""P4Info files as p4c writes them (``--p4runtime-files``): text with p4c's header
comment, JSON or binary, the format taken from the file suffix."""

from __future__ import annotations

import enum
from pathlib import Path

from finsy.proto import p4i
from google.protobuf import json_format, text_format

TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"
"""First lines of every text P4Info p4c writes (editors use them to find the schema)."""


class P4InfoFormat(enum.Enum):
    """Serialisations p4c offers for ``--p4runtime-files`` / ``--p4runtime-format``."""

    TEXT = "text"
    BINARY = "binary"
    JSON = "json"


_SUFFIXES = {".txt": P4InfoFormat.TEXT, ".txtpb": P4InfoFormat.TEXT, ".json": P4InfoFormat.JSON, ".bin": P4InfoFormat.BINARY}


def format_for_path(path: Path) -> P4InfoFormat:
    """The format p4c infers from a file suffix; ValueError names the known suffixes."""
    try:
        return _SUFFIXES[path.suffix]
    except KeyError:
        raise ValueError(
            f"{path}: cannot tell the P4Runtime file format from suffix {path.suffix!r}; "
            "known suffixes are .txt, .txtpb, .json, .bin"
        ) from None


def to_text(info: p4i.P4Info) -> str:
    """Protobuf text format with p4c's header comment."""
    return TEXT_HEADER + text_format.MessageToString(info)


def serialize(info: p4i.P4Info, fmt: P4InfoFormat) -> bytes:
    if fmt is P4InfoFormat.TEXT:
        return to_text(info).encode()
    if fmt is P4InfoFormat.JSON:
        return json_format.MessageToJson(info, indent=1).encode()
    return info.SerializeToString()


def write_p4info(info: p4i.P4Info, path: Path, fmt: P4InfoFormat | None = None) -> None:
    """Write ``info`` to ``path`` (format from the suffix unless given)."""
    path.write_bytes(serialize(info, fmt or format_for_path(path)))


def parse_p4info(data: bytes, fmt: P4InfoFormat = P4InfoFormat.TEXT) -> p4i.P4Info:
    """Read a P4Info back (text: comments allowed)."""
    info = p4i.P4Info()
    if fmt is P4InfoFormat.TEXT:
        text_format.Parse(data.decode(), info)
    elif fmt is P4InfoFormat.JSON:
        json_format.Parse(data.decode(), info)
    else:
        info.ParseFromString(data)
    return info
