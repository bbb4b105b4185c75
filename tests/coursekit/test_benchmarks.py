"""The benchmark clock (training time until a target, with the checks off the clock) and the
report of ``make bench`` (tests/bench.py): kinds, reading minutes, targets and flags."""

import importlib.util
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from coursekit.benchmarks._clock import clocked_checks, training_seconds_until

ROOT = Path(__file__).resolve().parents[2]


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


# ------------------------------------------------------------------ the report of make bench

def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "tests" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(**rows):
    return {"chapters": rows, "notebooks_seconds": sum(r["seconds"] for r in rows.values()),
            "book_build_seconds": 30.0, "metrics": {}}


def _row(seconds, kind="lesson", minutes=20.0, mib=500.0):
    return {"seconds": seconds, "peak_rss_mib": mib, "kind": kind, "reading_minutes": minutes}


def test_targets_are_the_issues():
    assert _bench().TARGETS == {"lesson_seconds": 60.0, "evidence_seconds": 240.0, "notebooks_seconds": 900.0,
                                "reading_minutes": 24.0, "peak_rss_mib": 2048.0, "book_build_seconds": 60.0}


def test_within_targets_nothing_is_flagged():
    bench = _bench()
    report = _report(a=_row(60.0, minutes=24.0), a_evidence=_row(240.0, "evidence", minutes=80.0))
    assert bench.over_targets(report) == []
    assert "OVER" not in bench.table(report)


def test_each_target_flags_what_is_over_it():
    bench = _bench()
    report = _report(slow=_row(61.0), long=_row(10.0, minutes=24.1), heavy=_row(10.0, mib=3000.0),
                     slow_evidence=_row(241.0, "evidence", minutes=90.0), ok_evidence=_row(200.0, "evidence"),
                     many=_row(59.0), more=_row(240.0, "evidence"), most=_row(239.0, "evidence"))
    report["book_build_seconds"] = 75.0
    assert bench.over_targets(report) == [
        "slow: runs 61.0 s, over the 60 s of a lesson",
        "long: reads in 24.1 min, over the 24 of a lesson",
        "heavy: peak 3000 MiB, over 2048",
        "slow_evidence: runs 241.0 s, over the 240 s of an evidence notebook",
        "all notebooks: 1060.0 s, over 900 s",
        "book build: 75.0 s, over 60 s"]
    rows = {line.split()[0]: line for line in bench.table(report).splitlines()[2:]}
    assert rows["slow"].endswith("OVER: SLOW") and rows["long"].endswith("OVER: LONG READ")
    assert rows["heavy"].endswith("OVER: MEMORY") and rows["slow_evidence"].endswith("OVER: SLOW")
    assert "OVER" not in rows["ok_evidence"] and "OVER" not in rows["many"]      # 200 s is fine for evidence
    assert rows["all"].endswith("OVER") and rows["book"].endswith("OVER")


@pytest.fixture()
def tiny_chapters(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    glue = ("from myst_nb import glue\nglue('demo.value', 0.25, display=False)\nglue('plain', 3, display=False)")
    lesson = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(" ".join(["word"] * 600)),
                                             nbformat.v4.new_code_cell("x = 1\ny = 2")])
    evidence = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Evidence"),
                                               nbformat.v4.new_code_cell(glue)])
    evidence.metadata["course"] = {"evidence_for": "09_demo"}
    nbformat.write(lesson, chapters / "09_demo.ipynb")
    nbformat.write(evidence, chapters / "09_demo_evidence.ipynb")
    return chapters


def test_bench_reports_kind_reading_minutes_and_metrics(tiny_chapters, tmp_path):
    """make bench on two tiny notebooks (no book build, no timed benchmarks): the JSON keeps its
    shape and adds kind, reading minutes, the total and the targets."""
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "bench.py"), "--chapters", str(tiny_chapters),
                           "--out", str(out), "--no-book", "--no-benchmarks"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    keys = {"chapters", "notebooks_seconds", "book_build_seconds", "targets", "over", "metrics", "cpu"}
    assert keys <= set(report) <= keys | {"make_test"}     # make_test: the last make test here, if it ran
    assert report["cpu"]
    lesson, evidence = report["chapters"]["09_demo"], report["chapters"]["09_demo_evidence"]
    assert set(lesson) == {"seconds", "peak_rss_mib", "kind", "reading_minutes"}
    assert lesson["kind"] == "lesson" and lesson["reading_minutes"] == 600 / 200 + 2 / 10
    assert evidence["kind"] == "evidence" and evidence["seconds"] > 0
    assert report["notebooks_seconds"] == pytest.approx(lesson["seconds"] + evidence["seconds"], abs=0.02)
    assert report["metrics"] == {"demo.value": 0.25} and report["book_build_seconds"] is None
    assert report["over"] == []
    assert "09_demo_evidence" in proc.stdout and "evidence" in proc.stdout and "<= 240" in proc.stdout
