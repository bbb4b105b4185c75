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
