"""innet.controller.jobs / innet_switch / controller: layout, job validation and fixed
point, create/destroy, parameters in PROTOCOL.md's layout, sharding over two switches.
Switches are in-process P4Runtime servers running p4/innet.p4 (K=4, small sizes)."""

from __future__ import annotations

import dataclasses

import math
from pathlib import Path

import numpy as np
import pytest

from innet.controller.controller import Controller
from innet.controller.errors import JobError, SchemaError
from innet.controller.jobs import Forwarding, InnetLayout, JobSpec, OwnerInfo, OwnerSpec, WorkerSpec
from innet.controller.pipeline import PipelineConfig
from innet.controller.schema import P4Schema, to_signed
from innet.wire.shard import ShardPlan
from innet.controller.switch import SwitchEndpoint
from innet.wire.owners import OwnerRange
from innet.wire.quantize import optimizer_params
from innet.switch.p4runtime.embedded_target import InnetTarget
from innet.switch.server import SwitchOptions, SwitchServer

INNET = Path(__file__).parents[2] / "p4" / "innet.p4"
SIZES = {"INNET_K": "4", "INNET_SLOTS": "16", "INNET_PARAM_CHUNKS": "32", "INNET_MAX_JOBS": "8"}
K = 4


def workers(n: int) -> tuple[WorkerSpec, ...]:
    return tuple(WorkerSpec(r, r + 1, f"00:00:00:00:00:{r + 1:02x}", f"10.0.0.{r + 1}", 5000 + r) for r in range(n))


def job(job_id: int = 1, **kw) -> JobSpec:
    base = dict(job_id=job_id, workers=workers(2), slot_base=0, slot_count=4, k=K, mode="sgd", lr=0.5,
                param_chunks=6)
    base.update(kw)
    return JobSpec(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def config() -> PipelineConfig:
    return PipelineConfig.from_p4(INNET, SIZES)


@pytest.fixture
def ctl(config):
    with SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), InnetTarget()) as a, \
            SwitchServer(SwitchOptions(grpc_address="127.0.0.1:0"), InnetTarget()) as b:
        with Controller([SwitchEndpoint("a", a.grpc_address, role="rail"),
                         SwitchEndpoint("b", b.grpc_address, role="rail")]) as c:
            c.push(config)
            yield c


def test_layout_from_p4info(config):
    layout = InnetLayout.from_schema(P4Schema(config.p4info))
    assert (layout.k, layout.slots, layout.param_chunks, layout.max_jobs) == (4, 16, 32, 8)
    assert layout.acc == tuple(f"MyIngress.innet_acc_{i}" for i in range(4))
    assert layout.param[3] == "MyIngress.innet_param_3" and layout.mom[0] == "MyIngress.innet_mom_0"
    assert layout.counters == tuple(f"MyIngress.innet_{n}" for n in
                                    ("contributions", "completions", "duplicates", "drops", "stale"))


def test_layout_of_another_program_is_refused():
    pio = PipelineConfig.from_p4(Path(__file__).parents[1] / "integration" / "clients" / "innet_pio.p4")
    with pytest.raises(SchemaError, match="the pipeline is not innet.p4: no register named 'innet_bitmap'"):
        InnetLayout.from_schema(P4Schema(pio.p4info))


def test_hyperparameters_become_fixed_point():
    spec = job(mode="momentum", lr=0.01, beta=0.9, grad_frac_bits=12, param_frac_bits=16,
               workers=workers(4))
    lr, lr_shift, beta, beta_shift = spec.optimizer()
    assert math.isclose(lr / 2 ** lr_shift, 0.01 * 2 ** 4 / 4, rel_tol=1e-6)
    assert math.isclose(beta / 2 ** beta_shift, 0.9, rel_tol=1e-6)
    assert (lr, lr_shift, beta, beta_shift) == tuple(vars(optimizer_params(0.01, 4, 12, 16, 0.9)).values())
    assert job(mode="sum").optimizer() == (0, 0, 0, 0)
    assert job(mode="sgd", beta=0.9).optimizer()[2:] == (0, 0)
    with pytest.raises(JobError, match=r"job 1: momentum beta 1.5: must be in \[0, 1\)"):
        job(mode="momentum", beta=1.5).optimizer()
    with pytest.raises(JobError, match="mode 'adam' is not one of sum, sgd, momentum"):
        job(mode="adam").optimizer()


