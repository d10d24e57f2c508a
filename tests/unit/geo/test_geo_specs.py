"""The records a geo stage job carries (model, task, site data parallel) write the JSON the
stage processes have always read, and read it back to equal records."""

from __future__ import annotations

import json

import pytest

from innet.host.agent.transport import udp_transport
from innet.host.geo.opfence import LinkCost, Plan
from innet.host.geo.specs import DpAgentSpec, DpSpec, MlpSpec, ModelSpec, TaskSpec
from innet.host.geo.stage_process import StageJob
from innet.plans import PlanJsonError
from innet.testbed.geo.config import GeoBenchConfig
from innet.testbed.geo.jobs import stage_jobs

PLAN = Plan(order=(("s1h1", "s1h2"), ("s2h1", "s2h2"), ("s3h1", "s3h2")), cuts=(8, 16),
            stage_nodes=(("a",), ("b",), ("c",)), stage_compute_s=(0.01, 0.01, 0.01),
            links=(LinkCost(10, 40), LinkCost(100, 10)), boundary_bytes=(1, 1), reduce_s=(0, 0, 0),
            microbatches=4, step_s=1.0)

# One stage job's JSON as the stage process was sent it when model, task and dp were dicts.
JOB_JSON = (
    '{"model": {"kind": "gpt", "vocab": 32, "d": 32, "heads": 2, "layers": 2, "seq": 16}, '
    '"task": {"kind": "lm", "vocab": 32, "seq": 16}, "cuts": [8, 16], "index": 1, "steps": 100, "batch": 32, '
    '"microbatches": 4, "seed": 0, "data_seed": 1000, "task_seed": 0, "dtype": "float32", "lr": 0.05, '
    '"momentum": 0.9, "listen": ["127.0.0.1", 0], "next_address": null, '
    '"shape_next": {"bw_mbps": 100, "delay_ms": 10}, '
    '"shape_prev": {"bw_mbps": 10, "delay_ms": 40}, "compress_next": null, "compress_prev": {"mode": "adatopk", '
    '"ratio": 0.28125, "min_ratio": 0.28125, "max_ratio": 1.0, "feedback": true, "feedback_activations": false, '
    '"row_topk": true, "warmup_steps": 10, "warmup": "int8", "activations": "topk", "gradients": "int4", '
    '"reference": "key", "reference_key": "tokens", "reference_rate": 0.9, "values": "int8-bf16", "ratio_band": 0.25, '
    '"ratio_patience": 8}, "probe": true, "eval_every": 5, "params_out": null, "params_in": [], '
    '"start_file": null, "stop_file": null, '
    '"skip_steps": 0, "dp": {"agent": {"job": 7, "rank": 1, "num_workers": 2, "window": 16, "k": 4, "epoch": 3, '
    '"chunk_deadline": 0.5, "transport": {"kind": "udp", "switch_ip": "10.0.0.1", "local_ip": "10.0.0.2", '
    '"local_port": 40000}, "elements": 1234}, "replicas": 2}, "timeout": 300.0}')

AGENT = DpAgentSpec(job=7, rank=1, num_workers=2, window=16, k=4, epoch=3, chunk_deadline=0.5,
                    transport=udp_transport("10.0.0.1", "10.0.0.2", 40000), elements=1234)


def test_a_stage_job_of_records_sends_the_json_the_stage_process_reads() -> None:
    jobs = stage_jobs(GeoBenchConfig(task="lm"), PLAN, "adatopk", 1, lambda i, site: DpSpec(AGENT, 2))
    assert jobs[1].to_json() == JOB_JSON
    back = StageJob.from_json(JOB_JSON)
    assert back == jobs[1]
    assert back.dp is not None and back.dp.agent.transport == AGENT.transport


