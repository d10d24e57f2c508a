"""docker-compose.yml against the Compose Specification's JSON Schema, the schema `docker
compose` v2 validates with (compose v2 is not packaged for Debian bookworm, so it is not run
here; tests/data/compose-spec/README.md says where the schema comes from), raw and with the
variables' defaults substituted the way compose interpolates them; and `docker-compose config`
(v1, Debian's package) where it is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "tests" / "data" / "compose-spec" / "compose-spec.json"
COMPOSE = REPO / "docker-compose.yml"

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed (pip install jsonschema)")
yaml = pytest.importorskip("yaml", reason="PyYAML not installed (pip install pyyaml)")


def _interpolate(value: Any) -> Any:
    """``${NAME:-default}`` -> default, ``${NAME}`` -> "" (nothing set), recursively."""
    if isinstance(value, str):
        return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}", lambda m: m.group(1) or "", value)
    if isinstance(value, dict):
        return {k: _interpolate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v) for v in value]
    return value


def _errors(doc: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_compose_file_is_valid_compose_spec():
    doc = yaml.safe_load(COMPOSE.read_text())
    assert _errors(doc) == []
    assert _errors(_interpolate(doc)) == []
    assert "version" not in doc  # obsolete in the spec; compose v2 warns about it


def test_schema_catches_a_key_compose_does_not_know():
    doc = yaml.safe_load(COMPOSE.read_text())
    doc["services"]["switch"]["udp_ports"] = ["9001"]
    [error] = _errors(doc)
    assert re.fullmatch(r"services/switch: 'udp_ports' does not match any of the regexes: '\^x-'", error), error


def test_compose_v1_reads_it():
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("docker-compose (v1, Debian's docker-compose package) not installed")
    result = subprocess.run([compose, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
