"""Independent training runs side by side, one worker process per CPU core.

Training one of the course's small models is compute-bound on one core, and the chapters pin
torch to one thread (:func:`~attention_course.seed_everything`): a second thread splits each tiny
matrix product and gains nothing. Runs that do not depend on each other, such as the seeds of an
experiment or the variants of a comparison, can instead go to separate processes::

    results = run_parallel(train_date_translator, [dict(seed=s) for s in (0, 1, 2)])

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

__all__ = ["run_parallel", "available_cores"]


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


def run_parallel(fn: Callable, jobs: Sequence[Mapping], workers: int | None = None) -> list:
    """``[fn(**job) for job in jobs]``, with the jobs spread over ``workers`` processes (default: one per
    job, at most one per core). ``fn`` must be importable and must seed itself from its arguments; an
    exception in a job is raised here."""
    _check_function(fn)
    jobs = list(jobs)
    if not jobs or any(not isinstance(job, Mapping) for job in jobs):
        raise ValueError("jobs must be a non-empty sequence of dicts of keyword arguments, one per run")
    workers = min(len(jobs), available_cores()) if workers is None else positive_int("workers", workers)
    flush = _flushes_denormals()
    payloads = [pickle.dumps((fn, dict(job), flush)) for job in jobs]
    if workers == 1:
        return [pickle.loads(_run(p)) for p in payloads]
    with ProcessPoolExecutor(workers, mp_context=_context(fn.__module__), initializer=_setup_worker) as pool:
        futures = [pool.submit(_run, p) for p in payloads]
        return [pickle.loads(f.result()) for f in futures]
