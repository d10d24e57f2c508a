"""Which lines of an STF file p4c's BMv2 driver would not take.

innet's runner (``switch/stf.py``) reads a superset of p4c's STF: ``register_read`` and
``counter_read`` with expected values, ``act_prof_*`` commands, ``value&&&mask`` and
``lo..hi`` keys, ``no_packet``, any Python integer literal. p4c's driver
(``backends/bmv2/bmv2stf.py`` over ``tools/stf/stf_lexer.py`` and ``stf_parser.py``, PLY)
refuses a whole file over one such line, so a test meant to run on BMv2 too must stay
inside p4c's dialect. This module states that dialect as a checker, so a test can keep the
repository's p4c-dialect files honest without installing p4c.

The dialect, as p4c 1.2.5 defines it (line by line, as innet reads STF):

* ``#`` starts a comment, except on ``packet``/``expect`` lines, whose data the lexer reads
  in a state without comments (a ``#`` there is an illegal character and ends the run).
* A line starts with a command, case-insensitive: ``add``, ``setdefault``, ``packet``,
  ``expect``, ``check_counter``, ``wait``, and the commands passed to ``simple_switch_CLI``
  unchanged (``mc_mgrp_create``, ``mc_node_create``, ``mc_node_associate``,
  ``mirroring_add[_mc]``, ``mirroring_delete``, ``mirroring_get``, ``counter_read``,
  ``counter_write``, ``register_read``, ``register_write``, ``register_reset``,
  ``meter_get_rates``, ``meter_set_rates``, ``meter_array_set_rates``).
* Numbers: decimal, ``0x`` hex and ``0b`` binary, the last two with ``*`` digits. No ``0o``,
  no ``_``, no sign, no ``&&&`` or ``..`` (``&`` and ``-`` are illegal characters).
* ``add <table> [<priority>] <key>:<value>[/<len>] ... <action>(<param>:<value>, ...)
  [= <id>]``: the priority is decimal, at least one key, parameters by name. A name is
  ``a.b.c``, only its first part may carry ``[n]``; ``packets`` and ``bytes`` are keywords
  and cannot be names.
* ``setdefault <table> <action>(...)``.
* ``packet <port> <hex>`` / ``expect <port> <hex with *>[$]``: decimal port, hex digits
  without ``0x``; a packet has whole bytes.
* ``check_counter <name>(<index>) [packets|bytes <op> <number>]``: a bare name, no dots.
  The BMv2 driver parses it but does not evaluate it (innet does).
* Commands passed to ``simple_switch_CLI`` take decimal numbers only (the CLI reads them with
  ``int()``), and exactly the CLI's arguments: ``register_read <reg> <index>`` prints a value
  but cannot check one.

Refused although p4c's grammar has them: ``no_packet`` (the driver calls ``int(None)`` on
it), ``expect <port>`` without data (the driver then fails on a missing key or skips the
port; ``expect <port> *`` means one packet of any content in both runners),
``mc_node_update`` (parsed, never sent to the switch), ``remove all`` (the lexer reads
``all`` as a name there). What a key's match kind decides (decimal ternary values, priorities
of ternary tables, range keys) needs the program and is not checked here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Problem", "check_p4c_dialect", "DIALECT_COMMENT", "NOT_BMV2_COMMENT", "INNET_SUFFIX", "program_for"]

INNET_SUFFIX = ".innet.stf"
"""Ending of an STF file in innet's extended dialect; every other ``.stf`` is p4c's dialect."""

DIALECT_COMMENT = "# innet STF dialect:"
"""How the first line of a ``NAME.innet.stf`` file starts; it goes on to name what it uses."""

NOT_BMV2_COMMENT = "# innet only, BMv2 cannot run it:"
"""The other first line of a ``NAME.innet.stf`` file: in p4c's dialect, but p4c or simple_switch
cannot run its program (the line goes on to say why)."""


def program_for(stf: Path) -> Path:
    """The program an STF file tests: ``NAME.p4`` for ``NAME.stf`` and for ``NAME.innet.stf``."""
    if stf.name.endswith(INNET_SUFFIX):
        return stf.with_name(stf.name[: -len(INNET_SUFFIX)] + ".p4")
    return stf.with_suffix(".p4")


@dataclass(frozen=True)
class Problem:
    """One line p4c's BMv2 driver would not take."""

    line: int
    """1-based line number in the STF text."""
    construct: str
    """The offending text (a command, a token, a key), as written."""
    reason: str
    """What p4c's driver does with it, or which form it wants instead."""

    def __str__(self) -> str:
        return f"line {self.line}: {self.construct!r}: {self.reason}"


