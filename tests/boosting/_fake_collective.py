"""An in-process stand-in for XGBoost's collective: W simulated workers, one thread each.

``run_workers(fn, parts)`` calls ``fn(comm, part)`` for every part in its own thread, each with a
:class:`ThreadCommunicator` whose ``allreduce`` waits for every worker (a barrier), reduces the W
arrays in rank order and hands every worker the result, as ``xgboost.collective.allreduce`` does.
Each worker's calls are logged (op, dtype, length), so a test can check that every worker made the
same calls, and count them. A mismatch of shapes or ops between workers fails loudly.
"""

from __future__ import annotations

import threading

import numpy as np


class ThreadGroup:
    """The shared state of W simulated workers: a rendezvous per allreduce, and its results by generation."""

    def __init__(self, world_size: int, timeout: float = 30.0):
        self.world_size, self.timeout = world_size, timeout
        self.condition = threading.Condition()
        self.slots = [None] * world_size
        self.arrived = self.generation = 0
        self.results = {}
        self.failed = False
        self.logs = [[] for _ in range(world_size)]

    def abort(self):
        """A worker failed: whoever waits for it stops waiting (``BrokenBarrierError``) instead of hanging."""
        with self.condition:
            self.failed = True
            self.condition.notify_all()

    def reduce(self):
        ops = {slot[0] for slot in self.slots}
        shapes = {(slot[1].shape, slot[1].dtype.str) for slot in self.slots}
        if len(ops) != 1 or len(shapes) != 1:
            return AssertionError(f"workers out of step: ops {ops}, shapes {shapes}")
        out = self.slots[0][1].copy()
        for _, other in self.slots[1:]:  # in rank order
            out = out + other if ops == {"sum"} else np.maximum(out, other)
        return out


class ThreadCommunicator:
    """One worker's view of a :class:`ThreadGroup`: ``rank``, ``world_size``, ``allreduce(values, op)``."""

    def __init__(self, group: ThreadGroup, rank: int):
        self.group, self.rank, self.world_size = group, rank, group.world_size

    def allreduce(self, values, op):
        values = np.array(values, copy=True)
        group = self.group
        group.logs[self.rank].append((op, values.dtype.str, values.size))
        with group.condition:
            if group.failed:
                raise threading.BrokenBarrierError
            group.slots[self.rank] = (op, values)
            generation = group.generation
            group.arrived += 1
            if group.arrived == group.world_size:
                group.results[generation] = group.reduce()
                group.arrived, group.generation = 0, generation + 1
                group.condition.notify_all()
            elif not group.condition.wait_for(lambda: group.generation > generation or group.failed,
                                              group.timeout) or group.generation == generation:
                raise threading.BrokenBarrierError
            out = group.results[generation]
        if isinstance(out, Exception):
            raise out
        return out.copy()


def run_workers(fn, parts, timeout: float = 30.0, collect: bool = False):
    """``[fn(comm_r, parts[r]) for r]`` run concurrently; re-raises the first worker's exception.

    Returns ``(results, group)``; ``group.logs[r]`` lists worker ``r``'s allreduce calls. With
    ``collect=True`` nothing is raised and it returns ``(results, errors, group)``.
    """
    group = ThreadGroup(len(parts), timeout)
    results, errors = [None] * len(parts), [None] * len(parts)

    def work(rank):
        try:
            results[rank] = fn(ThreadCommunicator(group, rank), parts[rank])
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            errors[rank] = error
            group.abort()

    threads = [threading.Thread(target=work, args=(rank,)) for rank in range(len(parts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if collect:
        return results, errors, group
    first = next((e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)), None)
    first = first or next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return results, group
