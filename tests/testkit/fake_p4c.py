"""A stand-in ``p4c-bm2-ss`` for machines without p4c: it writes innet's P4Info (the same
ids p4c gives, by design) and a JSON shaped like BMv2's (``header_types``, ``pipelines``),
padded to a chosen size, so that choosing the config by the switch it goes to can be tested
with the sizes real BMv2 JSONs have (innet.p4 at K=256 is about 10.8 MB).

    p4c = fake_p4c_bm2_ss(tmp_path / "bin", json_bytes=10_000_000)
    monkeypatch.setenv("INNET_P4C", str(p4c))
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

_SCRIPT = """#!{python}
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
args = sys.argv[1:]
defines = dict((d.split("=", 1) + [None])[:2] for d in (args[i + 1] for i, a in enumerate(args) if a == "-D"))
defines.update(dict((a[2:].split("=", 1) + [None])[:2] for a in args if a.startswith("-D") and a != "-D"))
from innet.switch.device_config import build
Path(args[args.index("--p4runtime-files") + 1]).write_text(str(build(args[-1], defines=defines).p4info))
from testkit.fake_p4c import bmv2_json
Path(args[args.index("-o") + 1]).write_bytes(bmv2_json({size}))
"""


def bmv2_json(size: int = 200) -> bytes:
    """A JSON document with BMv2's top-level keys, at least ``size`` bytes long."""
    doc = {"header_types": [], "headers": [], "parsers": [], "pipelines": [{"name": "ingress", "tables": []}],
           "__meta__": {"version": [2, 23], "compiler": "stand-in p4c-bm2-ss"}, "padding": ""}
    text = json.dumps(doc, indent=2)
    return text.replace('"padding": ""', '"padding": "' + "x" * max(0, size - len(text)) + '"').encode()


def fake_p4c_bm2_ss(bin_dir: Path, json_bytes: int = 200) -> Path:
    """An executable named ``p4c-bm2-ss`` in ``bin_dir`` taking p4c-bm2-ss's flags (both
    ``innet.controller.compiler`` and ``innet.testbed.backends.bmv2`` command lines)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "p4c-bm2-ss"
    path.write_text(_SCRIPT.format(python=sys.executable, tests=str(Path(__file__).resolve().parents[1]),
                                   size=json_bytes))
    path.chmod(0o755)
    return path
