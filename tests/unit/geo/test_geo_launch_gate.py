"""Several pipelines probe one at a time and train together: ``launch`` starts a pipeline once
the one before reported its links probed, and opens the start file after the last."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from innet.host.geo.launch import launch
from innet.host.geo.specs import DigitsSpec, MlpSpec
from innet.host.geo.stage_process import StageJob

# A stand-in for a stage process: listens (stages > 0), and as the first stage marks and
# reports its pipeline probed, waits for the start file, and says whether it found it.
FAKE_STAGE = """
import json, os, sys, time
job, marks = json.loads(sys.argv[1]), sys.argv[2]
if job["index"] > 0:
    print(json.dumps({"event": "listening", "port": 1}), flush=True)
else:
    open(os.path.join(marks, "probed-%d" % job["data_seed"]), "w").close()
    print(json.dumps({"event": "probed"}), flush=True)
    start = job["start_file"]
    deadline = time.monotonic() + 30
    while start is not None and not os.path.exists(start) and time.monotonic() < deadline:
        time.sleep(0.01)
    print(json.dumps({"event": "started", "gate": start, "open": start is not None and os.path.exists(start)}),
          flush=True)
"""


def _jobs(pipeline: int) -> list[StageJob]:
    return [StageJob(model=MlpSpec((4, 3)), task=DigitsSpec(), cuts=(1,), index=i, steps=1, data_seed=pipeline)
            for i in range(2)]


def test_pipelines_are_started_after_the_one_before_probed_and_train_once_all_have(tmp_path: Path) -> None:
    spawned: list[tuple[int, int, list[str]]] = []

    def spawn(job: Any, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        spawned.append((job.data_seed, job.index, sorted(os.listdir(tmp_path))))
        return subprocess.Popen([sys.executable, "-c", FAKE_STAGE, job.to_json(), str(tmp_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    out = launch([_jobs(0), _jobs(1), _jobs(2)], spawn=spawn, timeout=60.0)
    # each pipeline was started only once every pipeline before it had probed
    for pipeline, _, marks in spawned:
        assert marks == [f"probed-{p}" for p in range(pipeline)], spawned
    started = [pipe[0].of("started")[0] for pipe in out]
    assert all(s["open"] for s in started) and len({s["gate"] for s in started}) == 1
    assert not Path(started[0]["gate"]).parent.exists()  # the gate's directory is removed afterwards


def test_one_pipeline_or_no_probe_has_no_gate(tmp_path: Path) -> None:
    def spawn(job: Any, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", FAKE_STAGE, job.to_json(), str(tmp_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    out = launch([_jobs(0)], spawn=spawn, timeout=60.0)
    assert out[0][0].of("started")[0]["gate"] is None
    silent = [[replace(j, probe=False) for j in _jobs(p)] for p in range(2)]
    assert all(pipe[0].of("started")[0]["gate"] is None for pipe in launch(silent, spawn=spawn, timeout=60.0))
