"""Mininet tier: per-site CPU quotas (cgroups) on processes started on the site hosts are
applied (the process is in its site's cgroup with the quota set, and runs the speed probe
slower) and removed (no cgroup left, the testbed down)."""

from __future__ import annotations

from pathlib import Path

from innet.testbed.core.testbed import TestbedOptions
from innet.testbed.core.topology import Link
from innet.testbed.geo.bench import GeoBenchConfig, measure_speeds
from innet.testbed.geo.cpuquota import CpuQuotas, quota_for
from innet.testbed.geo.testbed import GeoTestbed
from innet.testbed.geo.topology import Site, Wan, geo


class _Checked(CpuQuotas):
    """CpuQuotas that also records, for every process it moves, the cgroup the kernel reports."""

    seen: list[tuple[str, str]]

    def add(self, site: str, pid: int) -> None:
        super().add(site, pid)
        line = next(l for l in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if l.split(":")[1] in ("cpu", ""))
        self.seen.append((site, line.split(":", 2)[2]))


def test_site_quotas_slow_the_site_hosts_processes_and_are_removed(tmp_path: Path) -> None:
    topo = geo((Site("a", 1), Site("b", 1)), (Wan("a", "b", Link(bw_mbps=100.0, delay_ms=1.0)),), name="geoq")
    config = GeoBenchConfig(topology=topo, speeds=(("a", 0.05),), probe_s=0.4, runs=(("opfence", "none"),),
                            testbed="mininet")
    quotas = _Checked()
    quotas.seen = []
    parent = quotas.parent
    tb = GeoTestbed(topo, TestbedOptions(state_dir=tmp_path / "state"), backend="mininet")
    try:
        with tb:
            quotas.set("a", 0.05)
            quotas.set("b", None)
            assert quotas.quota("a") == quota_for(0.05) == (1000, 20000)
            assert quotas.quota("b")[0] == -1
            speeds, probes = measure_speeds(config, quotas, tb)
            # every probe ran on its site's host, inside that site's cgroup
            assert [s for s, _ in quotas.seen] == ["a", "b"]
            assert all(group.endswith(f"/{parent.name}/site-{s}") for s, group in quotas.seen), quotas.seen
            # 5% of a CPU: well under what an unlimited process gets even on a loaded 2-core machine
            assert speeds["a"] < 0.5 * speeds["b"], (speeds, probes)
            assert parent.is_dir()
    finally:
        quotas.close()
    assert not parent.exists()
