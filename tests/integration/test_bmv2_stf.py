"""The differential STF tier: every STF test of the repository on real BMv2 too.

Each ``.stf`` under ``p4/`` and ``tests/`` (what the embedded target runs: the suites, the
BMv2-confirmed corpus, the native differential set) is compiled with ``p4c-bm2-ss`` and run
on ``simple_switch`` by ``innet.testbed.backends.bmv2_stf``; a disagreement fails naming the
file, line, port and expected vs sent bytes. A ``NAME.innet.stf`` is skipped with the reason
on its first line; a line BMv2 cannot express fails with its located reason (the repository
keeps such tests in ``.innet.stf`` files). Without the toolchain every item skips naming the
missing binary (``INNET_P4_PREFIX=/nonexistent`` shows it).

With ``INNET_P4C_SAMPLES=DIR`` (p4c's ``testdata/p4_16_samples``, or a p4c checkout) the same
runner also takes p4c's own v1model samples (the ones ``innet conformance --p4c-samples``
runs), as the check that the runner reads STF as p4c's driver does. docs/p4c-compat.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from innet.conformance import stf_files
from innet.p4c_samples import resolve_samples_dir, sample_names
from innet.testbed.backends.bmv2 import Bmv2Error, Bmv2Missing
from innet.testbed.backends.bmv2_ahead import CompileAhead
from innet.switch.stf_dialect import program_for
from innet.testbed.backends.bmv2_stf import Bmv2Skip, Bmv2StfTools, find_stf_tools, innet_only_reason, run_bmv2_stf
from innet.testbed.backends.bmv2_stf_cli import Bmv2Unsupported

REPO = Path(__file__).resolve().parents[2]
STF = stf_files(REPO / "p4") + stf_files(REPO / "tests")


def _tools() -> Bmv2StfTools:
    try:
        return find_stf_tools()
    except Bmv2Missing as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="module")
def compile_ahead(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CompileAhead | None]:
    """The programs of the STF items this pytest run selected, compiled in the background in the
    order the items run (``bmv2_ahead``); None without the toolchain."""
    try:
        tools = find_stf_tools()
    except Bmv2Missing:
        yield None
        return
    selected = [item.callspec.params["stf"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_stf_agrees_on_bmv2"]
    sources = [program_for(stf) for stf in selected if innet_only_reason(stf) is None]
    with CompileAhead(tools.p4c, sources, tmp_path_factory.mktemp("p4c-ahead")) as ahead:
        yield ahead


@pytest.mark.slow
@pytest.mark.parametrize("stf", STF, ids=[str(p.relative_to(REPO)) for p in STF])
def test_stf_agrees_on_bmv2(stf: Path, tmp_path: Path, compile_ahead: CompileAhead | None) -> None:
    reason = innet_only_reason(stf)
    if reason is not None:
        pytest.skip(reason)
    tools = _tools()
    if compile_ahead is not None:
        compile_ahead.wait(program_for(stf))
    failure = None
    try:
        result = run_bmv2_stf(stf, tools, tmp_path)
    except Bmv2Skip as skip:
        pytest.skip(str(skip))
    except (Bmv2Unsupported, Bmv2Error) as e:
        failure = str(e)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    assert result.agreed, result.message
    assert result.packets > 0 or "packet" not in stf.read_text(), result.message


def test_the_tier_covers_the_suites() -> None:
    names = {str(p.relative_to(REPO)) for p in STF}
    assert {"p4/innet.stf", "p4/innet/tests/forward_arp.stf", "tests/conformance/v1model/field_list_const.stf",
            "tests/unit/native_diff/meters.stf"} <= names
    assert len(STF) >= 100


SAMPLES = sample_names()


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLES)
def test_p4c_sample_agrees_on_bmv2(name: str, tmp_path: Path) -> None:
    where = os.environ.get("INNET_P4C_SAMPLES")
    if not where:
        pytest.skip("INNET_P4C_SAMPLES (p4c's testdata/p4_16_samples) is not set")
    tools = _tools()
    p4 = resolve_samples_dir(Path(where)) / name
    failure = None
    try:
        result = run_bmv2_stf(p4.with_suffix(".stf"), tools, tmp_path, p4=p4)
    except (Bmv2Unsupported, Bmv2Error) as e:
        failure = str(e)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    assert result.agreed, result.message
