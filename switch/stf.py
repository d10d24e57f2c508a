"""STF test runner (p4c's ``bmv2stf.py`` dialect and innet's extensions) on the embedded pipeline.

Commands: ``add <table> [prio] <key>:<value> ... <action>(<param>:<value>, ...)``,
``setdefault <table> <action>(...)``, ``packet <port> <hex>``, ``expect <port> [<hex>][$]``
(``*`` = any nibble, ``$`` = exact length, no data = any packet), ``no_packet [port]``,
``mc_mgrp_create <grp>``, ``mc_node_create <rid> <ports...>``, ``mc_node_associate <grp>
<handle>``, ``mirroring_add <session> <port>``, ``register_write <reg> <idx> <value>``,
``register_read <reg> <idx> <value>`` (a check, evaluated after all packets),
``counter_read <counter> <idx> <packets> [<bytes>]`` and p4c's ``check_counter
<counter>(<idx>) [packets|bytes] <op> <value>`` (checks too), ``#`` comments.

Action profiles and selectors (p4c's driver has no commands for them; innet takes
``simple_switch_CLI``'s, the way the driver passes ``mc_*`` and ``mirroring_add`` through):
``act_prof_create_member <profile> <action>(<param>:<value>, ...)`` (or the CLI's
``<profile> <action> <value> ...``), ``act_prof_modify_member <profile> <action>(...) <member>``,
``act_prof_delete_member <profile> <member>``, ``act_prof_create_group <profile>``,
``act_prof_add_member_to_group <profile> <member> <group>``,
``act_prof_remove_member_from_group <profile> <member> <group>``,
``act_prof_delete_group <profile> <group>``. Members and groups get handles 0, 1, ...
(the lowest free one, as BMv2 hands them out). Entries of an indirect table point to them
with ``add <table> [prio] <key>:<value> ... member(<handle>)`` or ``group(<handle>)``, and
``setdefault <table> member(<handle>)`` / ``group(<handle>)`` sets the miss behaviour.

Key values: ``0x0a01****`` (``*`` nibbles: a prefix for lpm, a mask for ternary),
``value/len``, ``value&&&mask``, decimal or hex. Table, key and action names match exactly
or by dotted suffix. As in p4c's driver, every control-plane command takes effect before
the first packet; outputs are compared per port, in order, only on ports named in some
``packet``/``expect`` line. The packets go in as one burst (``Pipeline.process_burst``): the
driver writes them back to back into pcap files, so a recirculated packet comes out after
the later inputs, as on simple_switch.

``innet.switch.stf_dialect`` names the lines p4c's driver would refuse; the repository keeps
tests that need them in ``NAME.innet.stf`` files, run against ``NAME.p4`` like ``NAME.stf``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from innet.names import by_suffix

from .pipeline import Pipeline
from .pipeline.errors import PipelineError
from .pipeline.tables import KeySpec


class StfError(Exception):
    """A malformed STF line; the message names file:line."""


@dataclass
class Expect:
    port: int
    pattern: str  # hex nibbles with '*'; '' = any packet
    exact: bool
    line: int


@dataclass
class StfTest:
    """A parsed STF file."""

    control: list[tuple[int, str, list[str]]] = field(default_factory=list)  # (line, cmd, args)
    packets: list[tuple[int, int, bytes]] = field(default_factory=list)  # (line, port, data)
    expects: list[Expect] = field(default_factory=list)
    checks: list[tuple[int, str, list[str]]] = field(default_factory=list)
    no_packet_ports: set[int] = field(default_factory=set)


@dataclass
class StfResult:
    passed: bool
    message: str


PROFILE_COMMANDS = {"act_prof_create_member", "act_prof_modify_member", "act_prof_delete_member",
                    "act_prof_create_group", "act_prof_add_member_to_group",
                    "act_prof_remove_member_from_group", "act_prof_delete_group"}
CONTROL = PROFILE_COMMANDS | {"add", "setdefault", "mc_mgrp_create", "mc_node_create", "mc_node_associate",
           "mirroring_add", "register_write", "mc_node_update", "mirroring_add_mc"}


def read_stf(path: str | Path) -> StfTest:
    """Read and parse an STF file; StfError names an unreadable file or a byte that is not UTF-8.

    Bytes that are not UTF-8 are tolerated after ``#`` (a comment, never interpreted),
    like the P4 front-end does in comments."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise StfError(f"{path}: cannot read the STF file: {e.strerror}") from None
    lines = []
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            if 0 <= raw.find(b"#") < e.start:
                lines.append(raw.decode("utf-8", "replace"))
                continue
            raise StfError(f"{path}:{lineno}: byte 0x{raw[e.start]:02x} (byte {e.start + 1} of the line) "
                           "is not valid UTF-8") from None
    return parse_stf("\n".join(lines), str(path))


