"""Debug this attention: every planted bug is caught with a message that names it; the fixes pass."""

import math

import numpy as np
import pytest
import torch
from attention_course import scaled_dot_product_attention
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.debugging import (
    BUGS,
    attention_missing_scale,
    attention_neg_inf_mask,
    attention_softmax_wrong_axis,
    check_attention,
    check_heads,
    check_key_padding_mask,
    diagnose_attention,
    diagnose_heads,
    diagnose_key_padding_mask,
    key_padding_mask,
    key_padding_mask_wrong_axis,
    merge_heads,
    merge_heads_permute_first,
    split_heads,
    split_heads_permute_first,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# The five misconceptions of the issue, each planted at least once.
MISCONCEPTIONS = {"softmax over the wrong axis", "missing 1/sqrt(d)", "-inf mask gives NaN",
                  "permute before reshape", "mask broadcasts over the wrong dimension"}


def test_catalogue_covers_every_misconception():
    assert MISCONCEPTIONS <= set(BUGS)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_planted_bug_is_caught_with_a_pointing_message(name):
    bug = BUGS[name]
    with pytest.raises(CheckFailed) as info:
        bug.check()
    assert bug.points_at in str(info.value)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_fixed_version_passes(name, capsys):
    BUGS[name].fixed()
    assert capsys.readouterr().out.startswith("Correct:")


def test_reference_attention_breaks_no_property():
    assert diagnose_attention(scaled_dot_product_attention) == []
    assert diagnose_heads(split_heads, merge_heads) == []
    assert diagnose_key_padding_mask(key_padding_mask) == []


@pytest.mark.parametrize("fn, words", [
    (attention_softmax_wrong_axis, ["sum to 1 over the keys", "dim=-1"]),
    (attention_missing_scale, ["1 (no scaling)", "sqrt(d_k)"]),
    (attention_neg_inf_mask, ["all masked", "-inf", "finfo"]),
])
def test_each_attention_bug_breaks_exactly_its_property(fn, words):
    problems = diagnose_attention(fn)
    assert len(problems) >= 1
    for word in words:
        assert word in problems[0]


def test_neg_inf_mask_is_fine_when_every_query_keeps_a_key():
    """The -inf bug only shows on fully masked rows: the other properties hold."""
    problems = diagnose_attention(attention_neg_inf_mask)
    assert len(problems) == 1 and "all masked" in problems[0]


def test_round_trip_alone_misses_a_matched_pair():
    """The matched permute-first pair round-trips exactly; only the layout property catches it."""
    x = torch.randn(2, 5, 12)
    assert torch.equal(merge_heads_permute_first(split_heads_permute_first(x, 3)), x)
    problems = diagnose_heads(split_heads_permute_first, merge_heads_permute_first)
    assert len(problems) == 1 and "mix time steps" in problems[0]


def test_wrong_mask_fails_silently_only_when_batch_equals_heads():
    problems = diagnose_key_padding_mask(key_padding_mask_wrong_axis)
    assert any("batch 3 and 3 heads" in p and "wrong dimension" in p for p in problems)
    assert any("batch 2 and 4 heads" in p and "does not fit" in p for p in problems)


def test_divide_by_d_is_named():
    def divide_by_d(q, k, v, mask=None):
        return scaled_dot_product_attention(q, k, v, mask, scale=1.0 / q.shape[-1])

    with pytest.raises(CheckFailed, match="divided by d_k"):
        check_attention(divide_by_d)


def test_weights_that_leak_into_masked_keys_are_caught():
    def leaky(q, k, v, mask=None):
        out, w = scaled_dot_product_attention(q, k, v)   # ignores the mask
        return out, w

    with pytest.raises(CheckFailed, match="masked weights are not exactly 0"):
        check_attention(leaky)


def test_uniform_row_for_fully_masked_query_is_caught():
    def uniform_when_empty(q, k, v, mask=None):
        if mask is None:
            return scaled_dot_product_attention(q, k, v)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, torch.finfo(q.dtype).min)
        w = torch.softmax(scores, -1)
        return w @ v, w

    with pytest.raises(CheckFailed, match="zero weights and a zero output"):
        check_attention(uniform_when_empty)


def test_bad_return_value_is_reported():
    with pytest.raises(CheckFailed, match="pair"):
        check_attention(lambda q, k, v, mask=None: scaled_dot_product_attention(q, k, v, mask)[0])


def test_wrong_split_shape_is_reported():
    with pytest.raises(CheckFailed, match=r"\(B, H, T, E/H\)"):
        check_heads(lambda x, h: x, merge_heads)


def test_mask_without_heads_axis_on_its_own_is_reported():
    with pytest.raises(CheckFailed, match="wrong dimension"):
        check_key_padding_mask(key_padding_mask_wrong_axis)