@pytest.mark.parametrize("change, message", [
    (dict(job_id=8), r"job id 8 is outside 1..7 \(INNET_MAX_JOBS\)"),
    (dict(job_id=0), "job id 0 is outside"),
    (dict(k=64), "k=64 but the pipeline has INNET_K=4"),
    (dict(workers=workers(2)[1:]), r"worker ranks must be 0..0 each once, got \[1\]"),
    (dict(slot_base=14, slot_count=4), r"slots 14..17 are outside 0..15"),
    (dict(param_chunks=40), r"parameter chunks 0..39 are outside 0..31"),
    (dict(param_chunks=0), "mode sgd needs param_chunks >= 1"),
    (dict(workers=(WorkerSpec(0, 1, "zz", "10.0.0.1", 1),)), "worker 0 mac: cannot read 'zz'"),
])
def test_invalid_jobs_are_refused_before_any_write(ctl, change, message):
    node = ctl["a"]
    with pytest.raises(JobError, match=message):
        node.create_job(job(**change))
    assert node.jobs() == [] and node.switch.read_multicast_groups() == {}


def test_overlapping_jobs_are_refused(ctl):
    node = ctl["a"]
    node.create_job(job(1, slot_base=0, slot_count=4, param_base=0, param_chunks=6))
    with pytest.raises(JobError, match="job 1 exists already"):
        node.create_job(job(1, slot_base=8))
    with pytest.raises(JobError, match=r"job 2: slots 3..6 overlap job 1's 0..3"):
        node.create_job(job(2, slot_base=3, param_base=10))
    with pytest.raises(JobError, match=r"job 2: parameter chunks 5..10 overlap job 1's 0..5"):
        node.create_job(job(2, slot_base=4, param_base=5))
    with pytest.raises(JobError, match="multicast group 1 is used by job 1"):
        node.create_job(job(2, slot_base=4, param_base=6, mcast_grp=1))
    node.create_job(job(2, slot_base=4, param_base=6))
    assert [j.job_id for j in node.jobs()] == [1, 2]


def test_create_installs_tables_group_and_forwarding(ctl):
    node = ctl["a"]
    spec = job(3, workers=workers(3), mode="momentum", lr=0.1, beta=0.5, slot_base=2, slot_count=5)
    node.install_forwarding(Forwarding.for_workers("00:00:00:00:00:fe", "10.0.0.254", spec.workers))
    node.install_forwarding(Forwarding.for_workers("00:00:00:00:00:fe", "10.0.0.254", spec.workers))  # idempotent
    info = node.create_job(spec, param_chunks=6)
    lr, lr_shift, beta, beta_shift = spec.optimizer()
    assert (info.mode, info.num_workers, info.mcast_grp, info.slot_base, info.slot_count) == ("momentum", 3, 3, 2, 5)
    assert (info.lr, info.lr_shift, info.beta, info.beta_shift) == (lr, lr_shift, beta, beta_shift)
    groups = node.switch.read_multicast_groups()
    assert [(r.port, r.rid) for r in groups[3]] == [(1, 0), (2, 1), (3, 2)]
    wk = sorted((e.match["standard_metadata.egress_rid"], e.params["udp_port"])
                for e in node.switch.read_table("innet_workers"))
    assert wk == [(0, 5000), (1, 5001), (2, 5002)]
    routes = node.switch.read_table("ipv4_lpm")
    assert len(routes) == 3 and {e.params["port"] for e in routes} == {1, 2, 3}
    default = node.switch.read_default("switch_addr")
    assert default.is_default and default.params == {"mac": 0xFE, "ip": 0x0A0000FE}


def test_params_layout_and_destroy_leaves_zeros(ctl):
    node = ctl["a"]
    node.create_job(job(1, param_base=3, param_chunks=5, slot_base=1, slot_count=3))
    values = np.arange(-7, 11, dtype=np.int32)  # 18 values: 4 full chunks + 2, zero padded
    node.load_params(1, values, momentum=np.full(20, 9, dtype=np.int32))
    # element chunk*K + i lives in innet_param_<i>[param_base + chunk]
    assert node.switch.read_register("innet_param_1", range(3, 8)) == [
        int(v) & 0xFFFFFFFF for v in (-6, -2, 2, 6, 10)]
    assert node.switch.read_register("innet_param_3", range(3, 8)) == [(-4) & 0xFFFFFFFF, 0, 4, 8, 0]
    assert node.switch.read_register("innet_param_0", range(0, 3)) == [0, 0, 0]  # outside the job
    got = node.read_params(1)
    assert got.dtype == np.int32 and list(got[:18]) == list(values) and list(got[18:]) == [0, 0]
    assert list(node.read_params(1, momentum=True)) == [9] * 20
    # dirty the slot state the way traffic would, then destroy
    node.switch.write_registers({"innet_count": [(2, 1), (7, 2)], "innet_bitmap": [(2, 1), (7, 3)],
                                 "innet_acc_2": [(3, 55)]})
    occ = node.occupancy(1)
    assert (occ.copies, occ.idle, occ.busy, occ.complete) == (6, 4, 1, 1)
    node.destroy_job(1)
    assert node.jobs() == [] and node.switch.read_table("innet_workers") == []
    assert node.switch.read_multicast_groups() == {}
    for name in ("innet_count", "innet_bitmap", "innet_acc_2", "innet_param_1", "innet_mom_0"):
        assert set(node.switch.read_register(name)) == {0}, name
    assert node.counters() == {n: {i: 0 for i in range(8)} for n in
                               ("innet_contributions", "innet_completions", "innet_duplicates", "innet_drops", "innet_stale")}
    with pytest.raises(JobError, match=r"switch a: no job 1 \(innet_jobs has no entries\)"):
        node.destroy_job(1)


