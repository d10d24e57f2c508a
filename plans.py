"""Plans: the frozen dataclasses a parent process hands to each worker process as one JSON
argument (``python -m MODULE '<JSON>'``), converted both ways in one place.

JSON has lists where plans have tuples, and no dataclasses or paths; :func:`load` rebuilds
them from the class's type hints, so a plan class declares its fields and nothing else. A
field's class whose JSON is not its fields (the agent transports: a ``kind`` and endpoints as
lists) says so with ``json_form()`` and a ``from_json_form(data)`` class method.
A worker's ``main`` is :func:`worker_main`: one usage line and exit 2 on a wrong argument
count or a plan that does not parse, naming the plan class and what was wrong.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")


class PlanJsonError(ValueError):
    """A plan's JSON that does not fit its class (names the field and the value)."""


class JsonPlan:
    """Mixin of plan dataclasses: ``to_json()`` and ``from_json(text)`` through this module."""

    def to_json(self) -> str:
        return dump(self)

    @classmethod
    def from_json(cls: type[T], text: str) -> T:
        return load(cls, text)


def dump(plan: Any) -> str:
    """The plan as JSON text (tuples as lists, paths as strings)."""
    return json.dumps(_plain(plan))


def load(cls: type[T], text: str) -> T:
    """The ``cls`` plan of JSON ``text``; :class:`PlanJsonError` naming what does not fit."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanJsonError(f"{cls.__name__}: not JSON: {error}") from None
    return typing.cast(T, _build(cls, data, cls.__name__))


def worker_main(cls: type[T], run: Callable[[T], int], argv: Sequence[str] | None, module: str) -> int:
    """The entry point of a worker process: its one argument parsed as a ``cls`` plan, then
    ``run(plan)``; usage and plan errors are one line on stderr and exit 2."""
    if module == "__main__":  # run as ``python -m``: name the module as the user typed it
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        module = spec.name if spec is not None else module
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m {module} '<{cls.__name__} JSON>'", file=sys.stderr)
        return 2
    try:
        plan = load(cls, args[0])
    except PlanJsonError as error:
        print(f"{module}: bad plan: {error}", file=sys.stderr)
        return 2
    return run(plan)


def _plain(value: Any) -> Any:
    json_form = getattr(value, "json_form", None)
    if callable(json_form) and not isinstance(value, type):
        return _plain(json_form())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def _build(hint: Any, value: Any, where: str) -> Any:
    """``value`` (parsed JSON) as the type ``hint``."""
    if hint is Any or hint is object:
        return value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        last: PlanJsonError | None = None
        for option in (a for a in args if a is not type(None)):
            try:
                return _build(option, value, where)
            except PlanJsonError as error:
                last = error
        raise last or PlanJsonError(f"{where}: {value!r} fits none of {hint}")
    if isinstance(hint, type) and callable(getattr(hint, "from_json_form", None)):
        try:
            return hint.from_json_form(value)  # type: ignore[attr-defined]
        except (ValueError, TypeError) as error:
            raise PlanJsonError(f"{where}: {error}") from None
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise PlanJsonError(f"{where}: expected an object for {hint.__name__}, got {value!r}")
        hints = typing.get_type_hints(hint)
        names = {f.name for f in dataclasses.fields(hint) if f.init}
        unknown = sorted(set(value) - names)
        if unknown:
            raise PlanJsonError(f"{where}: {hint.__name__} has no field {unknown[0]!r}")
        kwargs = {k: _build(hints[k], v, f"{where}.{k}") for k, v in value.items()}
        try:
            return hint(**kwargs)
        except (TypeError, ValueError) as error:  # a missing field, or the class's own check of a value
            raise PlanJsonError(f"{where}: {error}") from None
    if origin is tuple:
        if not isinstance(value, list):
            raise PlanJsonError(f"{where}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise PlanJsonError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(_build(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value))) if args \
            else tuple(value)
    if origin is list:
        if not isinstance(value, list):
            raise PlanJsonError(f"{where}: expected a list, got {value!r}")
        return [_build(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)] if args else value
    if origin is dict:
        if not isinstance(value, dict):
            raise PlanJsonError(f"{where}: expected an object, got {value!r}")
        return {k: _build(args[1], v, f"{where}.{k}") for k, v in value.items()} if args else value
    if hint is Path:
        if not isinstance(value, str):
            raise PlanJsonError(f"{where}: expected a path string, got {value!r}")
        return Path(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and not isinstance(value, hint):
        raise PlanJsonError(f"{where}: expected {hint.__name__}, got {value!r}")
    return value