def parse_stf(text: str, name: str = "<stf>") -> StfTest:
    """Parse STF text into control-plane commands, packets and expectations."""
    t = StfTest()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        cmd, _, rest = line.partition(" ")
        rest = rest.strip()
        if cmd == "packet":
            port, _, data = rest.partition(" ")
            t.packets.append((lineno, _int(port, name, lineno), _hex_bytes(data, name, lineno)))
        elif cmd == "expect":
            port, _, data = rest.partition(" ")
            data = re.sub(r"\s+", "", data)
            exact = data.endswith("$")
            data = data.rstrip("$")
            if data.lower().startswith("0x"):
                data = data[2:]
            if not re.fullmatch(r"[0-9a-fA-F*]*", data):
                raise StfError(f"{name}:{lineno}: bad expected packet data {data!r}")
            t.expects.append(Expect(_int(port, name, lineno), data.lower(), exact, lineno))
        elif cmd == "no_packet":
            if rest:
                t.no_packet_ports.add(_int(rest.split()[0], name, lineno))
        elif cmd in CONTROL:
            t.control.append((lineno, cmd, [rest] if cmd in ("add", "setdefault") or cmd in PROFILE_COMMANDS
                              else rest.split()))
        elif cmd in ("register_read", "counter_read", "check_counter"):
            t.checks.append((lineno, cmd, rest.split()))
        elif cmd in ("wait",):
            continue
        else:
            raise StfError(f"{name}:{lineno}: unknown STF command {cmd!r}")
    return t


def _int(s: str, name: str, line: int) -> int:
    try:
        return int(s, 0)
    except ValueError:
        raise StfError(f"{name}:{line}: expected a number, got {s!r}") from None


def _hex_bytes(s: str, name: str, line: int) -> bytes:
    h = re.sub(r"\s+", "", s)
    if h.lower().startswith("0x"):
        h = h[2:]
    if len(h) % 2 or not re.fullmatch(r"[0-9a-fA-F]*", h):
        raise StfError(f"{name}:{line}: bad packet data {s!r}")
    return bytes.fromhex(h)


def parse_value(text: str, width: int) -> tuple[int, int, bool]:
    """``(value, mask, has_wildcards)`` of an STF number with optional ``*`` digits."""
    s = text.strip().lower()
    full = (1 << width) - 1
    if "*" not in s:
        return int(s, 0) & full, full, False
    if s.startswith("0x"):
        digits, bpd = s[2:], 4
    elif s.startswith("0b"):
        digits, bpd = s[2:], 1
    else:
        raise ValueError(f"'*' digits need a 0x or 0b number: {text!r}")
    v = m = 0
    for d in digits:
        v <<= bpd
        m <<= bpd
        if d != "*":
            v |= int(d, 16)
            m |= (1 << bpd) - 1
    return v & full, m & full, True


def key_spec(kind: str, text: str, width: int) -> KeySpec:
    """A KeySpec from an STF key value for a key of ``kind`` and ``width`` bits."""
    full = (1 << width) - 1
    if "&&&" in text:
        vs, ms = text.split("&&&")
        value, mask = int(vs, 0) & full, int(ms, 0) & full
        if kind == "lpm":
            plen = bin(mask).count("1")
            return KeySpec(value & mask, prefix_len=plen)
        return KeySpec(value & mask, mask=mask)
    if "/" in text:
        vs, plen_s = text.split("/")
        value = int(vs, 0) & full
        plen = int(plen_s, 0)
        if kind == "lpm":
            return KeySpec(value, prefix_len=plen)
        mask = full ^ ((1 << (width - plen)) - 1)
        return KeySpec(value & mask, mask=mask)
    if ".." in text:
        los, his = text.split("..")
        return KeySpec(int(los, 0), hi=int(his, 0))
    value, mask, wild = parse_value(text, width)
    if kind == "lpm":
        plen = bin(mask).count("1")
        if mask != full ^ ((1 << (width - plen)) - 1):
            raise ValueError(f"lpm key value {text!r} is not a prefix")
        return KeySpec(value & mask, prefix_len=plen)
    if kind in ("ternary", "optional"):
        return KeySpec(value & mask, mask=mask)
    if kind == "range":
        if wild:
            lo = value & mask
            return KeySpec(lo, hi=lo | (full ^ mask))
        return KeySpec(value, hi=value)
    if wild:
        raise ValueError(f"exact key value {text!r} has '*' digits")
    return KeySpec(value)