def test_params_checks(ctl):
    node = ctl["a"]
    node.create_job(job(1, param_chunks=2))
    with pytest.raises(JobError, match=r"9 values do not fit 2 chunks of K=4 \(8 values\)"):
        node.load_params(1, np.zeros(9, dtype=np.int32))
    with pytest.raises(JobError, match="expected int32 fixed-point values, got dtype float64"):
        node.load_params(1, np.zeros(3))


def test_vector_sharded_over_two_switches(ctl):
    spec = job(4, param_chunks=7, param_base=2, param_frac_bits=10)
    plan = ctl.create_job(spec)
    assert plan == ShardPlan.contiguous(7, ["a", "b"])
    assert [j.param_chunks for j in ctl["a"].jobs()] == [4] and [j.param_chunks for j in ctl["b"].jobs()] == [3]
    w = np.linspace(-3, 3, 27).astype(np.float32)
    ctl.load_params(spec, w)
    back = ctl.read_params(spec, size=27)
    assert back.dtype == np.float32 and np.abs(back - w).max() <= 2 ** -11
    # element 16 = global chunk 4 = switch b's local chunk 0, at register index param_base
    raw = ctl["b"].switch.read_register("innet_param_0", range(2, 3))[0]
    assert to_signed(raw, 32) == round(float(w[16]) * 2 ** 10)
    # a second controller process finds the plan from the switches
    ctl.plans.clear()
    assert np.array_equal(ctl.read_params(4, as_float=False, size=27), ctl.read_params(spec, False, 27))
    assert ctl.destroy_job(4) == ["a", "b"]
    with pytest.raises(JobError, match="job 4 is not installed on any switch"):
        ctl.destroy_job(4)


def test_attach_moves_every_switch_of_the_job_to_the_next_epoch(ctl):
    spec = job(4, param_chunks=7, param_base=2)
    ctl.create_job(spec)
    assert [ctl[n].job(4).epoch for n in ("a", "b")] == [0, 0]  # created: no worker set yet
    before = ctl["a"].job(4)
    assert ctl.attach(4) == 1 and ctl.attach(4) == 2
    assert [ctl[n].job(4).epoch for n in ("a", "b")] == [2, 2]
    assert dataclasses.replace(ctl["a"].job(4), epoch=0) == before  # nothing else changed
    ctl["b"].attach(4, 9)  # switches that disagree (e.g. one was re-created) converge above both
    ctl.plans.clear()
    assert ctl.attach(4) == 10 and ctl["a"].job(4).epoch == 10
    with pytest.raises(JobError, match="job 6 is not installed on any switch"):
        ctl.attach(6)


def test_failed_create_rolls_back_earlier_switches(ctl):
    ctl["b"].create_job(job(5, slot_base=0))
    with pytest.raises(JobError, match="job 5 exists already"):
        ctl.create_job(job(5, slot_base=8, param_chunks=4))
    assert ctl["a"].jobs() == []


def owner(rank: int, first: int, chunks: int) -> OwnerSpec:
    return OwnerSpec(WorkerSpec(rank, rank + 1, f"00:00:00:00:00:{rank + 1:02x}", f"10.0.0.{rank + 1}", 5000 + rank),
                     first, chunks)


