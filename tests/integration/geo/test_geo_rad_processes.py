"""RAD across 3 emulated sites: three stage processes on loopback TCP train the same model
as one process would (float64, so equal to rounding)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from innet.host.geo.channel import LinkShape
from innet.host.geo.data import Digits
from innet.host.geo.graph import loss_and_grads, mlp
from innet.host.geo.launch import LaunchError, launch
from innet.host.geo.specs import DigitsSpec, MlpSpec, TorchSpec
from innet.host.geo.stages import Sgd, SgdState
from innet.host.geo.stage_process import StageJob, load_params


def _reference(sizes, steps, batch, microbatches, lr, momentum):
    g = mlp(sizes)
    params = {n: {k: v.astype(np.float64) for k, v in p.items()} for n, p in g.init_params(0).items()}
    opt = SgdState(Sgd(lr, momentum))
    batches = Digits.load(0).batches(batch, microbatches, 0)
    losses = []
    for _ in range(steps):
        mbs = next(batches)
        acc: dict = {}
        total = 0.0
        for f in mbs:
            f = {"x": f["x"].astype(np.float64), "y": f["y"]}
            loss, gr = loss_and_grads(g, f, params, 1.0 / len(mbs))
            total += loss / len(mbs)
            for n, gp in gr.items():
                for k, v in gp.items():
                    acc.setdefault(n, {})[k] = acc.get(n, {}).get(k, 0) + v
        opt.step(params, acc)
        losses.append(total)
    return params, losses


@pytest.mark.slow
def test_three_site_processes_equal_single_process(tmp_path: Path) -> None:
    sizes = [64, 32, 24, 10]  # fc0 relu0 fc1 relu1 fc2 loss
    steps, batch, mbs, lr, mom = 6, 16, 2, 0.1, 0.9
    cuts = (2, 4)
    jobs = [StageJob(model=MlpSpec(tuple(sizes)), task=DigitsSpec(), cuts=cuts, index=i,
                     steps=steps, batch=batch, microbatches=mbs, dtype="float64", lr=lr, momentum=mom,
                     shape_next=LinkShape(bw_mbps=100.0, delay_ms=2.0) if i < 2 else None,
                     shape_prev=LinkShape(bw_mbps=100.0, delay_ms=2.0) if i > 0 else None,
                     params_out=str(tmp_path / f"stage{i}.npz"), timeout=30.0) for i in range(3)]
    out = launch([jobs], timeout=60.0)[0]
    ref_params, ref_losses = _reference(sizes, steps, batch, mbs, lr, mom)
    losses = [r["loss"] for r in out[2].of("step")]
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10)
    got = {}
    for i in range(3):
        got.update(load_params(tmp_path / f"stage{i}.npz"))
    assert set(got) == set(ref_params)
    for n, p in ref_params.items():
        for k, v in p.items():
            np.testing.assert_allclose(got[n][k], v, rtol=1e-9, atol=1e-12)
    assert out[2].of("eval") and 0.0 <= out[2].of("eval")[-1]["accuracy"] <= 1.0
    done0 = out[0].of("done")[0]
    assert done0["sent_next"] > 0 and 20e6 < done0["bandwidth_next_bps"] < 200e6


def test_a_failing_stage_is_reported_with_its_message() -> None:
    job = StageJob(model=MlpSpec((64, 10)), task=DigitsSpec(), cuts=(1,), index=0,
                   steps=1, next_address=None, timeout=5.0)
    with pytest.raises(LaunchError, match="next_address is required"):
        launch([[job]], timeout=30.0)


@pytest.mark.slow
def test_numpy_site_and_torch_sites_equal_one_torch_process(tmp_path: Path) -> None:
    """Heterogeneous software across processes: a torch.fx-traced MLP whose
    stage 0 runs the numpy operators and stages 1-2 torch autograd, over loopback TCP, ends
    where the module trained in one torch process ends."""
    torch = pytest.importorskip("torch", reason="torch (optional dependency) is not installed")
    from innet.host.geo.torch_models import mlp as torch_mlp

    sizes = [64, 32, 24, 10]  # layers_0 acts_0 | layers_1 acts_1 | layers_2 loss
    steps, batch, mbs, lr, mom = 5, 16, 2, 0.1, 0.9
    cuts = (2, 4)
    spec = TorchSpec(factory="innet.host.geo.torch_models:mlp", kwargs={"sizes": sizes}, seed=7, target="y",
                     numpy_nodes=("layers_0", "acts_0"))
    jobs = [StageJob(model=spec, task=DigitsSpec(), cuts=cuts, index=i, steps=steps, batch=batch,
                     microbatches=mbs, dtype="float64", lr=lr, momentum=mom,
                     params_out=str(tmp_path / f"stage{i}.npz"), timeout=60.0) for i in range(3)]
    out = launch([jobs], timeout=120.0)[0]
    torch.manual_seed(7)
    module = torch_mlp(sizes).double()
    opt = torch.optim.SGD(module.parameters(), lr=lr, momentum=mom)
    batches = Digits.load(0).batches(batch, mbs, 0)
    ref_losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(torch.nn.functional.cross_entropy(module(torch.from_numpy(f["x"].astype(np.float64))),
                                                     torch.from_numpy(f["y"])) for f in next(batches)) / mbs
        loss.backward()
        opt.step()
        ref_losses.append(float(loss.detach()))
    np.testing.assert_allclose([r["loss"] for r in out[2].of("step")], ref_losses, rtol=1e-9)
    got = {}
    for i in range(3):
        got.update(load_params(tmp_path / f"stage{i}.npz"))
    np.testing.assert_allclose(got["layers_0"]["w"], module.layers[0].weight.detach().numpy().T, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(got["layers_2"]["weight"], module.layers[2].weight.detach().numpy(), rtol=1e-9,
                               atol=1e-12)


def test_a_site_killed_mid_run_is_named_at_the_others_and_nothing_is_left() -> None:
    """A site killed mid-run: the middle site's process dies (SIGKILL) at step 3 of a long run; its
    neighbours see their links close, exit naming what failed, and the launch reports it well
    within the stages' 10 s receive deadline; no stage process is left."""
    import signal
    import subprocess
    import time

    from innet.host.geo.launch import local_spawn

    jobs = [StageJob(model=MlpSpec((64, 32, 24, 10)), task=DigitsSpec(), cuts=(2, 4),
                     index=i, steps=10_000, batch=16, microbatches=2, lr=0.1, timeout=10.0) for i in range(3)]
    popens: dict[int, subprocess.Popen[bytes]] = {}
    killed: list[float] = []

    def spawn(job: StageJob, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        popens[job.index] = local_spawn(job, name, argv)
        return popens[job.index]

    def on_record(job: StageJob, record: dict) -> None:
        if job.index == 2 and record.get("event") == "step" and record.get("step") == 3 and not killed:
            popens[1].send_signal(signal.SIGKILL)
            killed.append(time.monotonic())

    with pytest.raises(LaunchError) as failure:
        launch([jobs], spawn=spawn, timeout=120.0, on_record=on_record)
    assert killed, "the run ended before step 3"
    took = time.monotonic() - killed[0]
    assert took < 8.0, (took, str(failure.value))
    assert re.search(r"link 1-2: peer closed the link|stage 1 exited with status -9", str(failure.value)), \
        str(failure.value)
    assert all(p.poll() is not None for p in popens.values())