# Each kind's JSON as GeoBenchConfig wrote it (numpy nodes ("n1",) for the torch models).
SPEC_JSON = [
    (dict(task="digits"), '{"kind": "mlp", "sizes": [64, 128, 256, 32, 10]}', '{"kind": "digits"}'),
    (dict(task="lm"), '{"kind": "gpt", "vocab": 32, "d": 32, "heads": 2, "layers": 2, "seq": 16}',
     '{"kind": "lm", "vocab": 32, "seq": 16}'),
    (dict(task="text"), '{"kind": "gpt", "vocab": 46, "d": 32, "heads": 2, "layers": 2, "seq": 16}',
     '{"kind": "text", "seq": 16}'),
    (dict(task="lm", model="gpt2"), '{"kind": "gpt2", "vocab": 32, "width": 32, "seq": 16}',
     '{"kind": "lm", "vocab": 32, "seq": 16}'),
    (dict(task="digits", model="resnet"), '{"kind": "resnet", "widths": [8, 16]}', '{"kind": "digits"}'),
    (dict(task="digits", torch_model="mlp", runs=(("opfence", "none"),)),
     '{"kind": "torch", "factory": "innet.host.geo.torch_models:mlp", "kwargs": {"sizes": [64, 128, 256, 32, 10]}, '
     '"seed": 0, "target": "y", "numpy_nodes": ["n1"]}', '{"kind": "digits"}'),
    (dict(task="lm", torch_model="gpt", runs=(("opfence", "none"),)),
     '{"kind": "torch", "factory": "innet.host.geo.torch_models:gpt", "kwargs": {"vocab": 32, "d": 32, "heads": 2, '
     '"layers": 2, "seq": 16}, "seed": 0, "target": "targets", "numpy_nodes": ["n1"]}',
     '{"kind": "lm", "vocab": 32, "seq": 16}'),
]


@pytest.mark.parametrize("settings,model,task", SPEC_JSON, ids=[m.split('"')[3] + "-" + json.loads(t)["kind"]
                                                                 for _, m, t in SPEC_JSON])
def test_every_model_and_task_kind_keeps_its_json(settings: dict[str, object], model: str, task: str) -> None:
    config = GeoBenchConfig(**settings)  # type: ignore[arg-type]
    spec, data = config.model_spec(("n1",)), config.task_spec()
    assert (json.dumps(spec.json_form()), json.dumps(data.json_form())) == (model, task)
    assert ModelSpec.from_json_form(json.loads(model)) == spec
    assert TaskSpec.from_json_form(json.loads(task)) == data


def test_a_wrong_kind_or_field_is_named() -> None:
    with pytest.raises(ValueError, match="model kind 'cnn': expected one of 'mlp', 'gpt'"):
        ModelSpec.from_json_form({"kind": "cnn"})
    with pytest.raises(ValueError, match="model 'mlp': .*'width'"):
        ModelSpec.from_json_form({"kind": "mlp", "sizes": [4, 2], "width": 3})
    with pytest.raises(PlanJsonError, match="StageJob.task: task kind 'image'"):
        StageJob.from_json(json.dumps({"model": {"kind": "mlp", "sizes": [4, 2]}, "task": {"kind": "image"},
                                       "cuts": [], "index": 0, "steps": 1}))
    job = StageJob(model=MlpSpec((4, 2)), task=TaskSpec.from_json_form({"kind": "digits"}), cuts=(), index=0, steps=1)
    assert job.to_json().startswith('{"model": {"kind": "mlp", "sizes": [4, 2]}, "task": {"kind": "digits"}')


def test_a_set_sum_bound_is_sent_and_read_back() -> None:
    dp = DpSpec(AGENT, 2, sum_bound=4.0)
    job = StageJob(model=MlpSpec((4, 2)), task=TaskSpec.from_json_form({"kind": "digits"}), cuts=(), index=0,
                   steps=1, dp=dp)
    assert json.loads(job.to_json())["dp"]["sum_bound"] == 4.0
    assert StageJob.from_json(job.to_json()).dp == dp


def test_a_link_setting_the_record_refuses_is_one_bad_plan_line(capsys: pytest.CaptureFixture[str]) -> None:
    from innet.host.geo.stage_process import main

    plan = json.loads(JOB_JSON)
    plan["compress_prev"]["mode"] = "zip"
    assert main([json.dumps(plan)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad plan: StageJob.compress_prev:" in err and "'zip'" in err
    plan = json.loads(JOB_JSON)
    plan["shape_next"]["delay_ms"] = -1
    assert main([json.dumps(plan)]) == 2
    assert "StageJob.shape_next: link shape delay_ms=-1" in capsys.readouterr().err