class _Refused(Exception):
    def __init__(self, construct: str, reason: str) -> None:
        super().__init__(construct, reason)
        self.construct = construct
        self.reason = reason


# Commands p4c's driver hands to simple_switch_CLI, with their argument shapes:
# "n" a number, "q" a (qualified) name, "n+" one or more numbers, "r" meter rates.
_CLI_COMMANDS: dict[str, tuple[str, ...]] = {
    "mirroring_add": ("n", "n"),
    "mirroring_add_mc": ("n", "n"),
    "mirroring_delete": ("n",),
    "mirroring_get": ("n",),
    "mc_mgrp_create": ("n",),
    "mc_node_create": ("n", "n+"),
    "mc_node_associate": ("n", "n"),
    "counter_read": ("q", "n"),
    "counter_write": ("q", "n", "n", "n"),
    "register_read": ("q", "n"),
    "register_write": ("q", "n", "n"),
    "register_reset": ("q",),
    "meter_get_rates": ("q", "n"),
    "meter_set_rates": ("q", "n", "r"),
    "meter_array_set_rates": ("q", "r"),
}

_REFUSED_COMMANDS = {
    "no_packet": "p4c's BMv2 driver crashes on it (int(None)); leave the port without an expect",
    "mc_node_update": "p4c's parser reads it but its BMv2 driver never sends it to the switch",
    "remove": "p4c's lexer reads 'all' after 'remove' as a name, so its parser refuses the line",
}

# The lexer's INITIAL state, tried in p4c's order (function rules first, then the longest
# punctuation); p4c's numbers are TERN_CONST_HEX, INT_CONST_BIN and INT_CONST_DEC.
_TOKEN = re.compile(r"""
    (?P<ws>[ \t]+)
  | (?P<hex>0[xX][0-9a-fA-F*]+)
  | (?P<bin>0[bB][*01]+)
  | (?P<dec>[0-9]+)
  | (?P<id>[a-z$A-Z_][a-z$A-Z_0-9]*)
  | (?P<qid>"[^"]+")
  | (?P<comment>\#.*)
  | (?P<punct>==|!=|<=|>=|[<>=:,.\[\]()/])
""", re.VERBOSE)

# The lexer's packet-data state (after ``packet``/``expect``): no comments, no 0x.
_DATA = re.compile(r"(?P<ws>[ \t]+)|(?P<dec>[0-9]+)|(?P<hex>[0-9a-fA-F]+)|(?P<tern>\*)|(?P<exact>\$)")

_COUNT_TYPES = ("packets", "bytes")
_COMPARISONS = ("==", "!=", "<=", "<", ">=", ">")


@dataclass(frozen=True)
class _Tok:
    kind: str  # hex, bin, dec, id, packets, bytes, punct, end
    text: str
    start: int = -1
    end: int = -1


