"""The benchmark clock: training time until a target, with the checks off the clock."""

import math
import time

from coursekit.benchmarks._clock import training_seconds_until


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
