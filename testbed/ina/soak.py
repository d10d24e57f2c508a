"""Soak: exact allreduces for a long time on a lossy, duplicating testbed, with worker restarts.

    innet bench soak --minutes 10 --workers 4 --loss 5 --dup 5 [--backend loopback]

A benchmark-style program, not a test. Rounds repeat until the time is
up; each round is a new worker set on the same live job (``Testbed.spawn_ina`` attaches
a new epoch), which is what a restarted training script does:

- most rounds: every rank allreduces a few sizes with ``exact`` checking (rank-dependent
  integers, every element compared with the int32 sum);
- every ``--restart-every``-th round: one rank is SIGKILLed mid-operation and a new worker
  set is attached at once; the survivors of the killed set must fail (STALE, or the
  deadline naming the dead rank), never return a sum, and the new set must be exact.

Per round it records the operations, whether every result was exact, the chunks
retransmitted, the switch counters and the RSS of ``innet-switch``; the JSON (and a PNG of
RSS and retransmissions over time) go under ``--out``. Impairments: Mininet (root) drops
and duplicates ``--loss``/``--dup`` percent of the frames on every host link, each
direction (cls_bpf random drop and mirred duplication, ``innet.testbed.backends.mininet.impair``);
``--backend loopback`` drops and duplicates that share of the switch's output only (``innet-switch
--loss``), since there are no links.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from innet.argtypes import (Reporter, add_backend, add_out, add_workers, console, int_list, interrupted_partial,
                            positive_float)
from innet.polling import PollTimeout, poll_until
from innet.rss import rss_bytes
from innet.testbed.core.testbed import Testbed, TestbedError, TestbedOptions
from innet.testbed.backends.mininet.console import quiet_mininet
from innet.testbed.core.ina_worker import EXIT_AGGREGATION
from innet.testbed.core.topology import Link, star
from innet.testbed.backends.select import open_testbed as open_star, resolve_backend
from innet.testbed.ina.config import SoakConfig
from innet.testbed.ina.records import Round, SoakResult, SoakSummary


def rss_kb(pid: int) -> int | None:
    """Resident set size of a process in KiB (None when it is gone)."""
    size = rss_bytes(pid)
    return None if size is None else size // 1024


def open_testbed(config: SoakConfig) -> Testbed:
    if config.loopback:
        options = TestbedOptions(chunk_deadline=config.chunk_deadline,
                                 switch_loss=config.loss_pct / 100, switch_dup=config.dup_pct / 100)
        return open_star(star(workers=config.workers), options, backend="loopback")
    options = TestbedOptions(chunk_deadline=config.chunk_deadline, link_dup_pct=config.dup_pct)
    link = Link(bw_mbps=1000.0, loss_pct=config.loss_pct or None)
    return open_star(star(workers=config.workers, link=link), options, backend="mininet")


def _full_round(tb: Testbed, config: SoakConfig, index: int) -> tuple[int, bool, int, str]:
    results = tb.run_ina(config.sizes, repeats=1, exact=True, timeout=600)
    ok = all(r.ok for per_rank in results for r in per_rank)
    resent = sum(r.stats.get("retransmitted", 0) for per_rank in results for r in per_rank[-1:])
    return 2 * len(config.sizes), ok, resent, ""


def _restart_round(tb: Testbed, config: SoakConfig, index: int) -> tuple[int, bool, int, str]:
    """Kill one rank of a running set mid-operation, attach a new set at once, check both:
    the killed set's survivors must fail (exit 3: STALE or the deadline), the new set must be exact."""
    victim = index % config.workers
    # long enough (seconds) that the kill lands mid-operation whatever --sizes is: a set that
    # finished first would exit 0 and prove nothing about stale worker sets
    old_size = max(4 * max(config.sizes), 1 << 20)
    old = tb.spawn_ina([old_size], repeats=3, exact=True, tag=f"-r{index}-old")
    before = tb.counters()["innet_contributions"]
    with contextlib.suppress(PollTimeout):  # a set that never started fails below, with its log
        poll_until(lambda: tb.counters()["innet_contributions"] != before, 30, what="first contribution")
    time.sleep(0.2)  # well inside the operation
    os.kill(old[victim][1].pid, signal.SIGKILL)
    new = tb.spawn_ina(config.sizes, repeats=1, exact=True, tag=f"-r{index}")
    notes = []
    for rank, (name, popen) in enumerate(old):
        try:
            popen.communicate(timeout=config.chunk_deadline + 30)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.communicate()
            notes.append(f"{name} of the killed set did not exit")
        if rank != victim and popen.returncode != EXIT_AGGREGATION:
            notes.append(f"{name} of the killed set exited {popen.returncode} (expected {EXIT_AGGREGATION}): "
                         f"{tb.procs.log_tail(name, 3)}")
        tb.procs.forget(name)
    results = tb._collect(new, 600, "soak restart")
    ok = not notes and all(r.ok for per_rank in results for r in per_rank)
    resent = sum(r.stats.get("retransmitted", 0) for per_rank in results for r in per_rank[-1:])
    return 2 * len(config.sizes), ok, resent, "; ".join(notes)