def _lex(rest: str, column_text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(rest):
        m = _TOKEN.match(rest, pos)
        if m is None:
            ch = rest[pos]
            raise _Refused(ch, f"p4c's STF lexer has no token for {ch!r} in {column_text!r} "
                               "(its run stops with a LexError)")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind == "comment":
            break
        if kind == "ws":
            continue
        text = m.group()
        if kind == "qid":
            kind, text = "id", text[1:-1]
        elif kind == "id" and text.lower() in _COUNT_TYPES:
            kind = text.lower()
        toks.append(_Tok(kind, text, m.start(), m.end()))
    toks.append(_Tok("end", ""))
    return toks


class _Statement:
    """Recursive descent over one line's tokens, after the command word."""

    def __init__(self, command: str, toks: list[_Tok]) -> None:
        self.command = command
        self.toks = toks
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def fail(self, want: str) -> _Refused:
        tok = self.peek()
        if tok.kind == "end":
            return _Refused(self.command, f"p4c's parser wants {want} here, the line ends")
        if tok.kind in _COUNT_TYPES and "name" in want:
            return _Refused(tok.text, f"'{tok.text}' is a keyword in p4c's STF lexer and cannot be a name")
        return _Refused(tok.text, f"p4c's parser wants {want} here")

    def punct(self, p: str) -> None:
        tok = self.peek()
        if tok.kind != "punct" or tok.text != p:
            raise self.fail(f"'{p}'")
        self.take()

    def at(self, p: str) -> bool:
        tok = self.peek()
        return tok.kind == "punct" and tok.text == p

    def name(self) -> str:
        """qualified_name: ID ['[' DEC ']'] ('.' ID)*"""
        tok = self.peek()
        if tok.kind != "id":
            raise self.fail("a name")
        self.take()
        text = tok.text
        if self.at("["):
            self.take()
            if self.peek().kind != "dec":
                raise self.fail("a decimal index")
            text += f"[{self.take().text}]"
            self.punct("]")
        while self.at("."):
            self.take()
            if self.peek().kind != "id":
                raise self.fail("a name after '.'")
            text += "." + self.take().text
        if self.at("["):
            raise _Refused(text + "[", "p4c's STF names take an index only on their first part")
        return text

    def number(self, decimal: bool = False) -> _Tok:
        tok = self.peek()
        if tok.kind not in ("dec", "hex", "bin"):
            raise self.fail("a number (decimal, 0x or 0b)")
        after = self.toks[self.i + 1]
        if after.start == tok.end and after.kind in ("id", "dec", "hex", "bin", "packets", "bytes"):
            raise _Refused(tok.text + after.text, "not one number in p4c's STF, which takes decimal, 0x and 0b "
                                                  "numbers only (no 0o, no '_', no suffix)")
        if decimal and tok.kind != "dec":
            raise _Refused(tok.text, f"{self.command} goes to simple_switch_CLI, which reads decimal numbers only")
        if decimal and "*" in tok.text:
            raise _Refused(tok.text, f"{self.command} takes no '*' digits")
        return self.take()

    def value(self) -> None:
        """A number given to ``table_add`` (``int(x, 0)``: no leading zeros in decimals)."""
        tok = self.number()
        if tok.kind == "dec" and len(tok.text) > 1 and tok.text.startswith("0"):
            raise _Refused(tok.text, "simple_switch_CLI reads table values with int(x, 0), "
                                     "which refuses decimals with a leading zero")

    def action(self) -> None:
        """action: name '(' [ID ':' number (',' ID ':' number)*] ')'"""
        self.punct("(")
        if not self.at(")"):
            while True:
                tok = self.peek()
                if tok.kind != "id":
                    raise self.fail("an action parameter name (p4c takes name:value only)")
                self.take()
                self.punct(":")
                if "*" in self.peek().text:
                    raise _Refused(self.peek().text, "an action parameter takes no '*' digits")
                self.value()
                if not self.at(","):
                    break
                self.take()
        self.punct(")")

    def end(self) -> None:
        if self.peek().kind != "end":
            raise self.fail("the end of the line")


def _check_add(st: _Statement) -> None:
    st.name()
    if st.peek().kind == "dec":
        st.take()
    keys = 0
    while True:
        name = st.name()
        if st.at(":"):
            st.take()
            st.value()
            if st.at("/"):
                st.take()
                st.number(decimal=True)
            keys += 1
            continue
        if st.at("("):
            if keys == 0:
                raise _Refused(name, "p4c's add needs at least one key before the action")
            st.action()
            break
        raise st.fail("':' after a key or '(' after an action")
    if st.at("="):
        st.take()
        if st.peek().kind != "id":
            raise st.fail("an entry name after '='")
        st.take()
    st.end()


def _check_check_counter(st: _Statement) -> None:
    name = st.name()
    if "." in name or "[" in name:
        raise _Refused(name, "check_counter takes a bare counter name (p4c's grammar has ID, not a dotted name)")
    st.punct("(")
    if st.peek().kind == "id":
        st.take()
    else:
        st.number()
    st.punct(")")
    if st.peek().kind == "end":
        return
    if st.peek().kind not in _COUNT_TYPES:
        raise st.fail("'packets' or 'bytes' before the comparison")
    st.take()
    tok = st.peek()
    if tok.kind != "punct" or tok.text not in _COMPARISONS:
        raise st.fail("one of " + " ".join(_COMPARISONS))
    st.take()
    st.number()
    st.end()


_CLI_USAGE = {
    "counter_read": "counter_read <counter> <index> (it prints the count; to check one, "
                    "use check_counter <counter>(<index>) packets == <n>)",
    "register_read": "register_read <register> <index> (it prints the value and checks nothing)",
}


def _check_cli(st: _Statement, shape: tuple[str, ...]) -> None:
    if st.command.lower() in _CLI_USAGE and len(st.toks) - 1 > len(shape):
        raise _Refused(st.command, "p4c takes " + _CLI_USAGE[st.command.lower()] + "; an expected value is innet-only")
    for arg in shape:
        if arg == "q":
            st.name()
        elif arg == "n":
            st.number(decimal=True)
        elif arg == "n+":
            st.number(decimal=True)
            while st.peek().kind != "end":
                st.number(decimal=True)
        else:  # meter rates: (number | number.number) ':' number, one or more
            while True:
                st.number(decimal=True)
                if st.at("."):
                    st.take()
                    st.number(decimal=True)
                st.punct(":")
                st.number(decimal=True)
                if st.peek().kind == "end":
                    break
    st.end()


def _check_packet_data(command: str, rest: str) -> None:
    toks: list[tuple[str, str]] = []
    pos = 0
    while pos < len(rest):
        m = _DATA.match(rest, pos)
        if m is None:
            ch = rest[pos]
            if ch == "#":
                raise _Refused("#", f"p4c's lexer takes no comment on a {command} line (put it on its own line)")
            if rest[max(pos - 1, 0):pos + 1].lower() == "0x":
                raise _Refused("0x", f"{command} data is bare hex digits in p4c's STF, without 0x")
            raise _Refused(ch, f"p4c's lexer has no packet-data token for {ch!r} (its run stops with a LexError)")
        pos = m.end()
        if m.lastgroup != "ws":
            toks.append((m.lastgroup or "", m.group()))
    if not toks or toks[0][0] != "dec":
        raise _Refused(command, f"p4c's {command} starts with a decimal port")
    data = toks[1:]
    if command == "packet":
        if not data:
            raise _Refused(command, "p4c's packet needs data after the port")
        bad = next((t for k, t in data if k not in ("dec", "hex")), None)
        if bad is not None:
            raise _Refused(bad, "packet data is hex digits only")
        if len("".join(t for _, t in data)) % 2:
            raise _Refused(command, "packet data must be whole bytes (an even number of hex digits)")
        return
    if not data:
        raise _Refused(command, "p4c's driver does not count a bare 'expect <port>' as one packet; "
                                "write its bytes, or '*' for any content")
    if any(k == "exact" for k, _ in data[:-1]):
        raise _Refused("$", "'$' may only end the expected data")


def _check_line(text: str) -> None:
    stripped = text.strip(" \t")
    if "\r" in stripped:
        raise _Refused("\\r", "p4c's STF lexer has no token for a carriage return (write LF line ends)")
    m = re.match(r"[a-z$A-Z_][a-z$A-Z_0-9]*", stripped)
    if m is None:
        raise _Refused(stripped.split()[0], "p4c's STF lines start with a command")
    command = m.group().lower()
    rest = stripped[m.end():]
    if command in ("packet", "expect"):
        _check_packet_data(command, rest)
        return
    if command in _REFUSED_COMMANDS:
        raise _Refused(m.group(), _REFUSED_COMMANDS[command])
    st = _Statement(m.group(), _lex(rest, stripped))
    if command == "add":
        _check_add(st)
    elif command == "setdefault":
        st.name()
        st.name()
        st.action()
        st.end()
    elif command == "wait":
        st.end()
    elif command == "check_counter":
        _check_check_counter(st)
    elif command in _CLI_COMMANDS:
        _check_cli(st, _CLI_COMMANDS[command])
    else:
        raise _Refused(m.group(), "not a command of p4c's STF (innet STF dialect only)")


def check_p4c_dialect(text: str) -> list[Problem]:
    """Every line of ``text`` that p4c's BMv2 STF driver would refuse, in order (empty if none)."""
    problems = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip(" \t") or line.strip(" \t").startswith("#"):
            continue
        try:
            _check_line(line)
        except _Refused as e:
            problems.append(Problem(lineno, e.construct, e.reason))
    return problems