def test_owners_install_prefixes_groups_and_workers_and_read_back(ctl):
    """Rank 2 owns chunks 1..6 (prefixes 1/32, 2/31, 4/31, 6/32), rank 3 chunks 7..7."""
    node = ctl["a"]
    spec = job(6, mode="sum", param_chunks=0, owners=(owner(2, 1, 6), owner(3, 7, 1)))
    assert spec.owner_ranges() == (OwnerRange(2, 1, 6), OwnerRange(3, 7, 1))
    node.create_job(spec, param_chunks=0)
    entries = sorted((e.match["hdr.innet.chunk"].value, e.match["hdr.innet.chunk"].prefix_len, e.params["rank"],
                      e.params["mcast_grp"]) for e in node.switch.read_table("innet_owners"))
    g2, g3 = 0x4000 | 6 << 5 | 2, 0x4000 | 6 << 5 | 3
    assert entries == [(1, 32, 2, g2), (2, 31, 2, g2), (4, 31, 2, g2), (6, 32, 2, g2), (7, 32, 3, g3)]
    groups = node.switch.read_multicast_groups()
    assert {g: [(r.port, r.rid) for r in reps] for g, reps in groups.items()} == {
        6: [(1, 0), (2, 1)], g2: [(1, 0), (2, 1), (3, 2)], g3: [(1, 0), (2, 1), (4, 3)]}
    assert sorted(e.match["standard_metadata.egress_rid"] for e in node.switch.read_table("innet_workers")) == [0, 1, 2, 3]
    assert node.owners(6) == [OwnerInfo(2, 1, 6, g2), OwnerInfo(3, 7, 1, g3)]
    node.destroy_job(6)
    assert node.switch.read_table("innet_owners") == [] and node.switch.read_multicast_groups() == {}
    assert node.switch.read_table("innet_workers") == []


def test_owners_over_the_controller_and_the_whole_chunk_space(ctl):
    """Controller.create_job installs the owners on every switch of the plan; a range of all
    2^32 chunks is one wildcard entry."""
    spec = job(7, mode="sum", param_chunks=0, owners=(owner(2, 0, 1 << 32),))
    ctl.create_job(spec)
    for name in ("a", "b"):
        (entry,) = ctl[name].switch.read_table("innet_owners")
        assert "hdr.innet.chunk" not in entry.match and entry.params["rank"] == 2
    assert ctl.owners(7) == [OwnerInfo(2, 0, 1 << 32, 0x4000 | 7 << 5 | 2)]
    ctl.destroy_job(7)


@pytest.mark.parametrize("change, message", [
    (dict(owners=(owner(1, 0, 4),)), r"owner rank 1 is a worker rank \(0..1\)"),
    (dict(owners=(owner(2, 0, 4), owner(3, 3, 2))), r"chunks of owners 2 \(0\+4\) and 3 \(3\+2\) overlap"),
    (dict(owners=(owner(2, 0, 4), owner(2, 4, 4))), r"owner ranks \[2, 2\] repeat"),
    (dict(owners=(owner(2, 0, 0),)), r"owner rank 2: chunks 0\+0 are empty"),
    (dict(owners=(owner(32, 0, 1),)), r"owner rank 32 is outside 0..31"),
    (dict(mode="sgd", param_chunks=6, owners=(owner(2, 0, 4),)), "owners \\(REDUCE/BCAST\\) need mode sum"),
    (dict(owners=(OwnerSpec(WorkerSpec(2, 3, "zz", "10.0.0.3", 1), 0, 1),)), "owner 2 mac: cannot read 'zz'"),
    (dict(mcast_grp=0x4000), r"multicast group 16384 is outside 1..16383"),
])
def test_invalid_owners_are_refused_before_any_write(ctl, change, message):
    node = ctl["a"]
    base = dict(mode="sum", param_chunks=0)
    base.update(change)
    with pytest.raises(JobError, match=message):
        node.create_job(job(**base), param_chunks=base["param_chunks"])
    assert node.jobs() == [] and node.switch.read_multicast_groups() == {}
    assert node.switch.read_table("innet_owners") == []


def test_owner_spec_parse():
    spec = OwnerSpec.parse("3,4,00:00:00:00:00:04,10.0.0.4,5003,12,8")
    assert (spec.rank, spec.member.port, spec.first_chunk, spec.chunks) == (3, 4, 12, 8)
    with pytest.raises(JobError, match="expected RANK,PORT,MAC,IP,UDP_PORT,FIRST_CHUNK,CHUNKS"):
        OwnerSpec.parse("3,4,00:00:00:00:00:04,10.0.0.4,5003")
    with pytest.raises(JobError, match="FIRST_CHUNK and CHUNKS must be integers"):
        OwnerSpec.parse("3,4,00:00:00:00:00:04,10.0.0.4,5003,a,8")
