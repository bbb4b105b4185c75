"""run_parallel: independent runs in worker processes give exactly what a serial loop gives."""

import os

import pytest
import torch
from attention_course.experiments.dates import train_date_translator
from attention_course.train.parallel import available_cores, run_parallel


def nudge(model, data):
    """A stand-in for a training run: change every weight of ``model`` in place and return it."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0 + data.sum())
    return model


JOBS = [dict(seed=seed, steps=3, batch_size=8, hidden_dim=8) for seed in (0, 1, 3)]


def _same(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_workers_reproduce_the_serial_loop_bit_for_bit_in_job_order():
    serial = [train_date_translator(**job) for job in JOBS]
    parallel = run_parallel(train_date_translator, JOBS, workers=2)
    assert len(parallel) == len(JOBS)
    for (m_s, h_s), (m_p, h_p) in zip(serial, parallel):
        assert _same(m_s, m_p)
        assert h_s["loss"] == h_p["loss"]
    assert not _same(parallel[0][0], parallel[1][0])          # the seeds differ, so must the models


def test_one_worker_runs_in_this_process_two_elsewhere():
    assert run_parallel(os.getpid, [{}, {}], workers=1) == [os.getpid()] * 2
    assert os.getpid() not in run_parallel(os.getpid, [{}, {}], workers=2)
    assert available_cores() >= 1


@pytest.mark.parametrize("workers", [1, 2])
def test_jobs_and_results_are_copies(workers):
    model = train_date_translator(steps=1, hidden_dim=8)[0]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    jobs = [dict(model=model, data=torch.zeros(2, 8))] * 2                 # one model in two jobs
    trained = run_parallel(nudge, jobs, workers=workers)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())   # the caller's model is untouched
    assert trained[0] is not trained[1] and all(torch.equal(p, q) for p, q in zip(trained[0].parameters(),
                                                                                 trained[1].parameters()))
    assert not torch.equal(next(trained[0].parameters()), next(model.parameters()))


def test_an_error_in_a_job_reaches_the_caller():
    with pytest.raises(ValueError, match="steps"):
        run_parallel(train_date_translator, [dict(steps=2, hidden_dim=8), dict(steps=0)], workers=2)


@pytest.mark.parametrize("fn, jobs, workers, match", [
    (lambda: 1, [{}], None, "top level"),
    (42, [{}], None, "must be a function"),
    (train_date_translator, [], None, "non-empty"),
    (train_date_translator, [(1, 2)], None, "dicts"),
    (train_date_translator, [{}], 0, "workers"),
])
def test_bad_arguments_are_named(fn, jobs, workers, match):
    with pytest.raises(ValueError, match=match):
        run_parallel(fn, jobs, workers)


def test_workers_flush_subnormal_numbers_as_the_caller_does():
    from attention_course.train.parallel import _flushes_denormals
    try:
        for flush in (True, False):
            torch.set_flush_denormal(flush)
            assert _flushes_denormals() is flush
            assert run_parallel(_flushes_denormals, [{}, {}], workers=2) == [flush, flush]
    finally:
        torch.set_flush_denormal(False)


def wait_for(path, seconds=60.0):
    """True once ``path`` exists (polling), False after ``seconds`` without it."""
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


def pids_of_nested_runs():
    """This worker's pid and the pids of the two runs it sends on with run_parallel."""
    return os.getpid(), run_parallel(os.getpid, [{}, {}], workers=2)


@pytest.mark.skipif(available_cores() < 2, reason="a background run needs a second core")
def test_start_parallel_returns_before_the_runs_end(tmp_path):
    from attention_course.train.parallel import start_parallel
    flag = tmp_path / "go"
    pending = start_parallel(wait_for, [dict(path=str(flag))])     # the run waits for a file only we create
    assert not pending.done()
    flag.touch()
    assert pending.result() == [True]
    assert pending.done() and pending.result() == [True]             # the results are kept


def test_start_parallel_gives_what_run_parallel_gives_and_runs_may_nest():
    from attention_course.train.parallel import start_parallel
    started = start_parallel(train_date_translator, JOBS)
    for (m_s, h_s), (m_p, h_p) in zip(run_parallel(train_date_translator, JOBS), started.result()):
        assert _same(m_s, m_p) and h_s["loss"] == h_p["loss"]
    outer, inner = start_parallel(pids_of_nested_runs, [{}]).result()[0]
    # the nested runs had workers of their own
    assert available_cores() < 2 or outer != os.getpid() and not {outer, os.getpid()} & set(inner)


def test_start_parallel_names_bad_arguments():
    from attention_course.train.parallel import start_parallel
    with pytest.raises(ValueError, match="top level"):
        start_parallel(lambda: 1, [{}])
    with pytest.raises(ValueError, match="non-empty"):
        start_parallel(os.getpid, [])


def niceness():
    return os.nice(0)


@pytest.mark.skipif(not hasattr(os, "nice") or available_cores() < 2, reason="needs os.nice and two cores")
def test_background_runs_yield_to_this_process_and_blocking_runs_do_not():
    from attention_course.train.parallel import BACKGROUND_NICENESS, start_parallel
    mine = os.nice(0)
    assert start_parallel(niceness, [{}, {}]).result() == [min(mine + BACKGROUND_NICENESS, 19)] * 2
    assert run_parallel(niceness, [{}, {}]) == [mine, mine]
