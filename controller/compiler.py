"""The one seam between the controller and a P4 compiler.

The controller must drive real BMv2 as well as innet's embedded target, so it never
links a compiler in: a ``.p4`` file is compiled by running one as a subprocess into a
temporary directory, from which :meth:`PipelineConfig.from_dir` loads the device config
and the P4Info. By default that is ``innet-p4c`` (through this interpreter, so no PATH
is needed); ``INNET_P4C`` (or an explicit :class:`P4Compiler`) names another command,
e.g. ``p4c-bm2-ss`` for BMv2, which is called with p4c's own flags
(``-o prog.json --p4runtime-files p4info.txtpb``). When the switch the program goes to is
known, :meth:`P4Compiler.for_switch` picks the compiler by it: a run with both innet-switch
and simple_switch_grpc (``INNET_P4C`` naming p4c-bm2-ss) still gives innet-switch
innet-p4c's config.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from innet.controller.errors import PipelineConfigError

ENV_VAR = "INNET_P4C"
"""Environment variable naming the compiler command (split like a shell would)."""

DEFAULT_COMMAND = (sys.executable, "-m", "innet.switch.cli.p4c")
"""``innet-p4c`` run by the interpreter the controller runs in."""

TIMEOUT_S = 300.0
"""Longest a compile may take before it counts as failed."""


@dataclass(frozen=True)
class P4Compiler:
    """A compiler command and how to call it."""

    command: tuple[str, ...] = field(default=DEFAULT_COMMAND)
    """argv prefix; the source, output and -I/-D flags are appended."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "P4Compiler":
        """``INNET_P4C`` when set (and not blank), else innet-p4c."""
        text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
        return cls(tuple(shlex.split(text))) if text else cls()

    @classmethod
    def for_switch(cls, switch_impl: str, environ: Mapping[str, str] | None = None) -> "P4Compiler":
        """The compiler whose output a switch of ``switch_impl`` runs: for ``innet``,
        ``INNET_P4C`` unless it names p4c-bm2-ss (which then means the BMv2 switches of the
        same run, as in :mod:`innet.testbed.backends.bmv2`), else innet-p4c; for ``bmv2``,
        ``INNET_P4C`` when it names p4c-bm2-ss, else ``p4c-bm2-ss`` from PATH."""
        configured = cls.from_env(environ)
        if switch_impl == "innet":
            return cls() if configured.is_bmv2 else configured
        if switch_impl == "bmv2":
            return configured if configured.is_bmv2 else cls(("p4c-bm2-ss",))
        raise PipelineConfigError(f"switch implementation {switch_impl!r}: expected innet or bmv2")

    @property
    def is_bmv2(self) -> bool:
        """p4c-bm2-ss takes ``-o FILE`` and ``--p4runtime-files``; innet-p4c ``-o DIR``."""
        return Path(self.command[0]).name.startswith("p4c-bm2")

    def argv(self, source: Path, out_dir: Path, include_dirs: tuple[Path, ...] = (),
             defines: Mapping[str, str | None] | None = None) -> list[str]:
        """The full command line compiling ``source`` into ``out_dir``."""
        flags = [f"-I{d}" for d in include_dirs]
        flags += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
        if self.is_bmv2:
            return [*self.command, "--p4v", "16", "-o", str(out_dir / f"{source.stem}.json"),
                    "--p4runtime-files", str(out_dir / "p4info.txtpb"), *flags, str(source)]
        return [*self.command, str(source), "-o", str(out_dir), *flags]

    def compile(self, source: Path, out_dir: Path, include_dirs: tuple[Path, ...] = (),
                defines: Mapping[str, str | None] | None = None) -> None:
        """Compile ``source`` into ``out_dir``; PipelineConfigError with the compiler's
        first located error line when it fails."""
        argv = self.argv(source, out_dir, include_dirs, defines)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
        except FileNotFoundError:
            raise PipelineConfigError(f"P4 compiler {self.command[0]!r} not found "
                                      f"(set {ENV_VAR} to a compiler command)") from None
        except subprocess.TimeoutExpired:
            raise PipelineConfigError(f"P4 program {str(source)!r}: {self.command[0]!r} did not finish "
                                      f"within {TIMEOUT_S:.0f} s") from None
        if proc.returncode != 0:
            raise PipelineConfigError(f"P4 program {str(source)!r} does not compile: "
                                      f"{first_error(proc.stderr or proc.stdout, proc.returncode)}")


def first_error(output: str, returncode: int) -> str:
    """The line of a compiler's output that says what is wrong: the first ``error:`` line
    (p4c and innet-p4c both locate it as ``file:line:col: error: ...``), else the last
    line, else the exit status."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[-1] if lines else f"compiler exited with status {returncode}"
