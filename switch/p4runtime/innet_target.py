"""The target protocol implemented over innet's executor (``innet.switch.pipeline``)."""

from __future__ import annotations

from finsy.proto import p4i

from innet.switch.p4runtime.target import LoadedConfig, TargetError


class InnetTarget:
    """Builds pipelines from innet device configs or P4 source."""

    def load(self, p4info: p4i.P4Info | None, device_config: bytes) -> LoadedConfig:
        try:
            from innet.switch import pipeline  # noqa: F401
            from innet.switch.pipeline import Pipeline  # type: ignore[attr-defined]  # noqa: F401
        except ImportError as error:
            raise TargetError(f"innet's executor is not available: {error}") from None
        raise TargetError("innet's executor adapter is not wired yet")
