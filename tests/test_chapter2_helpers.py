"""The package functions behind Chapter 2's lesson and evidence page: the length rerun, the
comparison variants, the month-name measurement, the numeric-date sets and the Hangul plots."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from attention_course.experiments.dates import (  # noqa: E402
    ambiguous_numeric_dates,
    chapter_variants,
    format_probe_dates,
    month_name_mass,
    score_variants,
    translator_parameters,
)
from attention_course.experiments.length import LengthProtocol, length_run  # noqa: E402
from attention_course.models.rnn_attention import AttentionSeq2Seq  # noqa: E402
from attention_course.plots import alignment_map, hangul_font, has_hangul  # noqa: E402
from attention_course.tasks.dates import SOURCE_VOCAB, TARGET_VOCAB  # noqa: E402

TINY = LengthProtocol(max_len=4, steps=2, batch_size=4, eval_lengths=(2, 4), eval_batch_size=8)


def test_length_run_returns_both_curves_and_is_reproducible():
    a = length_run("attention", seed=1, hidden_dim=8, protocol=TINY)
    b = length_run("attention", seed=1, hidden_dim=8, protocol=TINY)
    plain = length_run("plain", seed=1, hidden_dim=8, protocol=TINY)
    assert a["length"] == [2, 4] and a == b
    assert plain["parameters"] < a["parameters"]
    assert all(0 <= x <= 1 for x in a["token_accuracy"] + a["exact_match"])


def test_length_run_names_a_bad_model():
    with pytest.raises(ValueError, match="model must be one of"):
        length_run("transformer", protocol=TINY)


def test_chapter_variants_pair_up_at_equal_parameters():
    v = chapter_variants()
    assert list(v) == ["Bahdanau (additive)", "bidirectional", "dot", "general", "additive"]
    assert {k: v[k] for k in ("dot", "general", "additive")} == score_variants()
    uni, bi = translator_parameters(**v["dot"]), translator_parameters(**v["bidirectional"])
    assert v["bidirectional"]["bidirectional"] and abs(bi - uni) / uni < 0.05
    assert v["Bahdanau (additive)"]["hidden_dim"] == v["additive"]["hidden_dim"]


def test_month_name_mass_of_an_untrained_model_is_a_share():
    torch.manual_seed(0)
    model = AttentionSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), 8, 8, score="dot").eval()
    m = month_name_mass(model, n=20)
    assert m["n"] == 20 and 0 < m["uniform"] < 1
    assert 0 <= m["first"] <= 1 and 0 <= m["second"] <= 1


def test_numeric_dates_come_in_both_orders_and_probe_dates_hide_the_format_at_first():
    pairs = ambiguous_numeric_dates(3)
    assert len(pairs) == 6 and "/" in pairs[0][0] and "." in pairs[1][0] and pairs[0][1] == pairs[1][1]
    texts, labels = format_probe_dates(50)
    assert len(texts) == 50 == len(labels) and labels.tolist()[:2] == [0, 1]
    assert all(t[1] in "./" for t in texts)                # one digit, then the separator
    with pytest.raises(ValueError):
        ambiguous_numeric_dates(0)


def test_hangul_labels_get_a_font_with_hangul_and_draw_without_missing_glyphs():
    assert has_hangul("2024년") and not has_hangul("2024-03-07")
    assert "Nanum" in hangul_font().get_name()
    fig, ax = plt.subplots()
    inputs, outputs = "Mon, 1 May", "5월 1일"
    alignment_map(ax, np.full((len(outputs), len(inputs)), 1 / len(inputs)), inputs, outputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # "Glyph ... missing from font" would raise
        fig.canvas.draw()
    fonts = {t.get_text(): t.get_fontname() for t in ax.get_yticklabels()}
    assert "Nanum" in fonts["월"] and "Nanum" not in fonts["5"]
    plt.close(fig)


def test_alignment_map_names_a_shape_mismatch():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="weights must be"):
        alignment_map(ax, np.ones((2, 3)), "abcd", "xy")
    plt.close(fig)
