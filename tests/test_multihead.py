"""Multi-head attention: parity with torch.nn.MultiheadAttention, errors, and property tests."""

import pytest
import torch
from attention_course import causal_mask, padding_mask, scaled_dot_product_attention
from attention_course.layers.multihead import MultiHeadAttention, merge_heads, split_heads
from hypothesis import given, settings
from hypothesis import strategies as st

F64 = torch.float64


def _pair(E=16, H=4, bias=True, seed=0):
    torch.manual_seed(seed)
    reference = torch.nn.MultiheadAttention(E, H, bias=bias, batch_first=True, dtype=F64)
    return reference, MultiHeadAttention.from_torch(reference)


def _inputs(B=3, T_q=5, T_k=7, E=16, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, T_q, E, generator=g, dtype=F64), torch.randn(B, T_k, E, generator=g, dtype=F64),
            torch.randn(B, T_k, E, generator=g, dtype=F64))


@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch_without_mask(bias):
    reference, ours = _pair(bias=bias)
    q, k, v = _inputs()
    out, w = ours(q, k, v)
    ref_out, ref_w = reference(q, k, v, average_attn_weights=False)
    assert w.shape == (3, 4, 5, 7)
    assert torch.allclose(out, ref_out, atol=1e-6, rtol=0)
    assert torch.allclose(w, ref_w, atol=1e-6, rtol=0)


def test_matches_torch_with_padding_mask():
    reference, ours = _pair()
    q, k, v = _inputs()
    mask = padding_mask(torch.tensor([7, 2, 5]), 7)                      # (B, 1, T_k), True = may attend
    out, w = ours(q, k, v, mask)
    ref_out, ref_w = reference(q, k, v, key_padding_mask=~mask[:, 0], average_attn_weights=False)
    assert torch.allclose(out, ref_out, atol=1e-6, rtol=0)
    assert torch.allclose(w, ref_w, atol=1e-6, rtol=0)


def test_matches_torch_with_causal_and_per_head_masks():
    reference, ours = _pair()
    x, _, _ = _inputs(T_q=6)
    out, w = ours(x, x, x, causal_mask(6))
    ref_out, ref_w = reference(x, x, x, attn_mask=~causal_mask(6), average_attn_weights=False)
    assert torch.allclose(out, ref_out, atol=1e-6, rtol=0)
    assert torch.allclose(w, ref_w, atol=1e-6, rtol=0)
    g = torch.Generator().manual_seed(5)
    per_head = torch.rand(3, 4, 6, 6, generator=g) < 0.6
    per_head |= torch.eye(6, dtype=torch.bool)                           # no fully masked row (torch gives NaN)
    out, w = ours(x, x, x, per_head)
    ref_out, ref_w = reference(x, x, x, attn_mask=~per_head.flatten(0, 1), average_attn_weights=False)
    assert torch.allclose(out, ref_out, atol=1e-6, rtol=0)
    assert torch.allclose(w, ref_w, atol=1e-6, rtol=0)


def test_masks_of_every_rank_broadcast_over_heads():
    _, ours = _pair()
    q, k, v = _inputs()
    key_mask = torch.tensor([True, True, False, True, True, True, False])         # (T_k,)
    want, want_w = ours(q, k, v, key_mask.expand(3, 4, 5, 7))
    for mask in (key_mask, key_mask[None], key_mask[None, None], key_mask[None, None, None]):
        out, w = ours(q, k, v, mask)
        assert torch.equal(out, want) and torch.equal(w, want_w)


def test_from_torch_copies_and_does_not_share():
    reference, ours = _pair()
    with torch.no_grad():
        ours.W_Q.weight.zero_()
    assert reference.in_proj_weight.abs().sum() > 0


def test_parameter_count_does_not_depend_on_heads():
    counts = {H: sum(p.numel() for p in MultiHeadAttention(64, H).parameters()) for H in (1, 2, 4, 8, 16)}
    assert len(set(counts.values())) == 1
    assert counts[1] == 4 * (64 * 64 + 64)
    assert counts[8] == sum(p.numel() for p in torch.nn.MultiheadAttention(64, 8).parameters())


def test_output_agrees_with_one_sdpa_per_head():
    _, ours = _pair()
    q, k, v = _inputs()
    out, w = ours(q, k, v)
    heads = []
    for h in range(4):
        cols = slice(4 * h, 4 * h + 4)
        o, wh = scaled_dot_product_attention(ours.W_Q(q)[..., cols], ours.W_K(k)[..., cols], ours.W_V(v)[..., cols])
        assert torch.allclose(wh, w[:, h], atol=1e-12)
        heads.append(o)
    assert torch.allclose(ours.W_O(torch.cat(heads, -1)), out, atol=1e-12)


@pytest.mark.parametrize("E, H", [(10, 3), (64, 5)])
def test_indivisible_embed_dim_names_the_numbers(E, H):
    with pytest.raises(ValueError, match=f"embed_dim={E} is not divisible by num_heads={H}"):
        MultiHeadAttention(E, H)


@pytest.mark.parametrize("E, H", [(0, 1), (8, 0), (8.0, 2), (8, True)])
def test_non_positive_sizes_rejected(E, H):
    with pytest.raises(ValueError, match="must be a positive int"):
        MultiHeadAttention(E, H)


