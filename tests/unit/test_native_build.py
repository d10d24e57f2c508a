"""innet.host.agent.native.build: compile once per content, load with cffi, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet import native_build as build

SOURCE = "int innet_add(int a, int b) { return a + b; }\n"


@pytest.fixture(autouse=True)
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    try:
        build.find_compiler()
    except build.NativeBuildError as error:
        pytest.skip(f"needs a C compiler: {error}")
    return tmp_path / "innet" / "native"


def test_shared_object_is_cached_by_content(cache: Path) -> None:
    first = build.build_shared("unit", SOURCE)
    assert first.parent == cache and first.name.startswith("unit-") and first.suffix == ".so"
    stamp = first.stat().st_mtime_ns
    assert build.build_shared("unit", SOURCE) == first and first.stat().st_mtime_ns == stamp
    other_source = build.build_shared("unit", SOURCE + "\n")
    other_flags = build.build_shared("unit", SOURCE, ("-O1", "-shared", "-fPIC"))
    assert len({first, other_source, other_flags}) == 3
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temporary left


def test_loaded_library_is_callable() -> None:
    lib = build.load_library("unit-load", SOURCE, "int innet_add(int a, int b);")
    assert lib.lib.innet_add(40, 2) == 42


def test_compile_error_is_one_line_naming_the_unit() -> None:
    with pytest.raises(build.NativeBuildError, match=r"^native build of 'broken': \w+ failed: .*error") as info:
        build.build_shared("broken", "int f( {\n")
    assert "\n" not in str(info.value) and "error" in info.value.details


def test_executable_runs(tmp_path: Path) -> None:
    import subprocess

    exe = build.build_executable("hello", '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    assert subprocess.run([str(exe)], capture_output=True, text=True, timeout=10).stdout == "hi\n"