def run(config: SoakConfig, progress: Any = print) -> SoakResult:
    """Rounds until ``config.minutes`` are up; Ctrl-C ends the soak early: the testbed torn
    down, the rounds so far kept, ``partial``."""
    rounds: list[Round] = []
    try:
        _soak(config, progress, rounds)
    except KeyboardInterrupt:
        partial = True
    else:
        partial = False
    return SoakResult(config, tuple(rounds), partial)


def _soak(config: SoakConfig, progress: Any, rounds: list[Round]) -> None:
    with open_testbed(config) as tb:
        tb.job = tb.job or tb.create_job()
        switch_pid = tb.switch_pid()
        start = time.monotonic()
        end = start + 60 * config.minutes
        index = 0
        while time.monotonic() < end:
            t0 = time.monotonic()
            restart = config.restart_every > 0 and index % config.restart_every == config.restart_every - 1
            try:
                ops, ok, resent, note = (_restart_round if restart else _full_round)(tb, config, index)
            except TestbedError as error:
                ops, ok, resent, note = 0, False, 0, str(error)[-600:]
            r = Round(index, t0 - start, time.monotonic() - t0, "restart" if restart else "run", ops, ok, resent,
                      rss_kb(switch_pid) if switch_pid else None, dict(tb.counters()), note)
            rounds.append(r)
            progress(f"round {index} {r.kind}: {ops} ops, exact={ok}, retransmitted={resent}, "
                     f"switch RSS {r.switch_rss_kb} KiB, {r.seconds:.1f} s{' ' + note if note else ''}")
            index += 1


def summarize(rounds: Sequence[Round]) -> SoakSummary:
    """The rounds added up."""
    return SoakSummary.of(tuple(rounds))


def save(result: SoakResult, out: Path) -> Path:
    """``soak-<time>.json`` in ``out``, and a PNG of RSS and retransmissions beside it (with matplotlib)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"soak-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result.to_json(), indent=1))
    try:
        from innet.testbed.core.report import pyplot

        plt = pyplot()
    except ImportError:
        return path
    rounds = result.rounds
    fig, (a, b) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    t = [r.start_s / 60 for r in rounds]
    a.plot(t, [r.switch_rss_kb or 0 for r in rounds], marker=".")
    a.set_ylabel("innet-switch RSS (KiB)")
    b.plot(t, [r.retransmitted for r in rounds], marker=".")
    b.set_ylabel("chunks retransmitted / round")
    b.set_xlabel("minutes")
    c = result.config
    fig.suptitle(f"soak: {c.workers} workers, loss {c.loss_pct}%, dup {c.dup_pct}%, "
                 f"{'loopback' if c.loopback else 'Mininet'}")
    fig.savefig(path.with_suffix(".png"), dpi=100)
    plt.close(fig)
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``innet bench soak``."""
    parser.add_argument("--minutes", type=positive_float, default=10.0, help="how long rounds repeat")
    add_workers(parser, 4, "workers of the job")
    parser.add_argument("--loss", type=float, default=5.0, help="percent of frames dropped")
    parser.add_argument("--dup", type=float, default=5.0, help="percent of frames duplicated")
    parser.add_argument("--sizes", type=int_list, default=(1000, 20000), help="allreduce sizes per round, e.g. 1000,20000")
    parser.add_argument("--restart-every", type=int, default=5, help="every Nth round kills a rank mid-operation")
    add_backend(parser, note="; loopback impairs the switch's output, Mininet the host links")
    add_out(parser)


def command(args: argparse.Namespace) -> int:
    """``innet bench soak``: rounds until the time is up, JSON summary."""
    args.loopback = args.backend == "loopback" or (args.backend == "auto" and resolve_backend() == "loopback")
    try:
        config = SoakConfig(args.minutes, args.workers, args.loss, args.dup, args.sizes, args.restart_every,
                            args.loopback, out=args.out)
        if not config.loopback:
            quiet_mininet()
        with Reporter(console(), f"soak, {config.minutes:g} min", markup=False) as report:
            result = run(config, progress=report)
    except (ValueError, TestbedError) as error:
        print(f"innet bench soak: {error}", file=sys.stderr)
        return 2
    path = save(result, config.out)
    summary = result.summary
    print(json.dumps(summary.to_json()))
    if result.partial:
        return interrupted_partial("innet bench soak", path)
    print(f"innet bench soak: wrote {path}")
    return 0 if not summary.inexact_rounds else 1
