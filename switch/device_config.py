"""The device config ``innet-p4c`` writes and the embedded switch loads.

Format (``innet-device-config/1``): UTF-8 JSON with the keys

``format``         the literal ``"innet-device-config/1"``
``program``        the program name (source file stem)
``source``         the *preprocessed* program as one self-contained P4 file: every
                   ``#include`` and macro already expanded, with ``# <line> "<file>"``
                   markers so positions still name the original files
``p4info_sha256``  hex SHA-256 of the binary P4Info built at compile time

Why source and not a serialised IR: the IR is a graph of Python objects with no stable
serialisation, while re-running the front-end on one preprocessed file is cheap (no
include search, no defines to pass again) and keeps the front-end the single source of
truth.  The P4Info digest lets the switch check that its front-end reproduces exactly
the control-plane API the controller was given (same ids), and reject the config loudly
otherwise.  A BMv2 target would get BMv2 JSON instead; this blob is for innet's target.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from innet.switch.frontend import ir
from innet.switch.frontend.errors import FrontendError

if TYPE_CHECKING:
    from finsy.proto import p4i

    from innet.switch.frontend.preprocess import Preprocessed

FORMAT = "innet-device-config/1"

#: Name under which the single-file source is compiled.  Every line carries a marker
#: naming its original file, so this name only keeps error caret lines from being looked
#: up in the single-file text instead of the original files.
_PSEUDO_FILE = "<device config {}>"


class DeviceConfigError(ValueError):
    """Bytes that are not a usable innet device config (says why)."""


@dataclass(frozen=True)
class DeviceConfig:
    """An innet device config; see the module docstring for the fields."""

    program: str
    """Program name (the source file stem)."""
    source: str
    """Preprocessed single-file P4 source with line markers."""
    p4info_sha256: str
    """Hex SHA-256 of the serialized P4Info the compiler produced."""

    def to_bytes(self) -> bytes:
        doc = {"format": FORMAT, "program": self.program, "source": self.source, "p4info_sha256": self.p4info_sha256}
        return json.dumps(doc, indent=1, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> "DeviceConfig":
        """Parse a device config; DeviceConfigError tells what is wrong with ``data``."""
        head = data[:40]
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DeviceConfigError(
                f"not an innet device config (expected JSON with format {FORMAT!r}; "
                f"starts with {head!r}): {exc}"
            ) from None
        if not isinstance(doc, dict):
            raise DeviceConfigError(f"not an innet device config: top-level JSON is a {type(doc).__name__}, not an object")
        fmt = doc.get("format")
        if fmt != FORMAT:
            raise DeviceConfigError(f"unsupported device config format {fmt!r}; this switch reads {FORMAT!r}")
        fields: dict[str, str] = {}
        for key in ("program", "source", "p4info_sha256"):
            value = doc.get(key)
            if not isinstance(value, str):
                raise DeviceConfigError(f"device config field {key!r} must be a string, got {type(value).__name__}")
            fields[key] = value
        return cls(**fields)


def p4info_digest(info: p4i.P4Info) -> str:
    """The digest stored in a device config (over deterministic binary serialization)."""
    return hashlib.sha256(info.SerializeToString(deterministic=True)).hexdigest()


def single_file_source(text: str, line_map: list[tuple[str, int]]) -> str:
    """Preprocessed text (marker lines blanked) plus its line map, back into one file with
    ``# <line> "<file>"`` markers wherever the origin does not simply continue."""
    out: list[str] = []
    expected: tuple[str, int] | None = None
    for line, origin in zip(text.split("\n"), line_map):
        if origin[1] == 0:  # a blanked marker line
            continue
        if origin != expected:
            out.append(f"# {origin[1]} {json.dumps(origin[0], ensure_ascii=False)}")
        out.append(line)
        expected = (origin[0], origin[1] + 1)
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Build:
    """Everything one compilation produces."""

    config: DeviceConfig
    program: ir.Program
    p4info: p4i.P4Info