@settings(max_examples=25, deadline=None)
@given(factor=st.floats(0.2, 5.0).filter(lambda f: abs(f - 1.0) > 0.05),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_any_wrong_scale_is_caught(factor, dtype):
    """Scaling by anything but 1/sqrt(d_k) (here off by 5% or more) breaks agreement, in float32 too."""
    def scaled(q, k, v, mask=None):
        q, k, v = (t.to(dtype) for t in (q, k, v))
        return scaled_dot_product_attention(q, k, v, mask, scale=factor / math.sqrt(q.shape[-1]))

    problems = diagnose_attention(scaled)
    assert problems and "does not match scaled_dot_product_attention" in problems[0]


@settings(max_examples=20, deadline=None)
@given(heads=st.sampled_from([1, 2, 3, 4, 6]), T=st.integers(1, 7), B=st.integers(1, 3))
def test_reference_split_merge_round_trip(heads, T, B):
    x = torch.randn(B, T, 12)
    y = split_heads(x, heads)
    assert y.shape == (B, heads, T, 12 // heads)
    assert torch.equal(merge_heads(y), x)


# --- the checks' rule: a correct answer passes in any form, the student's exception is reported ----------

def _float32_attention(q, k, v, mask=None):
    return scaled_dot_product_attention(q.float(), k.float(), v.float(), mask)


def _numpy_attention(q, k, v, mask=None):
    """Attention written in numpy, in float32, as a student might."""
    q, k, v = (t.numpy().astype(np.float32) for t in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1]))
    if mask is not None:
        scores = np.where(mask.numpy(), scores, np.finfo(np.float32).min)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    if mask is not None:
        w = np.where(mask.numpy(), w, 0.0).astype(np.float32)
    return w @ v, w


@pytest.mark.parametrize("fn", [
    _float32_attention,
    _numpy_attention,
    lambda q, k, v, mask=None: tuple(t.tolist() for t in scaled_dot_product_attention(q, k, v, mask)),
    lambda q, k, v, mask=None: list(scaled_dot_product_attention(q, k, v, mask)),          # [output, weights]
], ids=["float32", "numpy float32", "nested lists", "a list of the pair"])
def test_attention_check_accepts_a_correct_answer_in_any_form(fn, capsys):
    assert diagnose_attention(fn) == []
    check_attention(fn)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("split, merge", [
    (lambda x, h: split_heads(x.float(), h), lambda x: merge_heads(x.float())),
    (lambda x, h: split_heads(x, h).numpy(), lambda x: merge_heads(x).numpy()),
    (lambda x, h: split_heads(x, h).tolist(), lambda x: merge_heads(x).tolist()),
], ids=["float32", "numpy", "nested lists"])
def test_heads_check_accepts_a_correct_answer_in_any_form(split, merge, capsys):
    check_heads(split, merge)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("make_mask", [
    lambda lengths, T: key_padding_mask(lengths, T).numpy(),
    lambda lengths, T: key_padding_mask(lengths, T).tolist(),
    lambda lengths, T: (np.arange(T)[None, None, None, :] < lengths.numpy()[:, None, None, None]),
], ids=["numpy", "nested lists", "built in numpy"])
def test_key_padding_mask_check_accepts_a_correct_answer_in_any_form(make_mask, capsys):
    check_key_padding_mask(make_mask)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("check, answer, message", [
    (check_attention, lambda q, k, v, mask=None: (None, None), "expected the output .* got NoneType"),
    (check_attention, lambda q, k, v, mask=None: (q, "weights"), "expected the weights .* got str"),
    (check_heads, lambda x, h: None, "expected the heads .*got NoneType .*did your function return"),
    (check_key_padding_mask, lambda lengths, T: None, "expected the mask .*got NoneType .*did your function return"),
    (check_key_padding_mask, lambda lengths, T: key_padding_mask(lengths, T).float(),
     r"must be boolean.*got torch\.float32"),
    (check_key_padding_mask, lambda lengths, T: ~key_padding_mask(lengths, T), "inverted: True means"),
])
def test_an_answer_that_is_no_array_or_the_wrong_kind_is_named(check, answer, message):
    with pytest.raises(CheckFailed, match=message):
        check(answer) if check is not check_heads else check(answer, merge_heads)


def _merge_that_fails(x):
    d_head = 0
    return x.reshape(x.shape[0], x.shape[2], x.shape[-1] // d_head)       # the student's bug


def test_a_merge_that_raises_is_reported_with_the_students_line():
    with pytest.raises(CheckFailed) as failure:
        check_heads(split_heads, _merge_that_fails)
    message = str(failure.value)
    assert "your function raised ZeroDivisionError" in message and "test_debugging.py" in message
    assert "x.shape[-1] // d_head" in message


def test_heads_before_output_is_what_w_o_reads_and_the_plain_reshape_leaks():
    from attention_course.layers.multihead import MultiHeadAttention
    from attention_course.teaching.debugging import (
        heads_before_output,
        merge_heads_plain_reshape,
        split_heads_plain_reshape,
    )
    torch.manual_seed(0)
    layer = MultiHeadAttention(12, 3).double()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    seen = {}
    layer.W_O.register_forward_pre_hook(lambda module, args: seen.update(concat=args[0]))
    with torch.no_grad():
        layer(x, x, x)
    assert torch.allclose(heads_before_output(layer, x), seen["concat"], atol=1e-12, rtol=0)
    y = torch.randn(2, 5, 12)
    assert torch.equal(merge_heads_plain_reshape(split_heads_plain_reshape(y, 3)), y)      # round-trips
    bug = lambda: heads_before_output(layer, x, split_heads_plain_reshape, merge_heads_plain_reshape)  # noqa: E731
    before, before_bug = heads_before_output(layer, x), bug()
    with torch.no_grad():
        layer.W_V.weight[4:8] += 1.0                                                        # head 2's rows
    moved = ((heads_before_output(layer, x) - before).abs().amax((0, 1)) > 0).nonzero().flatten().tolist()
    assert moved == [4, 5, 6, 7]
    assert ((bug() - before_bug).abs().amax((0, 1)) > 0).all()
