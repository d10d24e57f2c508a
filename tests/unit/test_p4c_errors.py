"""``innet conformance --p4c-errors DIR`` and ``innet.p4c_errors`` on a tiny fake corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from innet.cli import main
from innet.p4c_errors import ErrorsDirError, Outcome, classify, corpus_dirs, run_errors

GOOD = """#include <core.p4>
#include <v1model.p4>
struct m_t { }
struct hs_t { }
parser P(packet_in pkt, out hs_t h, inout m_t m, inout standard_metadata_t sm) { state start { transition accept; } }
control VC(inout hs_t h, inout m_t m) { apply { } }
control I(inout hs_t h, inout m_t m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout hs_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t h, inout m_t m) { apply { } }
control D(packet_out pkt, in hs_t h) { apply { } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    errors = tmp_path / "testdata" / "p4_16_errors"
    bmv = tmp_path / "testdata" / "p4_16_bmv_errors"
    errors.mkdir(parents=True)
    bmv.mkdir(parents=True)
    (errors / "typo.p4").write_text(GOOD.replace("sm.egress_spec = 1;", "sm.egress_spec = nope;"))
    (errors / "no-main.p4").write_text("#include <core.p4>\nconst bit<8> x = 1;\n")
    (bmv / "fine-bmv2.p4").write_text(GOOD)
    return tmp_path


def test_outcomes_of_a_fake_corpus(corpus: Path) -> None:
    report = run_errors(corpus)
    by_name = {r.name: r for r in report.results}
    assert by_name["typo.p4"].outcome is Outcome.LOCATED
    assert "typo.p4:7:" in by_name["typo.p4"].first_line and "nope" in by_name["typo.p4"].first_line
    assert by_name["no-main.p4"].outcome is Outcome.UNLOCATED
    assert "top-level block" in by_name["no-main.p4"].first_line
    assert by_name["fine-bmv2.p4"].outcome is Outcome.ACCEPTED
    assert report.counts("p4_16_errors")[Outcome.LOCATED] == 1
    assert report.counts()[Outcome.ACCEPTED] == 1 and report.counts()[Outcome.TRACEBACK] == 0


def test_an_escaping_exception_is_a_traceback_outcome(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import innet.switch.device_config as dc

    def crash(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(dc, "build", crash)
    r = classify(corpus / "testdata" / "p4_16_errors" / "typo.p4")
    assert r.outcome is Outcome.TRACEBACK and r.message.startswith("RecursionError: maximum recursion")
    assert r.corpus == "p4_16_errors"


def test_a_warning_that_bmv2_rejects_is_its_own_outcome(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    import innet.switch.device_config as dc

    def warn(*args: object, **kwargs: object) -> None:
        logging.getLogger("innet.switch.frontend").warning("x.p4:1:1: warning: BMv2 rejects this; innet runs it")

    monkeypatch.setattr(dc, "build", warn)
    r = classify(corpus / "testdata" / "p4_16_bmv_errors" / "fine-bmv2.p4")
    assert r.outcome is Outcome.WARNED and "BMv2 rejects" in r.message


def test_corpus_dirs_takes_a_checkout_or_a_corpus(corpus: Path, tmp_path: Path) -> None:
    assert set(corpus_dirs(corpus)) == {"p4_16_errors", "p4_16_bmv_errors"}
    assert set(corpus_dirs(corpus / "testdata")) == {"p4_16_errors", "p4_16_bmv_errors"}
    assert set(corpus_dirs(corpus / "testdata" / "p4_16_bmv_errors")) == {"p4_16_bmv_errors"}
    with pytest.raises(ErrorsDirError, match="holds no p4c error corpus"):
        corpus_dirs(tmp_path / "testdata" / "nothing")


def test_cli_counts_outcomes_and_lists_the_rest(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--p4c-errors", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "p4_16_errors (2 programs): rejected-located 1, rejected-unlocated 1," in out
    assert "p4_16_bmv_errors (1 programs): " in out and "accepted 1" in out
    assert "p4_16_errors/no-main.p4" in out and "typo.p4" not in out  # only what is not rejected-located


def test_cli_bad_dir_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--p4c-errors", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("innet: ") and "nope" in err[0]
