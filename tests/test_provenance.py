"""Provenance lines: the versions, seed and threads a chapter ran with (attention_course.provenance)."""

from __future__ import annotations

import re

import pytest
import torch
from attention_course import seed_everything
from attention_course.provenance import elapsed_seconds, provenance, versions


def test_provenance_is_deterministic_and_complete():
    seed_everything(0)
    first, second = provenance(), provenance()
    assert first == second
    for name, version in versions().items():
        assert f"{name} {version}" in first
    assert "seed 0, 1 thread, deterministic algorithms on." in first
    assert not re.search(r"\d{4}-\d{2}-\d{2}|\d+:\d{2}", first), "no dates or clock times"
    assert "+" not in versions()["torch"]


def test_provenance_reads_the_thread_count():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert "2 threads" in provenance(3) and "seed 3" in provenance(3)
    finally:
        torch.set_num_threads(before)


def test_provenance_rejects_bad_seed():
    with pytest.raises(ValueError, match="seed"):
        provenance(-1)


def test_elapsed_seconds_is_positive():
    t = elapsed_seconds()
    assert t is None or t > 0
