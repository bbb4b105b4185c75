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
    with pytest.raises(AssertionError, match="divisible"):                # torch's module: an assertion
        torch.nn.MultiheadAttention(E, H)


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
    with pytest.raises(ValueError, match="add_zero_attn"):
        MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(16, 4, add_zero_attn=True))
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


# Differences from torch.nn.MultiheadAttention, as the class docstring lists them -----------------

def _copied_by_hand(reference):
    """The weight mapping the class docstring gives, written out (not through from_torch)."""
    E, has_bias = reference.embed_dim, reference.in_proj_bias is not None
    layer = MultiHeadAttention(E, reference.num_heads, bias=has_bias).double()
    with torch.no_grad():
        for i, linear in enumerate((layer.W_Q, layer.W_K, layer.W_V)):
            linear.weight.copy_(reference.in_proj_weight[i * E:(i + 1) * E])
            if has_bias:
                linear.bias.copy_(reference.in_proj_bias[i * E:(i + 1) * E])
        layer.W_O.weight.copy_(reference.out_proj.weight)
        if has_bias:
            layer.W_O.bias.copy_(reference.out_proj.bias)
    return layer


@pytest.mark.parametrize("bias", [True, False])
def test_documented_weight_mapping_matches_every_torch_path(bias):
    reference, _ = _pair(bias=bias)
    ours = _copied_by_hand(reference)
    x, _, _ = _inputs()
    out, w = ours(x, x, x)
    ref_out, ref_w = reference(x, x, x, average_attn_weights=False)           # weights computed explicitly
    assert torch.allclose(out, ref_out, atol=1e-12, rtol=0) and torch.allclose(w, ref_w, atol=1e-12, rtol=0)
    assert torch.allclose(out, reference(x, x, x, need_weights=False)[0], atol=1e-12, rtol=0)   # torch's sdpa
    reference.eval()
    with torch.no_grad():                                                      # fast path (with biases)
        assert torch.allclose(out, reference(x, x, x, need_weights=False)[0], atol=1e-12, rtol=0)


def test_combined_and_float_masks_translate():
    reference, ours = _pair()
    x, _, _ = _inputs(T_q=6)
    pad = padding_mask(torch.tensor([6, 2, 4]), 6)                            # (B, 1, T_k), True = may attend
    out, w = ours(x, x, x, causal_mask(6) & pad)                              # key 0 stays visible to all
    ref_out, ref_w = reference(x, x, x, attn_mask=~causal_mask(6), key_padding_mask=~pad[:, 0],
                               average_attn_weights=False)
    assert torch.allclose(out, ref_out, atol=1e-12, rtol=0) and torch.allclose(w, ref_w, atol=1e-12, rtol=0)
    additive = torch.zeros(6, 6, dtype=F64).masked_fill(~causal_mask(6), float("-inf"))   # torch only
    assert torch.allclose(ours(x, x, x, causal_mask(6))[0], reference(x, x, x, attn_mask=additive)[0],
                          atol=1e-12, rtol=0)


@pytest.mark.parametrize("kind", ["key_padding_mask", "attn_mask"])
def test_query_with_no_visible_key_gets_bias_here_and_nan_in_torch(kind):
    reference, ours = _pair()
    x, _, _ = _inputs()
    if kind == "key_padding_mask":                                            # sequence 1 has no keys at all
        mask = padding_mask(torch.tensor([5, 0, 3]), 5)
        torch_mask, dead = {"key_padding_mask": ~mask[:, 0]}, (1, slice(None))
    else:                                                                     # query 2 may see no key
        mask = torch.ones(5, 5, dtype=torch.bool)
        mask[2] = False
        torch_mask, dead = {"attn_mask": ~mask}, (slice(None), 2)
    alive = torch.ones(3, 5, dtype=torch.bool)
    alive[dead] = False
    out, w = ours(x, x, x, mask)
    assert torch.equal(w.transpose(1, 2)[dead], torch.zeros_like(w.transpose(1, 2)[dead]))
    assert torch.equal(out[dead], ours.W_O.bias.expand_as(out[dead]))        # zero before W_O
    ref_out, ref_w = reference(x, x, x, average_attn_weights=False, **torch_mask)   # torch's default path
    assert ref_out[dead].isnan().all() and ref_w.transpose(1, 2)[dead].isnan().all()
    assert not ref_out[alive].isnan().any()
    assert torch.allclose(out[alive], ref_out[alive], atol=1e-12, rtol=0)
    sdpa_out, none = reference(x, x, x, need_weights=False, **torch_mask)     # off the fast path: as here
    assert none is None and torch.allclose(sdpa_out, out, atol=1e-12, rtol=0)
    reference.eval()
    with torch.no_grad():
        fast_out, _ = reference(x, x, x, need_weights=False, **torch_mask)
        was_enabled = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            slow_out, _ = reference(x, x, x, need_weights=False, **torch_mask)
        finally:
            torch.backends.mha.set_fastpath_enabled(was_enabled)
    assert fast_out[dead].isnan().all() and torch.allclose(fast_out[alive], out[alive], atol=1e-12, rtol=0)
    assert torch.allclose(slow_out, out, atol=1e-12, rtol=0)                  # the NaN is the fast path's


def test_query_with_no_visible_key_gets_zeros_without_bias():
    _, ours = _pair(bias=False)
    x, _, _ = _inputs()
    out, _ = ours(x, x, x, padding_mask(torch.tensor([5, 0, 3]), 5))
    assert torch.equal(out[1], torch.zeros_like(out[1]))


