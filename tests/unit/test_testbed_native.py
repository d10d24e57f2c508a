"""innet.testbed.microbench.native: the C sender and reflector build through the native cache and
refuse bad arguments with one line (no root needed for these checks)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from innet.native_build import NativeBuildError
from innet.testbed.microbench.native import tool, write_frames


@pytest.fixture(scope="module")
def tools() -> dict[str, Path]:
    try:
        return {name: tool(name) for name in ("sender", "reflector")}
    except NativeBuildError as error:
        pytest.skip(f"needs a C compiler: {error}")


def test_frame_file_format(tmp_path: Path) -> None:
    path = tmp_path / "f"
    write_frames(path, [bytes(range(60)), b"\xff" * 300])
    data = path.read_bytes()
    assert data[:2] == (60).to_bytes(2, "little") and data[2:62] == bytes(range(60))
    assert data[62:64] == (300).to_bytes(2, "little") and len(data) == 64 + 300
    with pytest.raises(ValueError, match=r"frame of 10 bytes: the sender takes 14..9216"):
        write_frames(path, [b"x" * 10])
    with pytest.raises(ValueError, match=r"testbed tool 'pinger': expected one of sender, reflector, echo"):
        tool("pinger")


def test_tools_refuse_bad_arguments(tools: dict[str, Path], tmp_path: Path) -> None:
    done = subprocess.run([str(tools["sender"]), "lo"], capture_output=True, text=True, timeout=10)
    assert done.returncode == 2 and done.stderr.startswith("usage: ")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    done = subprocess.run([str(tools["sender"]), "lo", str(empty), "4", "1", "0"], capture_output=True,
                          text=True, timeout=10)
    assert done.returncode == 2
    assert done.stderr == f"innet-veth-sender: {empty}: no frames (uint16 LE length + bytes each)\n"
    for args in ([], ["lo", "--rx-rings"], ["lo", "--rx-ring", "extra"]):
        done = subprocess.run([str(tools["reflector"]), *args], capture_output=True, text=True, timeout=10)
        assert done.returncode == 2 and done.stderr.startswith("usage: ") and "IFACE [--rx-ring]" in done.stderr
