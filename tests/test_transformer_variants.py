"""The Transformer's variants (positions, layer-norm placement, embedding scale), the warm-up of the
training loop, and the copy experiment that compares them."""

import math

import numpy as np
import pytest
import torch
from attention_course.experiments.copy_transformer import (
    COPY_TEST_SEED,
    compare_copy_transformers,
    copy_accuracy,
    train_copy_transformer,
)
from attention_course.models.transformer import LearnedPositions, NoPositions, Transformer
from attention_course.tasks.digits import DIGIT_VOCAB, digit_batch
from attention_course.train.loop import fit

V = len(DIGIT_VOCAB)


def _model(seed=0, **options):
    torch.manual_seed(seed)
    return Transformer(V, V, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=16, **options).eval()


def _batch(n=6):
    return digit_batch(np.random.default_rng(1), n, 3, 8)


@pytest.mark.parametrize("options", [{}, {"norm": "post"}, {"positions": "learned"}, {"positions": "none"},
                                     {"scale_embeddings": True}, {"norm": "post", "positions": "learned"}])
def test_every_variant_decodes_the_same_with_and_without_the_cache(options):
    model, b = _model(**options), _batch()
    with torch.no_grad():
        cached = model.greedy_decode(b.src, b.lengths, 9)
        model.kv_cache = False
        full = model.greedy_decode(b.src, b.lengths, 9)
        logits = model(b.src, b.lengths, b.decoder_input())
    assert torch.equal(cached, full)
    assert logits.shape == (6, b.target.shape[1], V) and torch.isfinite(logits).all()


def test_post_ln_normalises_after_the_residual_and_has_no_final_norm():
    model = _model(norm="post")
    assert isinstance(model.encoder_norm, torch.nn.Identity) and isinstance(model.decoder_norm, torch.nn.Identity)
    layer = model.encoder[0]
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        out, _ = layer(x)
        by_hand = layer.norm1(x + layer.self_attn(x, x, x)[0])
        by_hand = layer.norm2(by_hand + layer.ff(by_hand))
    torch.testing.assert_close(out, by_hand)
    assert torch.allclose(out.mean(-1), torch.zeros(2, 5), atol=1e-5)           # every position normalised


def test_pre_ln_is_the_default_and_unchanged():
    model = _model()
    layer = model.encoder[0]
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        out, _ = layer(x)
        h = layer.norm1(x)
        by_hand = x + layer.self_attn(h, h, h)[0]
        by_hand = by_hand + layer.ff(layer.norm2(by_hand))
    torch.testing.assert_close(out, by_hand)
    assert isinstance(model.encoder_norm, torch.nn.LayerNorm)


def test_without_positions_the_encoder_is_permutation_equivariant_and_with_them_it_is_not():
    b = _batch(1)
    n = int(b.lengths[0])
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    src = b.src[:, :n]
    for positions, equivariant in (("none", True), ("sinusoidal", False), ("learned", False)):
        model = _model(positions=positions)
        with torch.no_grad():
            memory, _, _ = model.encode(src, torch.tensor([n]))
            permuted, _, _ = model.encode(src[:, perm], torch.tensor([n]))
        assert torch.allclose(permuted, memory[:, perm], atol=1e-5) is equivariant, positions


def test_learned_positions_are_trained_parameters_and_checked_like_the_fixed_ones():
    pos = LearnedPositions(8, max_len=4)
    assert pos.pe.requires_grad and pos.pe.shape == (4, 8)
    x = torch.zeros(2, 3, 8)
    torch.testing.assert_close(pos(x), pos.pe[:3].expand(2, 3, 8))
    with pytest.raises(ValueError, match="longer than max_len=4"):
        pos(torch.zeros(1, 5, 8))
    with pytest.raises(ValueError, match="d_model=8"):
        NoPositions(8, 4)(torch.zeros(1, 2, 6))


def test_scaled_embeddings_are_multiplied_by_sqrt_d_model():
    plain, scaled = _model(positions="none"), _model(positions="none", scale_embeddings=True)
    ids = torch.tensor([[3, 4, 5]])
    torch.testing.assert_close(scaled._embed(scaled.src_embed, ids), math.sqrt(16) * plain._embed(plain.src_embed, ids))


@pytest.mark.parametrize("options, message", [
    ({"norm": "middle"}, r"norm must be one of \['post', 'pre'\] \(where the layer norms sit\), got 'middle'"),
    ({"positions": "rotary"}, "positions must be one of")])
def test_bad_variant_names_are_clear_errors(options, message):
    with pytest.raises(ValueError, match=message):
        _model(**options)


def _learning_rates(steps, warmup, decay):
    """The learning rate Adam uses at each step of ``fit`` (recorded by wrapping ``Adam.step``)."""
    model, rates, original = torch.nn.Linear(1, 1), [], torch.optim.Adam.step

    def spy(self, *args, **kwargs):
        rates.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    torch.optim.Adam.step = spy
    try:
        fit(model, lambda: model(torch.ones(1, 1)).sum(), steps, lr=1.0, decay=decay, warmup=warmup)
    finally:
        torch.optim.Adam.step = original
    return rates


def test_warmup_rises_linearly_then_decays_linearly_to_zero():
    rates = _learning_rates(10, 4, "linear")
    np.testing.assert_allclose(rates[:4], [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(rates[4:], [1 - i / 6 for i in range(6)])
    np.testing.assert_allclose(_learning_rates(6, 2, None), [0.5, 1, 1, 1, 1, 1])


def test_no_warmup_keeps_the_old_schedule():
    np.testing.assert_allclose(_learning_rates(5, 0, "linear"), [1 - i / 5 for i in range(5)])


@pytest.mark.parametrize("warmup, decay, message", [(10, "linear", r"warmup must be .* \[0, steps=10\)"),
                                                    (-1, None, "warmup must be"), (2.5, None, "warmup must be"),
                                                    (2, "cosine", "not available with decay='cosine'")])
def test_bad_warmup_is_a_clear_error(warmup, decay, message):
    model = torch.nn.Linear(1, 1)
    with pytest.raises(ValueError, match=message):
        fit(model, lambda: model(torch.ones(1, 1)).sum(), 10, lr=1.0, decay=decay, warmup=warmup)


def test_copy_experiment_reports_every_seed_on_the_same_test_strings():
    result = compare_copy_transformers({"a": {"positions": "none"}, "b": {"norm": "post", "warmup": 2}},
                                       seeds=(0, 1), steps=4, num_layers=1)
    for row in result.values():
        assert len(row["token"]) == len(row["exact"]) == len(row["final_loss"]) == len(row["loss"]) == 2
        assert all(0 <= x <= 1 for x in row["token"] + row["exact"]) and row["parameters"] > 0
        assert len(row["loss"][0]) == 4
    in_process = compare_copy_transformers({"a": {"positions": "none"}, "b": {"norm": "post", "warmup": 2}},
                                           seeds=(0, 1), steps=4, num_layers=1, workers=1)
    assert in_process == result                                             # the workers change nothing
    model, _ = train_copy_transformer(seed=0, steps=3)
    assert copy_accuracy(model, n=50) == copy_accuracy(model, n=50)       # a fixed test set
    with pytest.raises(ValueError, match="reserved"):
        train_copy_transformer(seed=COPY_TEST_SEED, steps=1)