@pytest.mark.parametrize("where", ["key", "value"])
def test_nan_in_a_masked_key_or_value_stays_out_here_and_spreads_in_torch(where):
    reference, ours = _pair()
    x, _, _ = _inputs()
    spoiled = x.clone()
    spoiled[0, 4, 0] = float("nan")                                           # sequence 0, position 4
    mask = padding_mask(torch.tensor([4, 5, 5]), 5)                           # ... which sequence 0 masks
    args = (x, spoiled, x) if where == "key" else (x, x, spoiled)
    out, _ = ours(*args, mask)
    assert torch.allclose(out, ours(x, x, x, mask)[0], atol=1e-12, rtol=0)
    ref_out, _ = reference(*args, key_padding_mask=~mask[:, 0])
    assert ref_out[0].isnan().all() and not ref_out[1:].isnan().any()        # every query of sequence 0
    with pytest.raises(ValueError, match="NaN"):                              # unmasked: an error here
        ours(*args)
    assert reference(*args)[0][0].isnan().all()                               # ... and NaN in torch


def test_weights_per_head_here_averaged_by_torch_by_default():
    reference, ours = _pair()
    q, k, v = _inputs()
    _, w = ours(q, k, v)                                                      # (B, H, T_q, T_k)
    _, mean_w = reference(q, k, v)                                            # (B, T_q, T_k)
    assert w.shape == (3, 4, 5, 7) and mean_w.shape == (3, 5, 7)
    assert torch.allclose(w.mean(dim=1), mean_w, atol=1e-12, rtol=0)
    assert not torch.allclose(w, mean_w[:, None].expand_as(w), atol=1e-3)     # the heads do differ
    assert torch.allclose(w, reference(q, k, v, average_attn_weights=False)[1], atol=1e-12, rtol=0)
    assert reference(q, k, v, need_weights=False)[1] is None


def test_batch_first_only_here_sequence_first_by_default_in_torch():
    torch.manual_seed(0)
    reference = torch.nn.MultiheadAttention(16, 4, dtype=F64)                 # batch_first=False: (T, B, E)
    assert not reference.batch_first
    ours = MultiHeadAttention.from_torch(reference)
    q, k, v = _inputs()
    ref_out, _ = reference(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1))
    assert torch.allclose(ours(q, k, v)[0], ref_out.transpose(0, 1), atol=1e-12, rtol=0)
    unbatched_out, _ = reference(q[0], k[0], v[0])                           # torch takes (T, E) too
    assert torch.allclose(ours(q[:1], k[:1], v[:1])[0][0], unbatched_out, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match=r"\(batch, T, embed_dim=16\)"):
        ours(q[0], k[0], v[0])


def test_parameters_four_linears_here_packed_in_torch():
    reference, ours = _pair()
    assert {n: tuple(t.shape) for n, t in reference.state_dict().items()} == {
        "in_proj_weight": (48, 16), "in_proj_bias": (48,), "out_proj.weight": (16, 16), "out_proj.bias": (16,)}
    assert {n: tuple(t.shape) for n, t in ours.state_dict().items()} == {
        f"W_{p}.{kind}": (16, 16) if kind == "weight" else (16,) for p in "QKVO" for kind in ("weight", "bias")}


def _uniform_on(t, bound):
    """All of t within +-bound, reaching close to it, with the spread of a uniform distribution."""
    t = t.detach().flatten()
    return bool(t.abs().max() <= bound and t.abs().max() > 0.97 * bound
                and abs(t.std().item() - bound / 3 ** 0.5) < 0.02 * bound / 3 ** 0.5)


def test_initialisation_linear_default_here_xavier_and_zero_biases_in_torch():
    E = 256
    torch.manual_seed(0)
    reference = torch.nn.MultiheadAttention(E, 8)
    xavier = (6 / (E + 3 * E)) ** 0.5                                        # fans of the stacked (3E, E)
    linear = 1 / E ** 0.5                                                     # nn.Linear's default bound
    assert xavier > 1.2 * linear
    assert _uniform_on(reference.in_proj_weight, xavier)
    assert _uniform_on(reference.out_proj.weight, linear)
    assert not reference.in_proj_bias.any() and not reference.out_proj.bias.any()
    ours = MultiHeadAttention(E, 8)
    assert all(_uniform_on(lin.weight, linear) for lin in (ours.W_Q, ours.W_K, ours.W_V, ours.W_O))
    assert _uniform_on(torch.cat([lin.bias for lin in (ours.W_Q, ours.W_K, ours.W_V, ours.W_O)]), linear)


def test_no_dropout_here_torch_drops_attention_weights_in_training():
    torch.manual_seed(0)
    reference = torch.nn.MultiheadAttention(16, 4, dropout=0.5, batch_first=True, dtype=F64)
    ours = MultiHeadAttention.from_torch(reference)
    q, k, v = _inputs()
    out, w = ours(q, k, v)                                                    # ours is in training mode
    assert ours.training and torch.allclose(w.sum(-1), torch.ones(3, 4, 5, dtype=F64), atol=1e-12)
    ref_out, ref_w = reference(q, k, v, average_attn_weights=False)           # training mode: dropped
    assert not torch.allclose(out, ref_out, atol=1e-3)
    assert not torch.allclose(ref_w.sum(-1), torch.ones(3, 4, 5, dtype=F64), atol=1e-3)
    reference.eval()
    assert torch.allclose(out, reference(q, k, v)[0], atol=1e-12, rtol=0)


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