_ACTION_RE = re.compile(r"^(?P<head>.*?)\s*(?P<action>[A-Za-z_][\w.$]*)\s*\((?P<args>[^()]*)\)\s*$")


def _action(text: str) -> tuple[str, str, dict[str, int]]:
    m = _ACTION_RE.match(text)
    if not m:
        raise ValueError(f"no action call at the end of {text!r}")
    params: dict[str, int] = {}
    args = m.group("args").strip()
    if args:
        for a in args.split(","):
            pname, _, pval = a.partition(":")
            if not _:
                raise ValueError(f"action argument {a.strip()!r} is not name:value")
            params[pname.strip()] = int(pval.strip(), 0)
    return m.group("head"), m.group("action"), params


def _split_call(text: str) -> tuple[str, str, dict[str, int]]:
    """Like ``_action``, but a trailing ``member(h)``/``group(h)`` is kept as the action
    name with no parameters (``_indirect_ref`` reads the handle)."""
    m = _REF_RE.search(text)
    if m is not None:
        return text[: m.start()], m.group(1), {}
    return _action(text)


def _param_values(table: Any, action: str, params: dict[str, int]) -> dict[str, int]:
    """Match STF parameter names to the action's (exactly or by suffix after '.')."""
    info = table.action(action)
    names = [p for p, _ in info.params]
    out = {}
    for k, v in params.items():
        if k in names:
            out[k] = v
        else:
            hits = [n for n in names if n.split(".")[-1] == k.split(".")[-1]]
            out[hits[0] if len(hits) == 1 else k] = v
    return out


def apply_control(pl: Pipeline, cmd: str, args: list[str]) -> None:
    """Execute one STF control-plane command on ``pl``."""
    if cmd == "add":
        head, action, params = _split_call(args[0])
        toks = head.split()
        table = pl.table(toks[0])
        toks = toks[1:]
        prio = 0
        if toks and re.fullmatch(r"-?\d+", toks[0]):
            prio = int(toks.pop(0))
        given: dict[int, str] = {}
        for tok in toks:
            kname, sep, val = tok.rpartition(":")
            if not sep:
                raise ValueError(f"key {tok!r} is not name:value")
            idx = _key_index(table, kname)
            given[idx] = val
        specs = []
        for i, kd in enumerate(table.keys):
            if i in given:
                specs.append(key_spec(kd.kind, given[i], kd.width))
            elif kd.kind in ("ternary", "optional"):
                specs.append(KeySpec(0, mask=0))
            elif kd.kind == "lpm":
                specs.append(KeySpec(0, prefix_len=0))
            elif kd.kind == "range":
                specs.append(KeySpec(0, hi=(1 << kd.width) - 1))
            else:
                raise ValueError(f"table {table.name}: no value for exact key {kd.name}")
        if table.needs_priority and prio <= 0:
            prio = 1
        ref = _indirect_ref(table, action, args[0])
        if ref is not None:
            table.insert_indirect(specs, priority=prio, **ref)
        else:
            table.insert(specs, action, _param_values(table, action, params), prio)
    elif cmd == "setdefault":
        head, action, params = _split_call(args[0])
        table = pl.table(head.split()[0])
        ref = _indirect_ref(table, action, args[0])
        if ref is not None:
            table.set_default_indirect(**ref)
        else:
            table.set_default(action, _param_values(table, action, params))
    elif cmd in PROFILE_COMMANDS:
        _profile_command(pl, cmd, args[0])
    elif cmd == "mc_mgrp_create":
        pl.pre.group_create(int(args[0], 0))
    elif cmd == "mc_node_create":
        pl.pre.node_create(int(args[0], 0), [int(p, 0) for p in args[1:]])
    elif cmd == "mc_node_update":
        pl.pre.node_update(int(args[0], 0), [int(p, 0) for p in args[1:]])
    elif cmd == "mc_node_associate":
        pl.pre.node_associate(int(args[0], 0), int(args[1], 0))
    elif cmd == "mirroring_add":
        pl.pre.mirroring_add(int(args[0], 0), int(args[1], 0))
    elif cmd == "mirroring_add_mc":
        pl.pre.mirroring_add_mc(int(args[0], 0), int(args[1], 0))
    elif cmd == "register_write":
        pl.register(args[0]).write(int(args[1], 0), int(args[2], 0))
    else:
        raise ValueError(f"unknown command {cmd}")


_REF_RE = re.compile(r"(member|group)\(\s*(\w+)\s*\)\s*$")


