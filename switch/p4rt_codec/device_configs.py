"""Which switch a ``p4_device_config`` blob is for, and how large a pipeline push may be.

Both sides need the same answer: the controller refuses to send a config to a switch that
cannot run it (before a 10 MB BMv2 JSON meets a gRPC size limit on the way), and
innet-switch refuses one it receives with the same words. The kinds:

``innet``  innet-p4c's device config, JSON whose first key is ``"format":
           "innet-device-config/<n>"`` (``innet.switch.device_config``);
``bmv2``   p4c-bm2-ss's JSON (has ``"header_types"`` and ``"pipelines"``), which only
           BMv2 (simple_switch_grpc) runs;
``p4``     P4 source text, which innet-switch compiles on load;
``other``  anything else (the receiving switch says what it expected).

Recognising a kind only looks at markers, it does not parse the blob: a 10 MB BMv2 JSON is
classified in a few milliseconds, and a malformed config of a recognised kind is still the
receiving switch's to reject in detail.
"""

from __future__ import annotations

from typing import Literal

ConfigKind = Literal["innet", "bmv2", "p4", "other"]

SWITCH_IMPLS: dict[str, tuple[str, tuple[ConfigKind, ...]]] = {
    "innet": ("innet-switch", ("innet", "p4")),
    "bmv2": ("simple_switch_grpc", ("bmv2",)),
}
"""Switch implementation -> (its name in messages, the config kinds it runs)."""

MAX_PIPELINE_MESSAGE_BYTES = 64 << 20
"""Largest SetForwardingPipelineConfig request innet-switch receives (gRPC's default is
4 MiB): a program's innet device config is tens of kB, so a push near this size is a
wrong kind of config, which the switch then names instead of gRPC's ``RESOURCE_EXHAUSTED``."""

_INNET_MARKER = b'"innet-device-config/'
_HEAD = 256
"""innet-p4c writes ``format`` first (sorted keys): it is within the first bytes."""

BMV2_JSON_REFUSAL = ("device config is BMv2 JSON (p4c-bm2-ss output); innet executes P4 itself: "
                     "send innet-p4c's <prog>.innet.json or the P4 source")
"""What innet-switch, and the controller before sending, say to a BMv2 JSON."""


def config_kind(blob: bytes) -> ConfigKind:
    """The kind of ``blob`` (see the module docstring)."""
    head = blob[:_HEAD].lstrip()
    if head[:1] == b"{":
        if _INNET_MARKER in head:
            return "innet"
        if b'"header_types"' in blob and b'"pipelines"' in blob:
            return "bmv2"
        return "other"
    if not blob.strip():
        return "other"
    try:
        blob[:4096].decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < 4093:  # not a multi-byte character cut by the slice
            return "other"
    return "p4"


def describe(blob: bytes) -> str:
    """``BMv2 JSON (p4c-bm2-ss output), 10.8 MB``: a blob's kind and size, for messages."""
    names = {"innet": "innet device config (innet-p4c output)", "bmv2": "BMv2 JSON (p4c-bm2-ss output)",
             "p4": "P4 source text", "other": "not a known device config"}
    return f"{names[config_kind(blob)]}, {_size(len(blob))}"


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB" if n >= 1000 else f"{n} bytes"


def mismatch(blob: bytes, switch_impl: str) -> str | None:
    """Why a switch of implementation ``switch_impl`` (``innet`` or ``bmv2``) cannot run
    ``blob``, or None when it may (a config of another known kind is refused; ``other`` and
    an unknown implementation are left to the switch, which says what it expected)."""
    kind = config_kind(blob)
    if switch_impl not in SWITCH_IMPLS or kind == "other":
        return None
    name, runs = SWITCH_IMPLS[switch_impl]
    if kind in runs:
        return None
    if kind == "bmv2":
        return f"{BMV2_JSON_REFUSAL} ({_size(len(blob))})"
    return (f"device config is {describe(blob)}; {name} runs only p4c-bm2-ss's JSON: compile the program "
            "with p4c-bm2-ss (innet.testbed.backends.bmv2.pipeline does)")
