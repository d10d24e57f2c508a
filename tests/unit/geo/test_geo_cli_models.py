"""``innet geo --model`` / ``--task``: every numpy model and task reachable from the command line,
each model trained on a task whose feeds it takes, and a mismatch or bad value refused in one
line with exit status 2."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from innet.host.geo.graph import loss_and_grads
from innet.host.geo.stage_process import build_model, build_task
from innet.host.geo.specs import GptSpec, MlpSpec, TextSpec
from innet.testbed.geo.config import MODEL_TASKS, GeoBenchConfig, GeoBenchError


def _innet(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "innet.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("model, task", [(m, t) for m, tasks in MODEL_TASKS.items() for t in tasks])
def test_every_model_builds_and_trains_on_its_tasks_feeds(model: str, task: str) -> None:
    config = GeoBenchConfig(task=task, model=model, seq=16)
    graph = build_model(config.model_spec())
    data = build_task(config.task_spec(), 0)
    feeds = next(data.batches(4, 1, 0))[0]
    loss, grads = loss_and_grads(graph, feeds, graph.init_params(0))
    assert math.isfinite(loss) and grads, (model, task, loss)
    assert graph.name == model


def test_the_task_picks_its_own_model_by_default() -> None:
    assert isinstance(GeoBenchConfig(task="digits").model_spec(), MlpSpec)
    assert isinstance(GeoBenchConfig(task="lm").model_spec(), GptSpec)
    text = GeoBenchConfig(task="text").model_spec()
    assert isinstance(text, GptSpec) and text.vocab == build_task(TextSpec(seq=16), 0).vocab


@pytest.mark.parametrize("kwargs, message", [
    ({"task": "lm", "model": "resnet"}, "geo bench model 'resnet' does not take task 'lm''s feeds: use it with digits"),
    ({"task": "digits", "model": "gpt2"}, "use it with lm or text"),
    ({"task": "text", "model": "gpt2", "width": 100}, "gpt2: width 100 must be a multiple of 64"),
    ({"task": "text", "seq": 1}, "task text: seq 1 must be >= 2"),
    ({"task": "digits", "model": "mlp", "torch_model": "mlp"}, "not with a torch model"),
])
def test_a_model_that_does_not_fit_is_refused_by_the_config(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(GeoBenchError, match=message.replace("(", r"\(")):
        GeoBenchConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("argv, message", [
    (["--model", "vgg"], "argument --model: invalid choice: 'vgg'"),
    (["--task", "images"], "argument --task: invalid choice: 'images'"),
    (["--model", "resnet", "--task", "lm"], "innet geo bench: model 'resnet' does not take task 'lm''s feeds"),
])
def test_bad_model_or_task_is_one_line_and_exit_2(argv: list[str], message: str) -> None:
    proc = _innet("geo", "bench", *argv)
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert message in last and "Traceback" not in proc.stderr


def test_help_names_the_models_tasks_and_defaults() -> None:
    out = _innet("geo", "bench", "--help").stdout
    for word in ("--model {mlp,resnet,gpt,gpt2}", "--task {digits,lm,text}", "default: mlp for digits",
                 "(default: digits)"):
        assert word in " ".join(out.split()), word


def test_resnet_plan_and_bench_from_the_command_line(tmp_path: Path) -> None:
    plan = _innet("geo", "plan", "--model", "resnet")
    assert plan.returncode == 0, plan.stderr
    assert "ops img.." in plan.stdout  # the first stage starts at the ResNet's image reshape
    bench = _innet("geo", "bench", "--model", "resnet", "--steps", "2", "--runs", "opfence/none", "--loopback",
                   "--eval-every", "1", "--out", str(tmp_path), timeout=300.0)
    assert bench.returncode == 0, bench.stderr
    doc = json.loads(next(tmp_path.glob("geo-bench-*.json")).read_text())
    assert doc["settings"]["model"] == "resnet", doc["settings"]
    assert [r["placement"] for r in doc["rows"]] == ["opfence"]


def test_text_task_with_gpt2_from_the_command_line() -> None:
    plan = _innet("geo", "plan", "--task", "text", "--model", "gpt2", "--width", "64")
    assert plan.returncode == 0, plan.stderr
    assert "ops emb.." in plan.stdout


def test_a_refusal_is_exactly_one_line_with_the_command_named_once() -> None:
    """The library's message names the bench for its own callers; the command's line says
    ``innet geo bench:`` once, not ``innet geo bench: geo bench: ...``."""
    proc = _innet("geo", "bench", "--runs", "dp/adatopk")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "innet geo bench: run dp/adatopk: data parallel takes none, int8 or topk"], proc.stderr
    proc = _innet("geo", "bench", "--model", "resnet", "--task", "lm")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "innet geo bench: model 'resnet' does not take task 'lm''s feeds: use it with digits"], proc.stderr