def _indirect_ref(table: Any, action: str, text: str) -> dict[str, int] | None:
    """``{"member": h}`` / ``{"group": h}`` for a ``member(h)``/``group(h)`` reference
    on a table with an action profile, else None."""
    if table.profile is None or action not in ("member", "group"):
        return None
    m = _REF_RE.search(text)
    if m is None:
        raise ValueError(f"table {table.name}: expected member(<handle>) or group(<handle>) in {text!r}")
    return {m.group(1): int(m.group(2), 0)}


def _profile_command(pl: Pipeline, cmd: str, text: str) -> None:
    """One ``act_prof_*`` command (simple_switch_CLI's argument order)."""
    words = text.split()
    if not words:
        raise ValueError(f"{cmd}: missing action profile name")
    prof = pl.action_profile(words[0])
    rest = text[len(words[0]):].strip()
    nums = [int(w, 0) for w in words[1:]] if cmd not in ("act_prof_create_member", "act_prof_modify_member") else []
    if cmd == "act_prof_create_member":
        action, params = _member_action(prof, rest)
        prof.add_member(prof.next_member_id(), action, params)
    elif cmd == "act_prof_modify_member":
        if "(" in rest:  # <action>(p:v, ...) <member>
            call, _, handle = rest.rpartition(")")
            action, params = _member_action(prof, call + ")")
            prof.modify_member(int(handle.strip(), 0), action, params)
        else:  # CLI: <action> <member> <value> ...
            toks = rest.split()
            action = toks[0]
            prof.modify_member(int(toks[1], 0), action, [int(v, 0) for v in toks[2:]])
    elif cmd == "act_prof_delete_member":
        prof.delete_member(nums[0])
    elif cmd == "act_prof_create_group":
        prof.create_group(prof.next_group_id())
    elif cmd == "act_prof_add_member_to_group":
        prof.add_member_to_group(nums[1], nums[0])
    elif cmd == "act_prof_remove_member_from_group":
        prof.remove_member_from_group(nums[1], nums[0])
    elif cmd == "act_prof_delete_group":
        prof.delete_group(nums[0])


def _member_action(prof: Any, text: str) -> tuple[str, Any]:
    """Action name and parameters of ``<action>(p:v, ...)`` or ``<action> v1 v2 ...``."""
    if "(" in text:
        head, action, params = _action(text)
        if head.strip():
            raise ValueError(f"unexpected {head.strip()!r} before the action call")
        spec = prof.actions[prof._action_name(action)]
        names = [n for n, _ in spec]
        out: dict[str, int] = {}
        for k, v in params.items():
            hits = [n for n in names if n == k or n.split(".")[-1] == k.split(".")[-1]]
            out[hits[0] if len(hits) == 1 else k] = v
        return action, out
    toks = text.split()
    if not toks:
        raise ValueError("missing action name")
    return toks[0], [int(v, 0) for v in toks[1:]]


_STACK_ELEM = re.compile(r"\$(\d+)")


def _key_index(table: Any, name: str) -> int:
    names = [k.name for k in table.keys]
    # BMv2's JSON (and so p4c's STF files) spell stack element i as ``stack$i``
    name = _STACK_ELEM.sub(r"[\1]", name)
    if name in names:
        return names.index(name)
    hits = [names.index(n) for n in by_suffix(name, names)] or [
        i for i, n in enumerate(names) if name.endswith("." + n)]
    if len(hits) == 1:
        return hits[0]
    raise ValueError(f"table {table.name}: no key named {name!r} (keys: {', '.join(names)})")


def expect_matches(exp: Expect, data: bytes) -> bool:
    """Whether ``data`` is what ``exp`` asks for (p4c's ``compare_pkt``: ``*`` any nibble, a
    longer packet matches unless ``$``); shared with the BMv2 runner so both judge alike."""
    if not exp.pattern:
        return True
    got = data.hex()
    pat = exp.pattern
    if exp.exact and len(got) != len(pat):
        return False
    if len(got) < len(pat):
        return False
    return all(p == "*" or p == g for p, g in zip(pat, got))


