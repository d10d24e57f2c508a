"""Malformed P4Runtime requests into the server's service layer (in process, no gRPC).

``P4RuntimeService`` over a ``Device`` on innet's real target (the executor), loaded with
tests/fuzz/p4rt_all.p4 (every entity kind). Requests are valid ones with field-level
mutations, or random / corrupted bytes parsed as the request message. Acceptable: OK or
a gRPC status with a proper code (INVALID_ARGUMENT, NOT_FOUND, OUT_OF_RANGE, ...), and
per-update Write errors with such codes. A failure is INTERNAL or UNKNOWN from an
unexpected exception (the service turns those into INTERNAL), an exception escaping a
handler, a hang, or a device that no longer answers a plain Read afterwards.
"""

from __future__ import annotations

import functools
import hashlib
import random
import traceback
from pathlib import Path
from typing import Any, Callable

import grpc
import p4rt_gen as gen
from finsy.proto import p4r, rpc_status
from fuzzlib import Hang, count, fuzz_settings, known_bug, save_reproducer, watchdog
from google.protobuf import text_format
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from innet.switch.p4runtime.device import Device
from innet.switch.p4rt_codec.status import STATUS_DETAILS_KEY, decode_write_errors
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.p4runtime.service import P4RuntimeService, _Stream

PROGRAM = (Path(__file__).resolve().parent / "p4rt_all.p4").read_bytes()
CPU_PORT = 255
REQUEST_DEADLINE_S = 10.0
BAD_CODES = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
seeds = st.integers(0, 2**64 - 1)
Set = p4r.SetForwardingPipelineConfigRequest


class CachingTarget(InnetTarget):
    """InnetTarget whose front-end results are cached per device config: every example
    gets a fresh device and pipeline (fresh state) without recompiling the program."""

    @functools.lru_cache(maxsize=64)
    def _compile(self, data: bytes) -> tuple[Any, Any]:  # type: ignore[override]
        return super()._compile(data)


TARGET = CachingTarget()


class Context:
    """The parts of ``grpc.ServicerContext`` the service uses; records the status."""

    def __init__(self) -> None:
        self.code: grpc.StatusCode = grpc.StatusCode.OK
        self.details = ""
        self.trailing: tuple[tuple[str, bytes], ...] = ()

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def set_trailing_metadata(self, md: tuple[tuple[str, bytes], ...]) -> None:
        self.trailing = md

    def peer(self) -> str:
        return "fuzz"

    def add_callback(self, fn: Callable[[], None]) -> bool:
        return True


def service() -> tuple[P4RuntimeService, _Stream]:
    """A fresh device with the program committed and a primary stream (election id 1)."""
    device = Device(1, TARGET, cpu_port=CPU_PORT)
    device.load(PROGRAM)
    svc = P4RuntimeService(device)
    primary = _Stream(peer="primary")
    svc._on_request(primary, p4r.StreamMessageRequest(
        arbitration=p4r.MasterArbitrationUpdate(device_id=1, election_id=gen.election(1))))
    return svc, primary


@functools.lru_cache(maxsize=1)
def p4info() -> Any:
    svc, _ = service()
    return svc.device.get_pipeline(p4r.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE).p4info