def build(path: str | Path, include_dirs: tuple[str | Path, ...] = (),
          defines: dict[str, str | None] | None = None) -> Build:
    """Compile ``path`` (front-end errors propagate as ``FrontendError``) and package it.
    The result is cached by the preprocessed source (``innet.switch.startcache``): the
    same program built again, by ``innet-p4c`` or a switch start, skips the front-end."""
    from innet.switch import frontend
    from innet.switch.frontend.preprocess import preprocess_file

    from innet.switch import startcache

    src = Path(path)
    pp = preprocess_file(src, include_dirs, defines)
    source = single_file_source(pp.text, pp.line_map)
    filename = _PSEUDO_FILE.format(src.stem)
    key = startcache.key("frontend", filename, source)
    cached = startcache.load("frontend", key)
    if cached is not None:  # compiled, checked and described before: same source, same innet
        program, info_bytes = cached
        from finsy.proto import p4i

        info = p4i.P4Info.FromString(info_bytes)
        replay_warnings(program.warnings)
        return Build(DeviceConfig(src.stem, source, p4info_digest(info)), program, info)
    with startcache.no_gc():  # ~1M objects that all live until the end: no collections
        program = frontend.compile_source(source, filename=filename)
        if program.main is None:
            raise FrontendError(f"{src}: error: could not locate the top-level block: the program has no "
                                "package instance named 'main' (a v1model program ends with 'V1Switch(...) main;')")
        _check_executable(program, pp)
        # imported here, after the front-end's peak: P4Info brings finsy (~20 MB, 0.4 s)
        from innet.switch.p4info import build_p4info

        info = build_p4info(program)
        from innet.switch.pipeline.compiler import remember_uses

        remember_uses(program)
    program.cache_key = key
    startcache.store("frontend", key, (program, info.SerializeToString(deterministic=True)))
    return Build(DeviceConfig(src.stem, source, p4info_digest(info)), program, info)


FRONTEND_LOGGER = "innet.switch.frontend"
"""The logger the front-end gives its warnings on (``file:line:col: warning: ...``)."""


def replay_warnings(warnings: tuple[str, ...]) -> None:
    """Give the warnings of a cached build (``Program.warnings``) again, on the logger the
    front-end gave them on: a user who compiles a program twice sees the same diagnostics
    both times, though the second build skips the front-end."""
    log = logging.getLogger(FRONTEND_LOGGER)
    for message in warnings:
        log.warning("%s", message)


def _check_executable(program: ir.Program, pp: "Preprocessed") -> None:
    """Generate the executor's code once, so that whatever the switch would refuse when it
    loads the config (a header that is not a whole number of bytes, an unsupported
    construct) is refused here, located in the source, as p4c-bm2-ss refuses it.  The
    generated module is not compiled by Python (``ProgramCompiler.check``)."""
    from innet.switch.frontend.errors import UnsupportedError as FrontendUnsupported
    from innet.switch.pipeline.compiler import ProgramCompiler
    from innet.switch.pipeline.errors import UnsupportedError

    try:
        ProgramCompiler(program).check()
    except UnsupportedError as exc:
        loc = exc.loc
        if isinstance(loc, ir.Loc):
            raise FrontendUnsupported(loc, f"unsupported by innet's executor: {exc.what}", pp.source_line(loc)) from None
        raise FrontendError(f"{pp.line_map[0][0] if pp.line_map else '<source>'}: error: unsupported by innet's "
                            f"executor: {exc.what}") from None


def load_program(config: DeviceConfig | bytes, verify: bool = True) -> ir.Program:
    """Re-compile a device config's source.  With ``verify`` the P4Info this front-end
    derives must have the digest recorded at compile time (else the controller's ids
    would not match this switch); a mismatch raises DeviceConfigError."""
    from innet.switch import frontend
    from innet.switch.p4info import build_p4info

    cfg = DeviceConfig.from_bytes(config) if isinstance(config, bytes) else config
    program = frontend.compile_source(cfg.source, filename=_PSEUDO_FILE.format(cfg.program))
    if verify:
        digest = p4info_digest(build_p4info(program))
        if digest != cfg.p4info_sha256:
            raise DeviceConfigError(
                f"device config for {cfg.program!r}: the P4Info rebuilt on load (sha256 {digest[:12]}...) "
                f"differs from the one recorded at compile time ({cfg.p4info_sha256[:12]}...); "
                "recompile the program with this version of innet-p4c"
            )
    return program
