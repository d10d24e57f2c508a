"""Pipeline configs to push: innet-p4c's output directory, a ``.p4`` file compiled on the
fly by innet's front-end, or explicit P4Info + device config files (for BMv2 the device
config is p4c-bm2-ss's JSON).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from finsy.proto import p4i

from innet.controller.errors import ControllerError

P4INFO_NAMES = ("p4info.txtpb", "p4info.txt", "p4info.bin", "p4info.json")


class PipelineError(ControllerError):
    """A pipeline could not be found, read or compiled (names the path and why)."""


@dataclass(frozen=True)
class PipelineConfig:
    """What SetForwardingPipelineConfig sends."""

    name: str
    """Program name (for messages)."""
    p4info: p4i.P4Info
    """The control-plane API."""
    device_config: bytes
    """Target-specific blob: innet's device config JSON or BMv2 JSON."""

    @property
    def cookie(self) -> int:
        """A 64-bit digest of the config, sent as the pipeline cookie."""
        digest = hashlib.sha256(self.p4info.SerializeToString(deterministic=True) + self.device_config)
        return int.from_bytes(digest.digest()[:8], "big") >> 1

    @classmethod
    def from_files(cls, p4info: Path, device_config: Path) -> "PipelineConfig":
        from innet.switch.p4info import format_for_path, parse_p4info

        try:
            info = parse_p4info(p4info.read_bytes(), format_for_path(p4info))
            blob = device_config.read_bytes()
        except OSError as error:
            raise PipelineError(f"pipeline file {str(error.filename)!r}: {error.strerror}") from None
        except Exception as error:  # protobuf text/json parse errors
            raise PipelineError(f"P4Info {str(p4info)!r}: cannot parse ({error})") from None
        name = device_config.name.split(".")[0]
        return cls(name, info, blob)

    @classmethod
    def from_dir(cls, directory: Path) -> "PipelineConfig":
        """innet-p4c (or p4c-bm2-ss) output: one P4Info file and one device config."""
        infos = [directory / n for n in P4INFO_NAMES if (directory / n).is_file()]
        if not infos:
            raise PipelineError(f"pipeline directory {str(directory)!r}: no P4Info "
                                f"(expected one of {', '.join(P4INFO_NAMES)})")
        configs = sorted(directory.glob("*.innet.json")) or sorted(
            p for p in directory.glob("*.json") if p.name not in P4INFO_NAMES)
        if len(configs) != 1:
            found = ", ".join(p.name for p in configs) or "none"
            raise PipelineError(f"pipeline directory {str(directory)!r}: expected exactly one device config "
                                f"(*.innet.json or BMv2 *.json), found {found}")
        return cls.from_files(infos[0], configs[0])

    @classmethod
    def from_p4(cls, source: Path, defines: Mapping[str, str | None] | None = None,
                include_dirs: tuple[Path, ...] = ()) -> "PipelineConfig":
        """Compile ``source`` with innet's front-end (for innet's embedded target)."""
        from innet.switch.device_config import build
        from innet.switch.frontend.errors import FrontendError

        if not source.is_file():
            raise PipelineError(f"P4 program {str(source)!r}: no such file")
        try:
            result = build(source, include_dirs, dict(defines or {}))
        except FrontendError as error:
            raise PipelineError(f"P4 program {str(source)!r} does not compile:\n{error}") from None
        return cls(source.stem, result.p4info, result.config.to_bytes())

    @classmethod
    def load(cls, path: Path | str, defines: Mapping[str, str | None] | None = None) -> "PipelineConfig":
        """A directory (compiled output) or a ``.p4`` source."""
        path = Path(path)
        if path.is_dir():
            return cls.from_dir(path)
        if path.suffix == ".p4":
            return cls.from_p4(path, defines)
        raise PipelineError(f"pipeline {str(path)!r}: give an innet-p4c output directory or a .p4 file")
