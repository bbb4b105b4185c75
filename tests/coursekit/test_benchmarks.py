"""The benchmark clock: training time until a target, with the checks off the clock."""

import math
import time

from coursekit.benchmarks._clock import clocked_checks, training_seconds_until


def fake_train(steps_per_check, checks):
    def train(callback, every):
        for k in range(1, checks + 1):
            time.sleep(0.01)                      # "training"
            if callback(k * every, {"check": k}):
                return
    return train


def test_stops_at_the_first_check_that_passes_and_excludes_check_time():
    seen = []

    def reached(model):
        seen.append(model["check"])
        time.sleep(0.3)                           # a slow evaluation, not to be counted
        return model["check"] >= 3

    seconds = training_seconds_until(fake_train(10, 10), reached, every=10)
    assert seen == [1, 2, 3]
    assert 0.03 <= seconds < 0.5                 # three 0.01 s training chunks; the 0.9 s of checks excluded


def test_never_reached_is_infinite():
    assert math.isinf(training_seconds_until(fake_train(10, 4), lambda model: False, every=10))


def test_clocked_checks_record_every_check_and_the_whole_run_without_check_time():
    def measure(model):
        time.sleep(0.2)                           # a slow evaluation, not to be counted
        return model["check"]

    checks, seconds = clocked_checks(fake_train(10, 4), measure, every=10)
    assert [value for _, value in checks] == [1, 2, 3, 4]
    times = [t for t, _ in checks]
    assert times == sorted(times) and 0.01 <= times[0] < 0.15
    assert times[-1] <= seconds and 0.04 <= seconds < 0.35         # four 0.01 s chunks; the 0.8 s of checks excluded
