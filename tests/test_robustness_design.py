"""The robustness machinery: the course's seed shift, strict and lenient claims, the timed steps of make test,
and the platforms check that runs only when the lock changes."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch
from attention_course import seed_everything
from attention_course.claims import ClaimFailed, NotHeld, expect, strict
from attention_course.experiments.reviews import trained_classifier
from attention_course.provenance import provenance
from attention_course.repro import seed_shift, shifted_seed
from attention_course.tasks.reviews import VOCAB, planted_reviews


def test_no_shift_by_default(monkeypatch):
    monkeypatch.delenv("COURSE_SEED_SHIFT", raising=False)
    assert seed_shift() == 0 and shifted_seed(3) == 3


def test_the_shift_moves_every_seed(monkeypatch):
    monkeypatch.setenv("COURSE_SEED_SHIFT", "2")
    assert seed_shift() == 2 and shifted_seed(0) == 2 and shifted_seed(5) == 7
    rng = seed_everything(0)                       # the data generator keeps its seed; torch's moves
    assert rng.integers(1 << 30) == np.random.default_rng(0).integers(1 << 30)
    first = torch.rand(3)
    torch.manual_seed(2)
    assert torch.equal(first, torch.rand(3))
    assert "seed 0, shifted by 2 (COURSE_SEED_SHIFT=2)" in provenance()
    seed_everything(0)


@pytest.mark.parametrize("bad", ["-1", "one", "1.5"])
def test_a_bad_shift_is_named(monkeypatch, bad):
    monkeypatch.setenv("COURSE_SEED_SHIFT", bad)
    with pytest.raises(ValueError, match="COURSE_SEED_SHIFT must be a non-negative integer"):
        seed_shift()


def test_a_bad_seed_is_named():
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        shifted_seed(-1)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        shifted_seed(True)


def test_a_trainer_at_shift_1_is_the_same_trainer_at_the_next_seed(monkeypatch):
    """A shift moves the training seed and nothing else: seed 0 at shift 1 is seed 1 at shift 0."""
    data = planted_reviews(np.random.default_rng(1), 64)
    monkeypatch.setenv("COURSE_SEED_SHIFT", "1")
    shifted = trained_classifier(data, len(VOCAB), seed=0, steps=3)
    monkeypatch.setenv("COURSE_SEED_SHIFT", "0")
    plain = trained_classifier(data, len(VOCAB), seed=1, steps=3)
    other = trained_classifier(data, len(VOCAB), seed=0, steps=3)
    for p, q in zip(shifted.parameters(), plain.parameters()):
        assert torch.equal(p, q)
    assert not all(torch.equal(p, r) for p, r in zip(shifted.parameters(), other.parameters()))


def test_tests_are_strict():
    """tests/conftest.py sets COURSE_STRICT_CLAIMS=1: under pytest (and nbval's kernels) a claim raises."""
    assert strict()
    with pytest.raises(ClaimFailed):
        expect("a claim that fails", False)


def test_a_students_run_shows_a_box_and_goes_on(monkeypatch, capsys):
    monkeypatch.setenv("COURSE_STRICT_CLAIMS", "0")
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/course/chapters/07_attention_explanation.ipynb")
    expect("attention wins", 0.4 > 0.5, gap=-0.1)          # no exception
    out = capsys.readouterr().out
    assert "not held in this run: attention wins (this run measured gap = -0.1)" in out
    assert "07_attention_explanation_evidence.ipynb" in out and "goes on" in out


def test_the_box_names_the_claim_the_values_and_links_the_evidence():
    box = NotHeld("attention wins", "gap = -0.1", "03_self_attention_evidence.ipynb")._repr_html_()
    assert 'class="claim claim-not-held"' in box and "attention wins" in box and "gap = -0.1" in box
    assert '<a href="03_self_attention_evidence.ipynb">' in box
    assert "<a " not in NotHeld("x", "", None)._repr_html_()


@pytest.mark.parametrize(("session", "page"), [
    ("chapters/02_attention.ipynb", "02_attention_evidence.ipynb"),
    ("/x/02_attention_evidence.ipynb", "02_attention_evidence.ipynb"),
    ("scratch.ipynb", None), ("", None)])
def test_the_evidence_page_follows_the_notebook(monkeypatch, session, page):
    from attention_course.claims import _evidence_page

    monkeypatch.setenv("JPY_SESSION_NAME", session)
    assert _evidence_page() == page


def test_a_bad_strict_setting_is_named(monkeypatch):
    monkeypatch.setenv("COURSE_STRICT_CLAIMS", "yes")
    with pytest.raises(ValueError, match="COURSE_STRICT_CLAIMS must be 1"):
        strict()


def test_a_timed_step_is_recorded_and_keeps_its_status(tmp_path):
    from coursekit.steps import main

    log = tmp_path / "steps.json"
    assert main(["--log", str(log), "--", sys.executable, "-c", "pass", "lint"]) == 0
    assert main(["--log", str(log), "--", sys.executable, "-c", "raise SystemExit(3)", "unit"]) == 3
    data = json.loads(log.read_text())
    assert set(data["steps"]) == {"lint", "unit"} and data["steps"]["unit"]["status"] == 3
    assert data["cpu"] and data["seconds"] >= 0


def test_the_platforms_check_is_skipped_while_the_lock_is_unchanged(tmp_path, monkeypatch, capsys):
    from coursekit import platforms

    (tmp_path / platforms.lock_key()).write_text("checked")
    monkeypatch.setattr(platforms, "online", lambda: pytest.fail("asked the index although the lock is unchanged"))
    assert platforms.main(["--check", "--unless-checked", str(tmp_path)]) == 0
    assert "unchanged" in capsys.readouterr().out


def test_a_changed_lock_is_checked_again(tmp_path, monkeypatch, capsys):
    from coursekit import platforms

    (tmp_path / ("0" * 64)).write_text("an older lock")
    monkeypatch.setattr(platforms, "online", lambda: False)
    assert platforms.main(["--check", "--unless-checked", str(tmp_path)]) == 0
    assert "check skipped" in capsys.readouterr().err
    assert not (tmp_path / platforms.lock_key()).exists()