def test_wrong_last_dimension_names_the_shapes():
    layer = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"key must have shape \(batch, T, embed_dim=16\), got \(2, 5, 12\)"):
        layer(x, torch.randn(2, 5, 12), x)
    with pytest.raises(ValueError, match=r"query must have shape .* got \(5, 16\)"):
        layer(x[0], x, x)
    with pytest.raises(ValueError, match="same length T_k, got 5 and 4"):
        layer(x, x, x[:, :4])
    with pytest.raises(ValueError, match="batch size, got 2, 1 and 2"):
        layer(x, x[:1], x)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        layer(x.numpy(), x, x)


def test_wrong_masks_name_the_shapes():
    layer = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast to \(batch, T_q, T_k\) = "
                                         r"\(2, 5, 5\) nor to \(batch, heads, T_q, T_k\) = \(2, 4, 5, 5\)"):
        layer(x, x, x, causal_mask(4))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 3, 5, 5\)"):
        layer(x, x, x, torch.ones(2, 3, 5, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 1, 5\)"):
        layer(x, x, x, padding_mask(torch.tensor([5, 3, 2]), 5))
    with pytest.raises(TypeError, match="boolean tensor"):
        layer(x, x, x, causal_mask(5).float())


def test_from_torch_rejects_unsupported_modules():
    with pytest.raises(ValueError, match="kdim=8 and vdim=8 must equal embed_dim=16"):
        MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(16, 4, kdim=8, vdim=8))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(16, 4, add_bias_kv=True))
    with pytest.raises(TypeError, match="MultiheadAttention"):
        MultiHeadAttention.from_torch(torch.nn.Linear(4, 4))


def test_split_heads_errors():
    with pytest.raises(ValueError, match="embed_dim=10 is not divisible by num_heads=4"):
        split_heads(torch.randn(2, 3, 10), 4)
    with pytest.raises(ValueError, match=r"\(batch, T, embed_dim\)"):
        split_heads(torch.randn(3, 10), 2)
    with pytest.raises(ValueError, match=r"\(batch, heads, T, d_head\)"):
        merge_heads(torch.randn(3, 10, 2))


def test_split_heads_takes_consecutive_features():
    x = torch.arange(2 * 3 * 6).reshape(2, 3, 6)
    heads = split_heads(x, 3)                                           # (2, 3 heads, 3 steps, 2)
    assert torch.equal(heads[1, 2, 0], x[1, 0, 4:6])
    # The bug the permute-first order prevents: reshaping straight to (B, H, T, d) mixes time steps.
    assert not torch.equal(x.reshape(2, 3, 3, 2), heads)


# Property tests --------------------------------------------------------------------------------

@st.composite
def head_layouts(draw):
    B, T, H, d = (draw(st.integers(1, 5)) for _ in range(4))
    return B, T, H, d, draw(st.integers(0, 2**31 - 1))


@settings(max_examples=60, deadline=None)
@given(head_layouts())
def test_split_then_merge_is_identity(layout):
    B, T, H, d, seed = layout
    x = torch.randn(B, T, H * d, generator=torch.Generator().manual_seed(seed))
    heads = split_heads(x, H)
    assert heads.shape == (B, H, T, d)
    assert torch.equal(merge_heads(heads), x)
    assert torch.equal(split_heads(merge_heads(heads), H), heads)


@settings(max_examples=40, deadline=None)
@given(head_layouts(), st.data())
def test_changing_one_heads_projection_changes_only_its_slice(layout, data):
    B, T, H, d, seed = layout
    torch.manual_seed(seed)
    layer = MultiHeadAttention(H * d, H).double()
    x = torch.randn(B, T, H * d, dtype=F64)
    head = data.draw(st.integers(0, H - 1))
    which = data.draw(st.sampled_from(["W_Q", "W_K", "W_V"]))

    def concatenated_heads():                                           # (B, T, E), before W_O
        q, k, v = (split_heads(lin(x), H) for lin in (layer.W_Q, layer.W_K, layer.W_V))
        return merge_heads(scaled_dot_product_attention(q, k, v)[0])

    before = concatenated_heads()
    with torch.no_grad():
        rows = slice(head * d, (head + 1) * d)                          # head's output features of the projection
        getattr(layer, which).weight[rows] += torch.randn(d, H * d, dtype=F64)
    after = concatenated_heads()
    others = torch.ones(H * d, dtype=torch.bool)
    others[head * d:(head + 1) * d] = False
    assert torch.equal(before[..., others], after[..., others])
    # The changed head does change (a new query or key changes nothing when there is one key only).
    if which == "W_V" or T > 1:
        assert not torch.allclose(before[..., ~others], after[..., ~others], atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(head_layouts(), st.randoms(use_true_random=False), st.booleans())
def test_self_attention_is_permutation_equivariant(layout, random, masked):
    B, T, H, d, seed = layout
    torch.manual_seed(seed)
    layer = MultiHeadAttention(H * d, H).double()
    x = torch.randn(B, T, H * d, dtype=F64)
    mask = torch.rand(B, T, T) < 0.7 if masked else None
    perm = list(range(T))
    random.shuffle(perm)
    out, w = layer(x, x, x, mask)
    mask_p = mask[:, perm][:, :, perm] if masked else None
    out_p, w_p = layer(x[:, perm], x[:, perm], x[:, perm], mask_p)
    assert torch.allclose(out[:, perm], out_p, atol=1e-10)
    assert torch.allclose(w[:, :, perm][..., perm], w_p, atol=1e-10)
