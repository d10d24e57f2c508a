"""A static check that a P4 program uses only constructs known to compile with real p4c
(p4c-bm2-ss 1.2.5, v1model), as listed in docs/p4c-compat.md.

innet's front-end accepts what p4c accepts and a little more leniently in places; the
programs under ``p4/`` must compile **unchanged** with p4c, so they keep to this list:

* preprocessor directives in :data:`DIRECTIVES`; ``#include <...>`` only of p4c's own
  ``core.p4`` and ``v1model.p4`` (never innet's copies by a path), ``#include "..."`` only of
  files that exist relative to the including file;
* annotations in :data:`ANNOTATIONS` (ones p4c's front-end and BMv2 back-end know);
* no ``extern``, ``match_kind`` or ``package`` declarations (those belong to p4c's
  core.p4/v1model.p4: a private extern would not exist on BMv2);
* a main program instantiates ``V1Switch(...) main;``.

Comments and string literals are removed first, so words in them never count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DIRECTIVES = frozenset({"include", "define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif", "error"})
SYSTEM_INCLUDES = frozenset({"core.p4", "v1model.p4"})
ANNOTATIONS = frozenset({"name", "id", "hidden", "controller_header", "defaultonly", "tableonly", "brief",
                         "description", "atomic", "priority", "noWarn", "field_list", "optional", "pure",
                         "noSideEffects", "deprecated", "match", "min_size", "max_group_size"})
FORBIDDEN_DECLARATIONS = ("extern", "match_kind", "package")

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"", re.S)
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)(.*)$", re.M)
_ANNOTATION = re.compile(r"@(\w+)")
_DECL = re.compile(r"^\s*(extern|match_kind|package)\b", re.M)
_MAIN = re.compile(r"\bV1Switch\s*\(.*?\)\s*main\s*;", re.S)


@dataclass(frozen=True)
class Finding:
    """One construct outside the list: where and what."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _strip(text: str) -> str:
    """Comments and strings blanked (newlines kept, so line numbers stay)."""
    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith('"'):
            return s  # include paths are strings; kept, they are read by the directive check
        return re.sub(r"[^\n]", " ", s)
    return _COMMENTS.sub(blank, text)


def check_file(path: Path, main: bool = False) -> list[Finding]:
    """Findings of one file (``main``: it must instantiate ``V1Switch(...) main``)."""
    raw = path.read_text()
    text = _strip(raw)
    out: list[Finding] = []

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    code_only = re.sub(r"\"(?:\\.|[^\"\\])*\"", '""', text)
    for m in _DIRECTIVE.finditer(text):
        name, rest = m.group(1), m.group(2).strip()
        if name not in DIRECTIVES:
            out.append(Finding(path, line_of(m.start()), f"preprocessor directive #{name} is not in the p4c list"))
        elif name == "include":
            if rest.startswith("<"):
                target = rest[1:rest.find(">")]
                if target not in SYSTEM_INCLUDES:
                    out.append(Finding(path, line_of(m.start()), f"#include <{target}>: only <core.p4> and "
                                                                 "<v1model.p4> come with p4c"))
            elif rest.startswith('"'):
                target = rest[1:rest.find('"', 1)]
                if not (path.parent / target).is_file():
                    out.append(Finding(path, line_of(m.start()), f'#include "{target}": no such file beside '
                                                                 f"{path.name}"))
                elif Path(target).name in SYSTEM_INCLUDES:
                    out.append(Finding(path, line_of(m.start()), f'#include "{target}": use p4c\'s '
                                                                 f"<{Path(target).name}>, not a copy"))
    for m in _ANNOTATION.finditer(code_only):
        if m.group(1) not in ANNOTATIONS:
            out.append(Finding(path, line_of(m.start()), f"annotation @{m.group(1)} is not in the p4c list"))
    for m in _DECL.finditer(code_only):
        out.append(Finding(path, line_of(m.start()), f"{m.group(1)} declaration: private architecture "
                                                     "constructs do not exist on BMv2"))
    if main and not _MAIN.search(code_only):
        out.append(Finding(path, 1, "no `V1Switch(...) main;`: a main program must use p4c's v1model package"))
    return out


def check_tree(root: Path) -> list[Finding]:
    """Every ``.p4`` under ``root`` except ``include/`` (innet's stand-ins for p4c's headers);
    files that mention ``main`` at top level are checked as main programs."""
    findings: list[Finding] = []
    for path in sorted(root.rglob("*.p4")):
        if "include" in path.relative_to(root).parts:
            continue
        is_main = re.search(r"\)\s*main\s*;", _strip(path.read_text())) is not None
        findings += check_file(path, main=is_main)
    return findings