def fail(kind: str, seed: int, request: Message, problem: str, detail: str = "") -> None:
    text = text_format.MessageToString(request, as_utf8=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = save_reproducer("p4runtime", f"{kind}-{digest}.txt",
                           f"# {kind}: {problem}\n# seed {seed}; program tests/fuzz/p4rt_all.p4\n{text}")
    raise AssertionError(f"{kind}: {problem}\nrequest (text format) saved to {path}:\n{text[:2000]}\n{detail}")


def call(kind: str, seed: int, request: Message, fn: Callable[[Context], Any]) -> tuple[Context, Any]:
    """Run one handler: no escaping exception, no hang, no INTERNAL/UNKNOWN status."""
    count("p4runtime_requests")
    ctx = Context()
    try:
        with watchdog(REQUEST_DEADLINE_S, kind):
            result = fn(ctx)
    except (Exception, Hang) as error:
        fail(kind, seed, request, f"{type(error).__name__} escaped: {error}", traceback.format_exc())
    if ctx.code in BAD_CODES and not (kind == "Write" and ctx.code == grpc.StatusCode.UNKNOWN and ctx.trailing):
        if known_bug(ctx.code.name, ctx.details) is None:
            fail(kind, seed, request, f"status {ctx.code.name}: {ctx.details}")
    return ctx, result


def check_write(svc: P4RuntimeService, seed: int, request: p4r.WriteRequest) -> None:
    ctx, _ = call("Write", seed, request, lambda c: svc.Write(request, c))
    for key, value in ctx.trailing:
        if key == STATUS_DETAILS_KEY:
            for i, error in enumerate(decode_write_errors(rpc_status.Status.FromString(value))):
                code = grpc.StatusCode.UNKNOWN if error.canonical_code == 2 else (
                    grpc.StatusCode.INTERNAL if error.canonical_code == 13 else None)
                if code is not None and known_bug(code.name, error.message) is None:
                    fail("Write", seed, request, f"update {i}: {code.name}: {error.message}")


def check_read(svc: P4RuntimeService, seed: int, request: p4r.ReadRequest) -> None:
    call("Read", seed, request, lambda c: list(svc.Read(request, c)))


def still_serves(svc: P4RuntimeService, seed: int, request: Message) -> None:
    """After any request: a wildcard Read of all tables answers OK, a packet runs."""
    probe = p4r.ReadRequest(device_id=1, entities=[p4r.Entity(table_entry=p4r.TableEntry())])
    ctx, _ = call("Read", seed, probe, lambda c: list(svc.Read(probe, c)))
    if ctx.code != grpc.StatusCode.OK and svc.device.has_pipeline:
        fail("Read after request", seed, request, f"plain wildcard Read answered {ctx.code.name}: {ctx.details}")
    with watchdog(REQUEST_DEADLINE_S, "packet after request"):
        try:
            svc.device.process(1, bytes.fromhex("000000000001000000000002080045000014000000004011000"
                                                "00a0000010a000002") + bytes(20))
        except Exception as error:
            fail("packet after request", seed, request, f"{type(error).__name__}: {error}", traceback.format_exc())


def write_request(updates: list[p4r.Update]) -> p4r.WriteRequest:
    return p4r.WriteRequest(device_id=1, election_id=gen.election(1), updates=updates)


def test_write_mutated_requests() -> None:
    info = p4info()

    @fuzz_settings(200)
    @given(seeds)
    def check(seed: int) -> None:
        rng = random.Random(seed)
        svc, _ = service()
        setup = write_request([gen.update(rng, info) for _ in range(rng.randint(0, 8))])
        check_write(svc, seed, setup)
        for _ in range(rng.randint(1, 4)):
            valid = write_request([gen.update(rng, info) for _ in range(rng.randint(1, 4))])
            request = gen.mutated(rng, valid) if rng.random() < 0.8 else \
                gen.from_random_bytes(rng, p4r.WriteRequest, valid)
            if request is not None:
                check_write(svc, seed, request)
        still_serves(svc, seed, setup)

    check()


def test_read_mutated_requests() -> None:
    info = p4info()

    @fuzz_settings(200)
    @given(seeds)
    def check(seed: int) -> None:
        rng = random.Random(seed)
        svc, _ = service()
        check_write(svc, seed, write_request([gen.update(rng, info) for _ in range(rng.randint(0, 8))]))
        for _ in range(rng.randint(1, 4)):
            valid = p4r.ReadRequest(device_id=1, entities=[gen.entity(rng, info) for _ in range(rng.randint(1, 3))])
            request = gen.mutated(rng, valid) if rng.random() < 0.8 else \
                gen.from_random_bytes(rng, p4r.ReadRequest, valid)
            if request is not None:
                check_read(svc, seed, request)

    check()


def test_set_pipeline_mutated_requests() -> None:
    """SetForwardingPipelineConfig with mutated P4Info, actions, cookies and (rarely)
    device-config bytes; then the device must keep serving (Write, Read, a packet)."""
    info = p4info()

    @fuzz_settings(60)
    @given(seeds)
    def check(seed: int) -> None:
        rng = random.Random(seed)
        svc, _ = service()
        config = p4r.ForwardingPipelineConfig(p4info=info, p4_device_config=PROGRAM)
        config.cookie.cookie = 7
        valid = Set(device_id=1, election_id=gen.election(1), action=Set.VERIFY_AND_COMMIT, config=config)
        if rng.random() < 0.15:
            request = gen.from_random_bytes(rng, Set, valid)
            if request is None:
                return
        else:
            request = gen.mutated(rng, valid, most=6)
        call("SetForwardingPipelineConfig", seed, request, lambda c: svc.SetForwardingPipelineConfig(request, c))
        if svc.device.has_pipeline:
            check_write(svc, seed, write_request([gen.update(rng, info) for _ in range(4)]))
        still_serves(svc, seed, request)

    check()


def test_stream_mutated_messages() -> None:
    """Arbitration, PacketOut and DigestListAck messages, mutated, on a fresh stream and
    on the primary's; every StreamError sent back carries a proper code."""
    info = p4info()

    @fuzz_settings(300)
    @given(seeds)
    def check(seed: int) -> None:
        rng = random.Random(seed)
        svc, primary = service()
        other = _Stream(peer="other")
        for _ in range(rng.randint(1, 6)):
            packet = p4r.PacketOut(payload=rng.randbytes(rng.randint(0, 80)))
            packet.metadata.add(metadata_id=1, value=gen.value_bytes(rng, 9))
            packet.metadata.add(metadata_id=2, value=gen.value_bytes(rng, 7))
            packet.metadata.add(metadata_id=3, value=gen.value_bytes(rng, 16))
            valid = rng.choice((
                p4r.StreamMessageRequest(arbitration=p4r.MasterArbitrationUpdate(
                    device_id=1, election_id=gen.election(rng.choice((0, 1, 2, 2**64, 2**128 - 1))))),
                p4r.StreamMessageRequest(packet=packet),
                p4r.StreamMessageRequest(digest_ack=p4r.DigestListAck(digest_id=info.digests[0].preamble.id,
                                                                      list_id=rng.randint(0, 3))),
            ))
            request = gen.mutated(rng, valid) if rng.random() < 0.7 else valid
            if rng.random() < 0.1:
                request = gen.from_random_bytes(rng, p4r.StreamMessageRequest, valid) or request
            stream = rng.choice((primary, other))
            call("StreamChannel", seed, request, lambda c: svc._on_request(stream, request))
            while not stream.queue.empty():
                item = stream.queue.get()
                code = getattr(item, "code", None)
                if isinstance(item, p4r.StreamMessageResponse) and item.WhichOneof("update") == "error":
                    code = grpc.StatusCode.UNKNOWN if item.error.canonical_code == 2 else (
                        grpc.StatusCode.INTERNAL if item.error.canonical_code == 13 else None)
                    message = item.error.message
                else:
                    message = getattr(item, "message", "")
                if code in BAD_CODES and known_bug(code.name, message) is None:
                    fail("StreamChannel", seed, request, f"stream answered {code.name}: {message}")
        still_serves(svc, seed, p4r.StreamMessageRequest())

    check()
