"""The base of the testbed's result records: a frozen dataclass that knows its JSON form.

Workloads and benchmarks hand each other records, typed until they are written; the saved
documents and their renderers read the JSON that ``to_json`` gives, so a saved file can be
rendered again. A record whose document form differs from its fields (tuples kept as lists,
keys left out or renamed) overrides ``to_json``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


class JsonRecord:
    """A dataclass whose JSON is its fields, nested records included, in field order."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]  # every subclass is a dataclass
