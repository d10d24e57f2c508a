"""Range-check hoisting over generated lines (switch/pipeline/guards.py): runs of marked
register accesses share one check, the out-of-range path keeps every check, and the
result behaves like the unhoisted code for in-range and out-of-range indexes."""

from __future__ import annotations

from innet.switch.pipeline import guards
from innet.switch.pipeline.guards import hoist, mark


def read(dst: str, reg: str, i: str, n: int) -> str:
    return mark(f"    {dst} = {reg}[{i}] if {i} < {n} else 0", i, n)


def write(reg: str, i: str, n: int, v: str) -> str:
    return mark(f"    if {i} < {n}: {reg}[{i}] = {v}", i, n)


def run(lines: list[str], **env: object) -> dict[str, object]:
    src = "def f(A, B, i, j):\n    x = y = 0\n" + "\n".join(lines) + "\n    return x, y\n"
    ns: dict[str, object] = {}
    exec(compile(src, "<t>", "exec"), ns)  # noqa: S102 - test input
    return {"r": ns["f"](*env.values()), **env}


def test_run_is_hoisted_and_equivalent() -> None:
    lines = [read("x", "A", "i", 4), "    x = x + 1", write("A", "i", 4, "x"), read("y", "B", "i", 4),
             write("B", "i", 4, "y + x")]
    out = hoist(lines)
    assert out[0] == "    if i < 4:" and "    else:" in out
    assert sum(" < 4" in line for line in out) == 1 + 4  # one hoisted check, the slow copy keeps its own
    assert not any("#G" in line for line in out)
    for i in (0, 3, 4, 100):
        a1, b1 = [1, 2, 3, 4], [5, 6, 7, 8]
        a2, b2 = list(a1), list(b1)
        assert run(lines, A=a1, B=b1, i=i, j=0)["r"] == run(out, A=a2, B=b2, i=i, j=0)["r"]
        assert (a1, b1) == (a2, b2)


def test_short_runs_and_other_indexes_keep_their_checks() -> None:
    lines = [read("x", "A", "i", 4), write("A", "i", 4, "x")]
    assert hoist(lines) == ["    x = A[i] if i < 4 else 0", "    if i < 4: A[i] = x"]
    mixed = [read("x", "A", "i", 4), read("y", "B", "j", 4), write("A", "i", 4, "y"), write("A", "i", 4, "x"),
             write("B", "j", 4, "x")]
    out = hoist(mixed)
    assert out[0] == "    if i < 4:"
    assert "        y = B[j] if j < 4 else 0" in out  # a different index stays checked in the fast copy


def test_run_stops_at_compound_statements_and_index_assignments() -> None:
    lines = [read("x", "A", "i", 4), read("y", "A", "i", 4), "    if x:", "        x = 1",
             read("x", "A", "i", 4), "    i = 7", read("y", "A", "i", 4), read("x", "A", "i", 4),
             read("x", "A", "i", 4)]
    out = hoist(lines)
    assert out[:2] == ["    x = A[i] if i < 4 else 0", "    y = A[i] if i < 4 else 0"]
    assert "    i = 7" in out
    assert out[out.index("    i = 7") + 1] == "    if i < 4:"


def test_unrecognised_marked_line_is_an_error() -> None:
    import pytest

    with pytest.raises(ValueError, match="range check"):
        guards.hoist([mark("    x = A[i]", "i", 4)] * 3)


def test_generated_source_is_dumped_on_request(tmp_path: object, monkeypatch: object) -> None:
    """INNET_PIPELINE_DUMP=<dir>: the generated module is written there and compiled under
    that file name (the agg64 example's register runs show the hoisted checks)."""
    from pathlib import Path

    from innet.switch.pipeline import Pipeline

    assert isinstance(tmp_path, Path)
    monkeypatch.setenv("INNET_PIPELINE_DUMP", str(tmp_path))  # type: ignore[attr-defined]
    example = Path(__file__).resolve().parents[2] / "p4" / "examples" / "agg64.p4"
    pl = Pipeline.from_file(example)
    files = list(tmp_path.glob("agg64-*.py"))
    assert len(files) == 1 and files[0].read_text() == pl.source
    assert pl.compiled.ingress.__code__.co_filename == str(files[0])
    assert "#G" not in pl.source
