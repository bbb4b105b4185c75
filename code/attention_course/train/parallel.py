"""Independent training runs side by side, one worker process per CPU core.

Training one of the course's small models is compute-bound on one core, and the chapters pin
torch to one thread (:func:`~attention_course.seed_everything`): a second thread splits each tiny
matrix product and gains nothing. Runs that do not depend on each other, such as the seeds of an
experiment or the variants of a comparison, can instead go to separate processes::

    results = run_parallel(train_date_translator, [dict(seed=s) for s in (0, 1, 2)])

:func:`start_parallel` starts the same runs and returns at once; its ``result()`` waits for them. A
notebook can so start the runs of a later section, work on, and collect them where they are needed:
the cores stay busy while the notebook's own process trains something else. A job may itself call
:func:`run_parallel` (a whole comparison sent to the background); the processes then share the cores.

Each worker is set up as the notebook's own process is (one thread, deterministic algorithms, the
caller's choice of ``torch.set_flush_denormal``), and each run seeds itself (every trainer of the
package takes a ``seed``), so the results are bit-identical to a serial loop, in the order of
``jobs``; the tests check this. Jobs and results travel as copies (plain pickles): a run never
changes the caller's objects, so a model handed to a job comes back trained only in the result. On
a machine with one core, or with ``workers=1``, the runs happen one after the other in this
process, on copies all the same.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor

import torch

from ..repro import seed_everything
from ..validate import positive_int

__all__ = ["run_parallel", "start_parallel", "Pending", "available_cores"]


def available_cores() -> int:
    """The number of CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _check_function(fn) -> None:
    """A worker process finds ``fn`` by importing its module: it must live at a module's top level."""
    if not callable(fn):
        raise ValueError(f"fn must be a function, got {type(fn).__name__}")
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if module in (None, "__main__") or "<" in name:
        raise ValueError(f"fn must be a function defined at the top level of an importable module (a worker "
                         f"process imports it), got {module}.{name}; lambdas and functions defined in a "
                         f"notebook cannot be sent to a worker")


def _context(module: str):
    """``forkserver`` where the platform has it, else ``spawn``. The fork server is a clean process that
    imports torch and the package and sets itself up once; every worker is a fork of it, so it starts
    without doing either again."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["attention_course.train._worker_setup", module])   # when the server starts
    return context


def _setup_worker() -> None:
    seed_everything()                                     # one thread, deterministic algorithms


BACKGROUND_NICENESS = 10


def _setup_background_worker() -> None:
    """A worker of :func:`start_parallel`: set up as any worker, at a lower scheduling priority, so that
    the notebook's own process keeps its core while it works and the background runs take what is left
    (and every core once the notebook waits for them). Priority changes when a run happens, not what it
    computes."""
    if hasattr(os, "nice"):
        os.nice(BACKGROUND_NICENESS)
    _setup_worker()


def _flushes_denormals() -> bool:
    """Whether this process flushes subnormal floats to zero (``torch.set_flush_denormal`` has no getter):
    then a subnormal float32 times one is zero."""
    return (torch.tensor([1e-39]) * 1.0).item() == 0.0


def _run(payload: bytes) -> bytes:
    """One job, pickled both ways, with the caller's handling of subnormal numbers. Plain pickles copy
    tensors; the pool's own pickler would instead move them to shared memory, where a worker trains
    the caller's model in place."""
    fn, job, flush = pickle.loads(payload)
    torch.set_flush_denormal(flush)
    return pickle.dumps(fn(**job))


class Pending:
    """Runs started by :func:`start_parallel`. ``result()`` waits for all of them and returns their results
    in the order of the jobs (raising a job's exception, if one failed); ``done()`` tells whether they have
    finished. The worker processes end when ``result()`` returns."""

    def __init__(self, pool: ProcessPoolExecutor | None, futures: list, results: list | None = None):
        self._pool, self._futures, self._results = pool, futures, results

    def done(self) -> bool:
        return self._results is not None or all(f.done() for f in self._futures)

    def result(self) -> list:
        if self._results is None:
            try:
                self._results = [pickle.loads(f.result()) for f in self._futures]
            finally:
                self._pool.shutdown()
        return self._results


def _start(fn: Callable, jobs: Sequence[Mapping], workers: int | None, background: bool) -> Pending:
    """The jobs on ``workers`` processes; run now in this process instead if there is one worker (one
    core, for ``background`` runs, which then cannot be in the background)."""
    _check_function(fn)
    jobs = list(jobs)
    if not jobs or any(not isinstance(job, Mapping) for job in jobs):
        raise ValueError("jobs must be a non-empty sequence of dicts of keyword arguments, one per run")
    workers = min(len(jobs), available_cores()) if workers is None else positive_int("workers", workers)
    flush = _flushes_denormals()
    payloads = [pickle.dumps((fn, dict(job), flush)) for job in jobs]
    if (available_cores() if background else workers) == 1:
        return Pending(None, [], [pickle.loads(_run(p)) for p in payloads])
    pool = ProcessPoolExecutor(workers, mp_context=_context(fn.__module__),
                               initializer=_setup_background_worker if background else _setup_worker)
    return Pending(pool, [pool.submit(_run, p) for p in payloads])


def start_parallel(fn: Callable, jobs: Sequence[Mapping], workers: int | None = None) -> Pending:
    """Start ``[fn(**job) for job in jobs]`` on ``workers`` processes (default: one per job, at most one per
    core) and return at once; ``.result()`` of the returned :class:`Pending` waits for the list. ``fn`` must
    be importable and must seed itself from its arguments. The workers run at a lower priority than this
    process (``BACKGROUND_NICENESS``). On a machine with one core the runs happen here, before this returns."""
    return _start(fn, jobs, workers, background=True)


def run_parallel(fn: Callable, jobs: Sequence[Mapping], workers: int | None = None) -> list:
    """``[fn(**job) for job in jobs]``, with the jobs spread over ``workers`` processes (default: one per
    job, at most one per core). ``fn`` must be importable and must seed itself from its arguments; an
    exception in a job is raised here."""
    return _start(fn, jobs, workers, background=False).result()
