"""Action data from the control plane, checked against an action's parameters: one rule for
direct table entries and action-profile members."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import ControlPlaneError


def bind_params(action: str, spec: Sequence[tuple[str, int]],
                params: Iterable[int] | dict[str, int]) -> tuple[int, ...]:
    """Action data given by position or by name, checked against ``spec`` ((name, width) pairs).

    Shared by direct table entries and action-profile members."""
    if isinstance(params, dict):
        names = [n for n, _ in spec]
        extra = set(params) - set(names)
        if extra:
            raise ControlPlaneError(f"action '{action}': no parameter named {sorted(extra)[0]!r}")
        missing = [n for n in names if n not in params]
        if missing:
            raise ControlPlaneError(f"action '{action}': missing parameter {missing[0]!r}")
        values = [params[n] for n in names]
    else:
        values = list(params)
        if len(values) != len(spec):
            raise ControlPlaneError(f"action '{action}': takes {len(spec)} parameters, got {len(values)}")
    for (pname, width), v in zip(spec, values):
        if v < 0 or v >> width:
            raise ControlPlaneError(f"action '{action}': value {v:#x} does not fit parameter {pname} (bit<{width}>)")
    return tuple(values)
