"""Re-planning at a step boundary: stages of a new partition start from the
parameters the old partition's stages wrote, each taking its own nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from innet.host.geo.launch import launch
from innet.host.geo.specs import DigitsSpec, MlpSpec
from innet.host.geo.stage_process import MOMENTUM, StageJob, load_params

SIZES = [64, 32, 24, 10]  # fc0 relu0 fc1 relu1 fc2 loss


def _jobs(cuts: tuple[int, ...], tmp: Path, tag: str, lr: float, params_in: tuple[str, ...] = ()) -> list[StageJob]:
    return [StageJob(model=MlpSpec(tuple(SIZES)), task=DigitsSpec(), cuts=cuts, index=i, steps=2,
                     batch=16, lr=lr, probe=False, params_out=str(tmp / f"{tag}{i}.npz"), params_in=params_in,
                     timeout=30.0)
            for i in range(len(cuts) + 1)]


def test_a_new_partition_starts_from_the_old_stages_parameters(tmp_path: Path) -> None:
    launch([_jobs((2,), tmp_path, "old", lr=0.1)], timeout=120.0)
    old: dict[str, dict[str, np.ndarray]] = {}
    for f in sorted(tmp_path.glob("old*.npz")):
        old.update(load_params(f))
    # lr 0: the new stages' parameters after two steps are the ones they started from
    files = tuple(str(f) for f in sorted(tmp_path.glob("old*.npz")))
    launch([_jobs((1, 4), tmp_path, "new", lr=0.0, params_in=files)], timeout=120.0)
    new: dict[str, dict[str, np.ndarray]] = {}
    for f in sorted(tmp_path.glob("new*.npz")):
        new.update(load_params(f))
    assert sorted(new) == sorted(old) == ["fc0", "fc1", "fc2"]
    launch([_jobs((1, 4), tmp_path, "fresh", lr=0.0)], timeout=120.0)
    fresh: dict[str, dict[str, np.ndarray]] = {}
    for f in sorted(tmp_path.glob("fresh*.npz")):
        fresh.update(load_params(f))
    for n in old:
        for k in old[n]:
            np.testing.assert_array_equal(new[n][k], old[n][k])
            assert not np.array_equal(fresh[n][k], old[n][k])  # the old run trained them


def test_a_resumed_pipeline_continues_exactly_with_momentum_and_data_order(tmp_path: Path) -> None:
    """Stopping after 2 steps and starting again from the written parameters and momentum, 2
    steps of batches skipped, ends where 4 uninterrupted steps end: the optimizer state is
    carried and the data order kept (a re-plan at a step boundary loses nothing)."""
    def jobs(steps: int, tag: str, params_in: tuple[str, ...] = (), skip: int = 0) -> list[StageJob]:
        return [StageJob(model=MlpSpec(tuple(SIZES)), task=DigitsSpec(), cuts=(2,), index=i,
                         steps=steps, batch=16, lr=0.1, momentum=0.9, probe=False,
                         params_out=str(tmp_path / f"{tag}{i}.npz"), params_in=params_in, skip_steps=skip,
                         timeout=30.0)
                for i in range(2)]

    launch([jobs(4, "whole")], timeout=120.0)
    launch([jobs(2, "first")], timeout=120.0)
    first = tuple(str(f) for f in sorted(tmp_path.glob("first*.npz")))
    launch([jobs(2, "second", first, skip=2)], timeout=120.0)
    whole: dict[str, dict[str, np.ndarray]] = {}
    second: dict[str, dict[str, np.ndarray]] = {}
    for f in sorted(tmp_path.glob("whole*.npz")):
        whole.update(load_params(f))
    for f in sorted(tmp_path.glob("second*.npz")):
        second.update(load_params(f))
    assert sorted(whole) == sorted(second) == ["fc0", "fc1", "fc2"]
    for n in whole:
        for k in whole[n]:
            np.testing.assert_array_equal(second[n][k], whole[n][k])
    momentum = load_params(tmp_path / "first0.npz", MOMENTUM)
    assert momentum and all(np.any(v) for p in momentum.values() for v in p.values())
