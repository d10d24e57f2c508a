"""innet.names: one lookup rule (exact, else dotted suffix) and one "did you mean" for
the front-end, the executor, the STF runner and the controller."""

from __future__ import annotations

import pytest

from innet.names import by_suffix, close_matches, did_you_mean, short_name

NAMES = ["MyIngress.ipv4_lpm", "MyIngress.acl", "MyEgress.acl", "NoAction"]


def test_exact_name_wins_over_suffixes() -> None:
    assert by_suffix("NoAction", NAMES + ["X.NoAction"]) == ["NoAction"]


@pytest.mark.parametrize("name, hits", [
    ("ipv4_lpm", ["MyIngress.ipv4_lpm"]),
    ("MyIngress.ipv4_lpm", ["MyIngress.ipv4_lpm"]),
    ("acl", ["MyIngress.acl", "MyEgress.acl"]),
    ("lpm", []),             # a suffix is whole components, not characters
    ("Ingress.acl", []),
])
def test_dotted_suffix(name: str, hits: list[str]) -> None:
    assert by_suffix(name, NAMES) == hits


def test_short_name() -> None:
    assert short_name("MyIngress.ipv4_lpm") == "ipv4_lpm" and short_name("x") == "x"


def test_close_matches_compare_full_and_short_names() -> None:
    assert close_matches("ipv4_lmp", NAMES) == ["MyIngress.ipv4_lpm"]
    assert close_matches("MyIngres.ipv4_lpm", NAMES)[0] == "MyIngress.ipv4_lpm"
    assert close_matches("acll", NAMES, n=2) == ["MyIngress.acl", "MyEgress.acl"]
    assert close_matches("zzz", NAMES) == []


def test_did_you_mean_text() -> None:
    assert did_you_mean("ipv4_lmp", NAMES) == " Did you mean 'MyIngress.ipv4_lpm'?"
    assert did_you_mean("acll", NAMES, n=2) == " Did you mean 'MyIngress.acl' or 'MyEgress.acl'?"
    assert did_you_mean("zzz", NAMES) == ""
    assert did_you_mean("a", ["b", "b"]) == ""


def test_every_layer_uses_it() -> None:
    """The executor's, the controller's and the front-end's messages come from here."""
    from innet.controller.errors import UnknownNameError
    from innet.switch.frontend.symbols import did_you_mean as frontend_did_you_mean

    assert frontend_did_you_mean is did_you_mean
    error = UnknownNameError("table", "ipv4_lmp", NAMES)
    assert str(error) == "no table named 'ipv4_lmp' in the P4Info. Did you mean 'MyIngress.ipv4_lpm'?"
