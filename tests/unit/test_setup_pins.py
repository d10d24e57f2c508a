"""constraints.txt pins every Python dependency setup.sh installs, and the venv has those versions.

Two setups on different days must give the same versions: pyproject.toml keeps the
library's ranges, constraints.txt the exact versions setup.sh installs with ``-c``."""

from __future__ import annotations

import re
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[_norm(name)] = version
    return pins


def test_every_declared_dependency_is_pinned() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"]) + [d for group in project["optional-dependencies"].values()
                                                for d in group]
    names = {_norm(re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0]) for d in declared}
    assert sorted(names - set(_pins())) == []


def test_venv_has_the_pinned_versions() -> None:
    """Packages installed in this environment's own prefix are at their pinned versions, and
    none outside constraints.txt slipped in (torch is pinned in setup.sh)."""
    pins = _pins()
    wrong, unpinned = [], []
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    for dist in metadata.distributions():
        location = Path(str(dist.locate_file(""))).resolve()
        if location != site:
            continue  # Debian's site-packages (Mininet), or packages vendored inside another (setuptools/_vendor)
        name = _norm(dist.metadata["Name"])
        if name in ("innet", "torch"):
            continue
        if name not in pins:
            unpinned.append(name)
        elif dist.version != pins[name]:
            wrong.append(f"{name} {dist.version} (pinned {pins[name]})")
    assert wrong == [] and unpinned == []
