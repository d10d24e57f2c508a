"""Pipeline configs to push: innet-p4c's output directory, a ``.p4`` file compiled on the
fly (by a compiler subprocess, :mod:`innet.controller.compiler`), or explicit P4Info +
device config files (for BMv2 the device config is p4c-bm2-ss's JSON).

Given the switch implementation a config goes to (``switch_impl``: ``innet`` or ``bmv2``),
the compiler, the file taken from a directory holding both compilers' outputs, and the
check before sending follow that switch, never an environment variable or the last
compilation: innet-switch cannot run a BMv2 JSON, nor simple_switch_grpc innet's config.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from finsy.proto import p4i

from innet.controller.compiler import P4Compiler
from innet.controller.errors import PipelineConfigError
from innet.switch.p4rt_codec.device_configs import SWITCH_IMPLS, ConfigKind, config_kind, mismatch
from innet.switch.p4rt_codec.p4info_files import format_for_path, parse_p4info

P4INFO_NAMES = ("p4info.txtpb", "p4info.txt", "p4info.bin", "p4info.json")


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

    @property
    def kind(self) -> ConfigKind:
        """What the device config is (``innet``, ``bmv2``, ``p4`` or ``other``)."""
        return config_kind(self.device_config)

    def check_for(self, switch_impl: str | None) -> "PipelineConfig":
        """This config, or PipelineConfigError when a switch of ``switch_impl`` (``innet``,
        ``bmv2``; None: not known, not checked) cannot run it, said before it is sent."""
        if switch_impl is None:
            return self
        why = mismatch(self.device_config, switch_impl)
        if why is not None:
            raise PipelineConfigError(f"pipeline {self.name!r} for {SWITCH_IMPLS[switch_impl][0]}: {why}")
        return self

    @classmethod
    def from_files(cls, p4info: Path, device_config: Path) -> "PipelineConfig":
        try:
            info = parse_p4info(p4info.read_bytes(), format_for_path(p4info))
            blob = device_config.read_bytes()
        except OSError as error:
            raise PipelineConfigError(f"pipeline file {str(error.filename)!r}: {error.strerror}") from None
        except Exception as error:  # protobuf text/json parse errors
            raise PipelineConfigError(f"P4Info {str(p4info)!r}: cannot parse ({error})") from None
        name = device_config.name.split(".")[0]
        return cls(name, info, blob)

    @classmethod
    def from_dir(cls, directory: Path, switch_impl: str | None = None) -> "PipelineConfig":
        """innet-p4c (or p4c-bm2-ss) output: one P4Info file and one device config. For a
        ``switch_impl`` of ``innet`` the ``*.innet.json``, of ``bmv2`` the other ``*.json``
        (a directory may hold both); None: the ``*.innet.json`` if any, else the JSON."""
        infos = [directory / n for n in P4INFO_NAMES if (directory / n).is_file()]
        if not infos:
            raise PipelineConfigError(f"pipeline directory {str(directory)!r}: no P4Info "
                                      f"(expected one of {', '.join(P4INFO_NAMES)})")
        innet = sorted(directory.glob("*.innet.json"))
        bmv2 = sorted(p for p in directory.glob("*.json") if p.name not in P4INFO_NAMES and p not in innet)
        configs, wanted = {"innet": (innet, "*.innet.json (innet-p4c output)"),
                           "bmv2": (bmv2, "BMv2 *.json (p4c-bm2-ss output)")}.get(
            switch_impl or "", (innet or bmv2, "*.innet.json or BMv2 *.json"))
        if len(configs) != 1:
            found = ", ".join(p.name for p in innet + bmv2) or "none"
            raise PipelineConfigError(f"pipeline directory {str(directory)!r}: expected exactly one device config "
                                      f"{wanted}, found {found}")
        return cls.from_files(infos[0], configs[0]).check_for(switch_impl)

    @classmethod
    def from_p4(cls, source: Path, defines: Mapping[str, str | None] | None = None,
                include_dirs: tuple[Path, ...] = (), compiler: P4Compiler | None = None,
                switch_impl: str | None = None) -> "PipelineConfig":
        """Compile ``source`` with ``compiler`` (default: the one for ``switch_impl``,
        :meth:`P4Compiler.for_switch`; without either, ``INNET_P4C`` or innet-p4c)."""
        if not source.is_file():
            raise PipelineConfigError(f"P4 program {str(source)!r}: no such file")
        if compiler is None:
            compiler = P4Compiler.for_switch(switch_impl) if switch_impl else P4Compiler.from_env()
        with tempfile.TemporaryDirectory(prefix="innet-p4c-") as tmp:
            compiler.compile(source, Path(tmp), include_dirs, defines)
            config = cls.from_dir(Path(tmp))
        return cls(source.stem, config.p4info, config.device_config).check_for(switch_impl)

    @classmethod
    def load(cls, path: Path | str, defines: Mapping[str, str | None] | None = None,
             switch_impl: str | None = None) -> "PipelineConfig":
        """A directory (compiled output) or a ``.p4`` source, for a switch of ``switch_impl``
        (``innet``, ``bmv2``; None: not known)."""
        path = Path(path)
        if path.is_dir():
            return cls.from_dir(path, switch_impl)
        if path.suffix == ".p4":
            return cls.from_p4(path, defines, switch_impl=switch_impl)
        raise PipelineConfigError(f"pipeline {str(path)!r}: give an innet-p4c output directory or a .p4 file")
