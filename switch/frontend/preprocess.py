"""Run the C preprocessor over a P4 program, as p4c does, and map positions back.

Why: P4 programs use ``#include``, ``#define`` and ``#if`` exactly like C, and p4c runs
the system ``cpp``.  Running the same ``cpp`` gives identical results (macro semantics,
include search).  cpp's ``# <line> "<file>"`` markers are removed from the text (the
lines are blanked so numbering is kept) and recorded in a line map, so every token
position can be reported as the original ``file:line:col``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .errors import FrontendError, P4Error, PreprocessError
from .ir import Loc

#: Directory holding innet's core.p4 and v1model.p4; always on the include path.
P4_INCLUDE_DIR = Path(__file__).resolve().parents[2] / "p4" / "include"

_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')
_CPP_DIAG = re.compile(r"^(.+?):(\d+):(\d+): (?:fatal )?error: (.*)$", re.M)
#: String literals and comments, scanned left to right so that ``//`` inside a string is no comment.
_OPAQUE = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)
#: The code points ``surrogateescape`` decodes undecodable bytes 0x80..0xff to.
_BAD_BYTE = re.compile("[\udc80-\udcff]")


@dataclass
class Preprocessed:
    """cpp output with marker lines blanked, and the map back to original files."""

    text: str
    #: line_map[i] = (file, line) of output line i+1
    line_map: list[tuple[str, int]]
    #: original text of in-memory sources (``compile_source``), by file name
    sources: dict[str, str] = field(default_factory=dict)
    _lines_cache: dict[str, list[str]] = field(default_factory=dict)

    def loc(self, line: int, col: int) -> Loc:
        """Original location of output position (1-based line and column)."""
        if 1 <= line <= len(self.line_map):
            f, ln = self.line_map[line - 1]
            return Loc(f, ln, col)
        return Loc(self.line_map[-1][0] if self.line_map else "<unknown>", line, col)

    def files(self) -> tuple[str, ...]:
        """Every original file that contributed lines, in first-seen order."""
        return tuple(dict.fromkeys(f for f, _ in self.line_map))

    def source_line(self, loc: Loc) -> str | None:
        """The original source text of ``loc.line`` (for caret display)."""
        lines = self._lines_cache.get(loc.file)
        if lines is None:
            text = self.sources.get(loc.file)
            if text is None:
                try:
                    text = Path(loc.file).read_text(errors="replace")
                except OSError:
                    return None
            lines = text.splitlines()
            self._lines_cache[loc.file] = lines
        if 1 <= loc.line <= len(lines):
            return lines[loc.line - 1]
        return None


def _cpp_command(include_dirs: tuple[str | Path, ...], defines: dict[str, str | None] | None,
                 ) -> list[str]:
    cpp = shutil.which("cpp")
    if cpp is None:
        raise FrontendError("the C preprocessor 'cpp' was not found on PATH; "
                            "install it (Debian: apt-get install cpp)")
    cmd = [cpp, "-C", "-undef", "-nostdinc", "-x", "assembler-with-cpp"]
    for d in (*include_dirs, P4_INCLUDE_DIR):
        cmd.append(f"-I{d}")
    for name, value in (defines or {}).items():
        cmd.append(f"-D{name}" if value is None else f"-D{name}={value}")
    return cmd


def _run(cmd: list[str], stdin: str | None, display_name: str) -> str:
    """cpp's output; bytes that are not UTF-8 come back as surrogate escapes (see _check_utf8)."""
    data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
    try:
        proc = subprocess.run(cmd, input=data, capture_output=True, check=False)
    except OSError as exc:
        raise FrontendError(f"cannot run the C preprocessor {cmd[0]!r}: {exc}") from None
    if proc.returncode != 0:
        diag = proc.stderr.decode("utf-8", "replace").replace("<stdin>", display_name).strip()
        m = _CPP_DIAG.search(diag)
        loc = Loc(m.group(1), int(m.group(2)), int(m.group(3))) if m else Loc(display_name, 0, 0)
        msg = f"preprocessing failed: {m.group(4) if m else diag}"
        err = PreprocessError(loc, msg)
        err.args = (f"{err.render()}\ncpp said:\n{diag}",)
        err.cpp_output = diag  # type: ignore[attr-defined]
        raise err
    return proc.stdout.decode("utf-8", "surrogateescape")


def _check_utf8(pp: Preprocessed) -> Preprocessed:
    """Refuse bytes that are not UTF-8 outside comments, with their location.

    Why comments are exempt: p4c's lexer is byte oriented and skips comments whatever
    their encoding, so Latin-1 in a comment (an old copyright line) compiles there; the
    bytes become U+FFFD here, since the device config and P4Info carry the text as
    UTF-8. Anywhere else (identifiers, string literals) such a byte is an error."""
    if not _BAD_BYTE.search(pp.text):
        return pp

    def blank_comment(m: re.Match[str]) -> str:
        text = m.group()
        return text if text.startswith('"') else _BAD_BYTE.sub("\ufffd", text)

    text = _OPAQUE.sub(blank_comment, pp.text)
    bad = _BAD_BYTE.search(text)
    if bad is None:
        return Preprocessed(text, pp.line_map, pp.sources)
    line = text.count("\n", 0, bad.start()) + 1
    start = text.rfind("\n", 0, bad.start()) + 1
    col = bad.start() - start + 1
    byte = ord(bad.group()) - 0xDC00
    offset = len(pp.text[start:bad.start()].encode("utf-8", "surrogateescape")) + 1  # same positions as text
    loc = pp.loc(line, col)
    raise P4Error(loc, f"byte 0x{byte:02x} is not valid UTF-8 (byte {offset} of the line)", pp.source_line(loc))


def _split_markers(out: str, stdin_name: str | None) -> tuple[str, list[tuple[str, int]]]:
    lines = out.split("\n")
    line_map: list[tuple[str, int]] = []
    cur_file, cur_line = stdin_name or "<unknown>", 1
    for i, text in enumerate(lines):
        m = _MARKER.match(text) if text.startswith("#") else None
        if m:
            cur_line = int(m.group(1))
            cur_file = m.group(2).encode().decode("unicode_escape")
            if stdin_name is not None and cur_file == "<stdin>":
                cur_file = stdin_name
            lines[i] = ""
            line_map.append((cur_file, 0))
            continue
        line_map.append((cur_file, cur_line))
        cur_line += 1
    return "\n".join(lines), line_map


def preprocess_file(path: str | Path, include_dirs: tuple[str | Path, ...] = (),
                    defines: dict[str, str | None] | None = None) -> Preprocessed:
    """Preprocess a file on disk; ``#include "x"`` is searched next to it first."""
    p = Path(path)
    if p.is_dir():
        raise FrontendError(f"P4 source file {str(p)!r} is a directory")
    if not p.is_file():
        raise FrontendError(f"P4 source file {str(p)!r} does not exist")
    cmd = _cpp_command(include_dirs, defines) + [str(p)]
    text, line_map = _split_markers(_run(cmd, None, str(p)), None)
    return _check_utf8(Preprocessed(text, line_map))


def preprocess_source(source: str, filename: str = "<string>",
                      include_dirs: tuple[str | Path, ...] = (),
                      defines: dict[str, str | None] | None = None) -> Preprocessed:
    """Preprocess in-memory text; positions are reported against ``filename``."""
    cmd = _cpp_command(include_dirs, defines) + ["-"]
    text, line_map = _split_markers(_run(cmd, source, filename), filename)
    return _check_utf8(Preprocessed(text, line_map, sources={filename: source}))
