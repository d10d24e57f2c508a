"""Results cross the testbed as typed records, not as ``dict[str, Any]``.

A public function or method in ``testbed/`` that takes or returns ``dict[str, Any]``, and a
public class attribute of that type, is an edge where JSON enters or leaves: a record's
``to_json``/``from_json``, or a function that writes, reads or renders a saved document or a
JSON message between processes. Such an edge says so in its docstring (the word "JSON" or
"document"), so a reader knows the dict is a wire or file form and not a result passed on.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTBED = Path(__file__).resolve().parents[2] / "testbed"
EDGE_NAMES = frozenset({"to_json", "from_json", "json_form", "from_json_form"})
UNTYPED = "dict[str, Any]"


def _says_edge(doc: str | None) -> bool:
    return bool(doc) and ("JSON" in doc or "document" in doc)  # type: ignore[operator]


def _attribute_docs(body: list[ast.stmt]) -> dict[int, str]:
    """The string literal right after each annotated attribute (its docstring), by line."""
    docs: dict[int, str] = {}
    for here, after in zip(body, body[1:]):
        if (isinstance(here, ast.AnnAssign) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[here.lineno] = after.value.value
    return docs


def _undocumented_edges(path: Path) -> list[str]:
    found: list[str] = []

    def visit(node: ast.AST, owner: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                if child.name.startswith("_"):
                    continue
                docs = _attribute_docs(child.body)
                for st in child.body:
                    if (isinstance(st, ast.AnnAssign) and UNTYPED in ast.unparse(st.annotation)
                            and not _says_edge(docs.get(st.lineno))):
                        found.append(f"{path.relative_to(TESTBED.parent)}:{st.lineno} "
                                     f"{child.name}.{ast.unparse(st.target)}")
                visit(child, child.name)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                if child.name.startswith("_") or child.name in EDGE_NAMES:
                    continue
                args = child.args
                annotations = [a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs if a.annotation]
                if child.returns is not None:
                    annotations.append(child.returns)
                if any(UNTYPED in ast.unparse(a) for a in annotations) and not _says_edge(ast.get_docstring(child)):
                    name = f"{owner}.{child.name}" if owner else child.name
                    found.append(f"{path.relative_to(TESTBED.parent)}:{child.lineno} {name}")

    visit(ast.parse(path.read_text(), filename=str(path)), None)
    return found


def test_untyped_dicts_cross_the_testbed_only_at_json_edges() -> None:
    modules = sorted(TESTBED.rglob("*.py"))
    assert len(modules) > 50, f"testbed modules not found under {TESTBED}"
    found = [hit for path in modules for hit in _undocumented_edges(path)]
    assert not found, ("dict[str, Any] crosses a module boundary where no JSON edge is documented "
                       "(use a record, or say in the docstring which JSON document it is):\n" + "\n".join(found))
