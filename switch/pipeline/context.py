"""What the code generators (expressions, parser, program objects) need of the program
compiler that drives them: a protocol, so that they depend on this small surface and the
compiler (which builds them) is the only module that knows all of them."""

from __future__ import annotations

from typing import Any, Protocol

from ..frontend import ir
from .layout import Layout


class CompileContext(Protocol):
    """The slice of ``ProgramCompiler`` that ``GenContext``, ``ExprGen``, ``ParserGen`` and
    ``ProgramObjects`` use."""

    layout: Layout
    ns: dict[str, Any]
    sources: list[str]
    clock: Any
    objects: Any
    """The program's ``ProgramObjects`` (tables, externs, profiles)."""
    parsers: Any
    """The program's ``ParserGen``."""
    slot_clone: int
    slot_resubmit: int
    slot_recirculate: int
    slot_truncate: int
    slot_payload: int
    slot_entry: int
    errors: dict[str, int]
    """Error name -> number (BMv2's numbering)."""
    packet_code: bool
    """False: the control plane only (registers keep no cells of their own: the executor's)."""
    state_cells: bool
    """Registers get their cells (False with ``packet_code`` False, and for a check)."""

    def ref(self, obj: Any, hint: str) -> str: ...

    def error_number(self, name: str, node: Any = None) -> int: ...

    def sm_slot(self, name: str) -> int: ...

    @staticmethod
    def py_name(prefix: str, p4_name: str) -> str: ...

    def now_slot(self) -> int: ...

    def oob_scratch(self, elem: ir.Type) -> int: ...

    def field_list(self, index: int) -> tuple[int, ...]: ...

    def codegen(self, kind: str, locals_: dict[int, str] | None = None) -> Any: ...

    def define(self, header: str, g: Any) -> None: ...

    def action_fn(self, a: ir.Action) -> str: ...

    def function_fn(self, f: ir.Function) -> str: ...

    def function_ret(self, f: ir.Function) -> int: ...

    def control_fn(self, c: ir.Control) -> str: ...
