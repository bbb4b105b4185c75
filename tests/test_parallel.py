"""run_parallel: independent runs in worker processes give exactly what a serial loop gives."""

import pytest
import torch
from attention_course.experiments.dates import train_date_translator
from attention_course.train.parallel import available_cores, run_parallel

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


def test_one_worker_runs_in_this_process():
    calls = []

    class Spy:                                                 # would not survive a trip to a worker
        __module__, __qualname__ = "tests.test_parallel", "Spy"

        def __call__(self, **kwargs):
            calls.append(kwargs)
            return len(calls)

    assert run_parallel(Spy(), [dict(a=1), dict(a=2)], workers=1) == [1, 2]
    assert calls == [dict(a=1), dict(a=2)]
    assert available_cores() >= 1


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
