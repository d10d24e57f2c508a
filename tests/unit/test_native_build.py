"""``innet.switch.native.build``: compile C with the system compiler, cache by content, load with cffi."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.switch.native import build

pytestmark = pytest.mark.skipif(build.find_compiler() is None, reason="needs a C compiler (cc/gcc)")

SRC = "int add(int a, int b) { return a + b; }\n"


def test_load_library_compiles_and_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    ffi, lib = build.load_library(SRC, "int add(int a, int b);", name="t_add")
    assert lib.add(2, 40) == 42
    assert len(list(tmp_path.glob("t_add-*.so"))) == 1


def test_cache_hit_does_not_rebuild(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    first = build.build_shared_object(SRC, name="t_cache")
    mtime = first.stat().st_mtime_ns
    again = build.build_shared_object(SRC, name="t_cache")
    assert again == first and again.stat().st_mtime_ns == mtime
    other = build.build_shared_object(SRC, name="t_cache", flags=build.DEFAULT_FLAGS + ("-DX=1",))
    assert other != first


def test_compiler_error_is_one_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    with pytest.raises(build.NativeBuildError, match="failed on generated t_bad.c: .*error"):
        build.build_shared_object("int f( { }", name="t_bad")


def test_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(build.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert build.cache_dir() == tmp_path / "innet" / "native"
