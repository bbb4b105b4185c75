"""Self-attention without positions is permutation equivariant (Chapter 3): reordering the tokens
reorders the outputs and the weights (P W P^T) and changes nothing else; the pronoun model's answer
does not depend on word order."""

import numpy as np
import torch
from attention_course.layers.self_attention import SelfAttention
from attention_course.models.pronoun import PronounResolver
from attention_course.tasks.pronoun import NAMES, VOCAB, pronoun_batch
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(7))), st.integers(0, 2**31 - 1))
def test_self_attention_is_permutation_equivariant(perm, seed):
    torch.manual_seed(seed)
    layer = SelfAttention(6, d_k=4, d_v=5).double()
    x = torch.randn(2, 7, 6, dtype=torch.float64)
    perm = torch.tensor(perm)
    P = torch.eye(7, dtype=torch.float64)[perm]
    out, w = layer(x)
    out_p, w_p = layer(x[:, perm])
    assert torch.allclose(out_p, P @ out, rtol=0, atol=1e-12)
    assert torch.allclose(w_p, P @ w @ P.T, rtol=0, atol=1e-12)


def test_equivariance_needs_the_mask_permuted_too():
    torch.manual_seed(0)
    layer = SelfAttention(4).double()
    x = torch.randn(1, 5, 4, dtype=torch.float64)
    perm = torch.tensor([4, 2, 0, 3, 1])
    mask = torch.ones(5, 5, dtype=torch.bool).tril()                   # a causal mask is not its own permutation
    out, _ = layer(x, mask)
    out_same_mask, _ = layer(x[:, perm], mask)
    out_permuted_mask, _ = layer(x[:, perm], mask[perm][:, perm])
    assert torch.allclose(out_permuted_mask, out[:, perm], rtol=0, atol=1e-12)
    assert not torch.allclose(out_same_mask, out[:, perm], atol=1e-3)


def test_the_pronoun_model_answers_the_same_for_any_word_order():
    torch.manual_seed(0)
    model = PronounResolver(len(VOCAB), len(NAMES)).double()
    batch = pronoun_batch(np.random.default_rng(0), batch_size=8)
    rng = np.random.default_rng(1)
    logits, _ = model(batch.tokens, batch.lengths, batch.pronoun_pos)
    for b in range(8):
        n = int(batch.lengths[b])
        order = torch.as_tensor(rng.permutation(n))
        tokens = batch.tokens[b:b + 1, :n][:, order]
        new_pos = int((order == batch.pronoun_pos[b]).nonzero())       # where the pronoun went
        shuffled, _ = model(tokens, torch.tensor([n]), torch.tensor([new_pos]))
        assert torch.allclose(shuffled[0], logits[b], rtol=0, atol=1e-12)
