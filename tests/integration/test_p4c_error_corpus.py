"""p4c's error corpus as a tier: every program p4c rejects, rejected by ``innet-p4c``.

``testdata/p4_16_errors`` holds programs p4c's front-end rejects; each must be rejected with
one located error (``file:line:col: error: ...`` in the program itself) and no traceback.
``testdata/p4_16_bmv_errors`` holds programs p4c's BMv2 back end rejects; each must be
rejected the same way, or accepted with a warning that BMv2 rejects it (an extension innet's
target runs, listed in docs/p4c-compat.md).

The corpus is a fetched copy of p4c's tree (innet keeps none of it): ``INNET_P4C_ERRORS=DIR``
(a p4c checkout, its ``testdata``, or an extract of it), else ``/opt/p4c-testdata``; without
it the tier skips naming the missing corpus.  ``innet conformance --p4c-errors DIR`` prints
the same outcomes as counts.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from innet.p4c_errors import CORPORA, DEFAULT_DIR, ENV_VAR, ErrorsDirError, Outcome, classify, corpus_dirs
from innet.switch.frontend.preprocess import P4_INCLUDE_DIR

_ERROR_LINE = re.compile(r"^(?P<file>[^\s:][^:]*):\d+:\d+: error: ", re.M)


def _where() -> Path:
    raw = os.environ.get(ENV_VAR)
    return Path(raw) if raw else DEFAULT_DIR


def _programs() -> list[tuple[str, Path | None]]:
    try:
        found = corpus_dirs(_where())
    except ErrorsDirError:
        return [(c, None) for c in CORPORA]
    return [(f"{c}/{p.name}", p) for c in CORPORA if c in found for p in sorted(found[c].glob("*.p4"))]


PROGRAMS = _programs()


@pytest.mark.parametrize("key,path", [pytest.param(k, p, id=k) for k, p in PROGRAMS])
def test_p4c_rejects_so_does_innet(key: str, path: Path | None) -> None:
    if path is None:
        pytest.skip(f"p4c's error corpus {key} not found: set {ENV_VAR} to a p4c checkout (or extract "
                    f"testdata/{key} to {DEFAULT_DIR}/testdata/{key})")
    r = classify(path, key.split("/")[0])
    assert r.outcome is not Outcome.TRACEBACK, r.message
    if r.outcome is Outcome.WARNED:
        assert r.corpus == "p4_16_bmv_errors", f"only BMv2 back-end limits may be warned about: {r.message}"
        return
    assert r.outcome is Outcome.LOCATED, f"{r.outcome.value}: {r.message}"
    errors = _ERROR_LINE.findall(r.message)
    # the program itself, or (V1MODEL_VERSION) the include where the program's value lands, as in p4c
    assert len(errors) == 1 and (errors[0] == str(path) or Path(errors[0]).parent == P4_INCLUDE_DIR), \
        f"expected one error located in {path}:\n{r.message}"
