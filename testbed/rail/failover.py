"""An HB domain replaced by a spare mid-run, from the state the rail switches hold.

When one HB domain (rank ``d`` of every rail's job) dies, the other domains are stuck in the
same training step ``s``: on each rail switch, a chunk of step ``s`` is *applied* (every
domain, ``d`` included, had contributed: the switch ran the optimizer and stores the result
in the slot copy and the parameter registers) or *open* (``d``'s contribution never came).
No domain can be further: a domain pushes step ``s + 1`` only after its HB all-gather of
step ``s``, which needs every rail's result of step ``s``. So the switches hold the whole
state of the run, and a spare domain can take rank ``d`` over with no lost or repeated step:

1. the controller reads, per rail, the job's completions counter and its slot copies, and
   finds ``s`` and which chunks of step ``s`` are applied (:func:`resume_point`);
2. the spare needs the parameters *before* step ``s`` to compute rank ``d``'s gradient; for
   an applied chunk the switch holds the parameters after it, and the momentum register
   undoes the step exactly (:func:`innet.wire.switch_model.momentum_unstep`); sgd keeps
   nothing to undo it with, so failover needs a momentum job (sgd is momentum with beta 0);
3. the controller points rank ``d``'s ``innet_workers`` entry and multicast replica on every
   rail at the spare's GPUs (same epoch, slot state kept);
4. the spare's GPUs start at step ``s`` with their agents at stream position ``s * c`` (``c``
   chunks per step on the rail) and send rank ``d``'s contributions of step ``s``: on an
   applied chunk the switch sees a duplicate of ``d`` and answers with the stored result,
   on an open chunk it is the missing contribution. The surviving domains, waiting in step
   ``s``, never notice anything but the delay.

Why the slot copies tell applied from open: with ``c <= W`` (the job's window), position
``p = s*c + i`` uses copy ``(p mod W, (p div W) mod 2)``, and the copy's previous use
``p - 2W`` belongs to an earlier step whose other copy ``p - W`` every domain has since
contributed to, clearing its bits here. A copy is therefore step ``s``'s applied chunk exactly
when it is complete with every bit set in the current epoch. With ``c > W`` a domain may
have reused a copy of step ``s`` already, so :func:`resume_point` refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import numpy.typing as npt

from innet.wire.switch_model import momentum_unstep, wrap32


class FailoverError(RuntimeError):
    """The switches' state does not allow a spare to take over (names the rail and why)."""


@dataclass(frozen=True)
class RailState:
    """What one rail switch holds of the job after the failure."""

    rail: str
    chunks: int
    """Parameter chunks of the rail's shard (= chunks each step pushes on it)."""
    window: int
    """The job's slots on the rail (its agents' window)."""
    workers: int
    epoch: int
    completions: int
    """The job's ``innet_completions`` counter since it was created."""
    count: npt.NDArray[np.int64]
    bitmap: npt.NDArray[np.int64]
    copy_epoch: npt.NDArray[np.int64]
    """Per slot copy, cell ``2 * slot + VER`` from the job's first slot."""


@dataclass(frozen=True)
class RailResume:
    rail: str
    chunks: int
    applied: tuple[bool, ...]
    """Per chunk of the rail's shard: did the switch apply step ``step`` to it?"""


@dataclass(frozen=True)
class ResumePoint:
    """Where the run stands on the switches: the step every domain is in, per rail which of
    its chunks already took that step."""

    step: int
    rails: tuple[RailResume, ...]

    def position(self, rail: int) -> int:
        """The stream position of rail ``rail``'s first chunk of :attr:`step`."""
        return self.step * self.rails[rail].chunks

    @property
    def applied_chunks(self) -> int:
        return sum(sum(r.applied) for r in self.rails)


def _rail_step(state: RailState) -> int:
    return state.completions // state.chunks


def _applied_in_step(state: RailState, step: int) -> tuple[bool, ...]:
    full = (1 << state.workers) - 1
    out = []
    for i in range(state.chunks):
        p = step * state.chunks + i
        idx = 2 * (p % state.window) + (p // state.window) % 2
        out.append(bool(state.count[idx] == state.workers and state.bitmap[idx] == full
                        and state.copy_epoch[idx] == state.epoch))
    return tuple(out)


def resume_point(states: Sequence[RailState]) -> ResumePoint:
    """Step ``s`` and the applied chunks of it, per rail (module docstring); FailoverError
    when the state is not one a mid-step failure leaves."""
    active = [st for st in states if st.chunks > 0]
    if not active:
        raise FailoverError("no rail holds a parameter chunk of the job")
    for st in active:
        if st.chunks > st.window:
            raise FailoverError(f"rail {st.rail}: {st.chunks} chunks per step exceed the job's window of "
                                f"{st.window} slots; a domain may have reused a slot copy of the step, so "
                                "the switch cannot tell which chunks took it (raise the window)")
    step = min(_rail_step(st) for st in active)
    rails = []
    for st in states:
        if st.chunks == 0:
            rails.append(RailResume(st.rail, 0, ()))
            continue
        done = st.completions - step * st.chunks
        if done == st.chunks:
            applied = (True,) * st.chunks
        elif 0 <= done < st.chunks:
            applied = _applied_in_step(st, step)
            if sum(applied) != done:
                raise FailoverError(f"rail {st.rail}: {done} chunks of step {step} completed but "
                                    f"{sum(applied)} slot copies hold a complete step; the switch's "
                                    "slot state is not a mid-step failure's")
        else:
            raise FailoverError(f"rail {st.rail}: {st.completions} completions is more than one step "
                                f"ahead of step {step} (other rails); no domain can be there")
        rails.append(RailResume(st.rail, st.chunks, applied))
    return ResumePoint(step, tuple(rails))


def params_before(point: ResumePoint, rail: int, params: npt.ArrayLike, momentum: npt.ArrayLike, lr: int,
                  lr_shift: int, k: int) -> npt.NDArray[np.int32]:
    """Rail ``rail``'s shard (``chunks * k`` int32) as it was before step ``point.step``:
    the stored parameters, with the step undone on its applied chunks."""
    w = wrap32(params).reshape(-1, k).copy()
    m = wrap32(momentum).reshape(-1, k)
    applied = np.asarray(point.rails[rail].applied, bool)
    if applied.size != w.shape[0]:
        raise FailoverError(f"rail {point.rails[rail].rail}: {w.shape[0]} parameter chunks read, "
                            f"{applied.size} expected")
    w[applied] = momentum_unstep(w[applied], m[applied], lr, lr_shift)
    return w.reshape(-1)
