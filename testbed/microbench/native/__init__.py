"""C tools of the testbed, compiled on first use by ``innet.native_build`` (cached by
content hash): ``sender.c`` (a closed-loop AF_PACKET generator with a window of frames in
flight, batched with sendmmsg/recvmmsg) and ``reflector.c`` (bounces every frame on its
interface unparsed: the ceiling a switch on that veth is held against) and ``echo.c``
(a UDP "switch" answering each CONTRIB with its RESULT, for the agent benchmark).

    sender = tool("sender")         # Path of the cached executable; NativeBuildError if no cc
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from innet.native_build import build_executable

TOOLS = ("sender", "reflector", "echo")


def tool(name: str) -> Path:
    """The executable of ``name`` (one of TOOLS), built if the cache lacks it."""
    if name not in TOOLS:
        raise ValueError(f"testbed tool {name!r}: expected one of {', '.join(TOOLS)}")
    source = resources.files("innet.testbed.microbench.native").joinpath(f"{name}.c").read_text()
    return build_executable(f"innet-{name}", source)


def write_frames(path: Path, frames: list[bytes]) -> None:
    """The sender's frame file: a little-endian uint16 length, then the bytes, per frame."""
    with path.open("wb") as f:
        for frame in frames:
            if not 14 <= len(frame) <= 9216:
                raise ValueError(f"frame of {len(frame)} bytes: the sender takes 14..9216")
            f.write(len(frame).to_bytes(2, "little") + frame)