def run_test(pl: Pipeline, test: StfTest, name: str = "<stf>") -> StfResult:
    """Run a parsed STF test on a loaded pipeline."""
    for lineno, cmd, args in test.control:
        try:
            apply_control(pl, cmd, args)
        except (PipelineError, ValueError) as e:
            return StfResult(False, f"{name}:{lineno}: {cmd}: {e}")
    observed = {p for _, p, _ in test.packets} | {e.port for e in test.expects} | test.no_packet_ports
    got: dict[int, list[bytes]] = {p: [] for p in observed}
    for oport, odata in pl.process_burst([(port, data) for _, port, data in test.packets]):
        if oport in got:
            got[oport].append(odata)
    problems = []
    for port in sorted(observed):
        exp = [e for e in test.expects if e.port == port]
        outs = got[port]
        bad = len(exp) != len(outs) or not all(expect_matches(e, d) for e, d in zip(exp, outs))
        if bad:
            lines = [f"port {port}: expected {len(exp)} packet(s), got {len(outs)}"]
            for i in range(max(len(exp), len(outs))):
                ex = exp[i] if i < len(exp) else None
                d = outs[i] if i < len(outs) else None
                mark = "ok " if ex is not None and d is not None and expect_matches(ex, d) else "BAD"
                es = "-" if ex is None else (ex.pattern or "<any>") + ("$" if ex.exact else "") + f" (line {ex.line})"
                ds = "-" if d is None else d.hex()
                lines.append(f"  {mark} #{i}: expected {es}\n             got      {ds}")
            problems.append("\n".join(lines))
    for lineno, cmd, args in test.checks:
        if cmd in ("counter_read", "check_counter"):
            problem = _check_counter(pl, cmd, args, lineno)
            if problem:
                problems.append(problem)
        elif cmd == "register_read":
            try:
                v = pl.register(args[0]).read(int(args[1], 0))
            except PipelineError as e:
                problems.append(f"line {lineno}: {e}")
                continue
            want = int(args[2], 0)
            if v != want:
                problems.append(f"line {lineno}: register {args[0]}[{args[1]}] = {v:#x}, expected {want:#x}")
    if problems:
        return StfResult(False, f"{name}: output mismatch\n" + "\n".join(problems))
    return StfResult(True, f"{name}: {len(test.packets)} packet(s), all outputs as expected")


_CHECK_COUNTER = re.compile(r"^([\w.]+)\((\d+|0x[0-9a-fA-F]+)\)$")
_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _check_counter(pl: Pipeline, cmd: str, args: list[str], lineno: int) -> str | None:
    """Evaluate a counter check; returns a problem description or None.

    ``counter_read <counter> <index> <packets> [<bytes>]`` (innet's, shaped like
    ``register_read``) and p4c's ``check_counter <counter>(<index>) [packets|bytes] <op> <value>``.
    A malformed line is a problem, never a silently passing check."""
    try:
        if cmd == "counter_read":
            if len(args) not in (3, 4):
                return f"line {lineno}: counter_read takes <counter> <index> <packets> [<bytes>], got {' '.join(args)!r}"
            name, index = args[0], int(args[1], 0)
            checks = [("packets", "==", int(args[2], 0))]
            if len(args) == 4:
                checks.append(("bytes", "==", int(args[3], 0)))
        else:
            m = _CHECK_COUNTER.match(args[0]) if args else None
            rest = args[1:]
            if rest and rest[0] in ("packets", "bytes"):
                what, rest = rest[0], rest[1:]
            else:
                what = "packets"
            if m is None or len(rest) != 2 or rest[0] not in _COMPARE:
                return (f"line {lineno}: check_counter takes <counter>(<index>) [packets|bytes] <op> <value>, "
                        f"got {' '.join(args)!r}")
            name, index = m.group(1), int(m.group(2), 0)
            checks = [(what, rest[0], int(rest[1], 0))]
        packets, nbytes = pl.counter_read(name, index)
    except (PipelineError, ValueError) as e:
        return f"line {lineno}: {cmd}: {e}"
    got = {"packets": packets, "bytes": nbytes}
    bad = [f"{what} = {got[what]}, expected {op} {want}" for what, op, want in checks
           if not _COMPARE[op](got[what], want)]
    return f"line {lineno}: counter {name}[{index}]: " + "; ".join(bad) if bad else None


def run_stf(p4_path: str | Path, stf_path: str | Path, include_dirs: Sequence[str | Path] = (),
            executor: str = "python") -> StfResult:
    """Compile ``p4_path`` and run the STF file ``stf_path`` against it.

    Raises the front-end's P4Error / the executor's UnsupportedError on compile problems
    and StfError on a malformed STF file. ``executor``: ``python`` (the reference),
    ``native`` (generated C; raises NativeUnsupported for a program it refuses) or ``auto``
    (see ``innet.switch.native.select``)."""
    from .native.select import load_pipeline_file

    stf_path = Path(stf_path)
    test = read_stf(stf_path)
    pl = load_pipeline_file(p4_path, executor, include_dirs=include_dirs)
    return run_test(pl, test, str(stf_path))


__all__ = ["StfError", "StfResult", "StfTest", "parse_stf", "read_stf", "run_test", "run_stf", "expect_matches", "key_spec", "parse_value",
           "apply_control"]
