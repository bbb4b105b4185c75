"""Every Chapter 4 exercise checker accepts the reference solution and rejects typical wrong answers."""

import math

import numpy as np
import pytest
import torch
from attention_course.layers.multihead import split_heads
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.multihead import check_positions, check_split_heads, check_to_torch


def test_split_heads_accepts_reference(capsys):
    check_split_heads(lambda x, H: x.view(x.shape[0], x.shape[1], H, -1).transpose(1, 2))
    assert "Correct" in capsys.readouterr().out
    check_split_heads(split_heads)


@pytest.mark.parametrize("wrong, message", [
    (lambda x, H: x.reshape(x.shape[0], H, x.shape[1], -1), "straight to"),
    (lambda x, H: x.view(x.shape[0], x.shape[1], H, -1), "transpose"),
    (lambda x, H: x.view(x.shape[0], x.shape[1], -1, H).permute(0, 3, 1, 2), "strided"),
    (lambda x, H: x.view(x.shape[0], x.shape[1], H, -1).transpose(1, 2).flip(1), "batch 0, head 0"),
    (lambda x, H: x, "expected shape"),
    (lambda x, H: x.tolist(), "expected shape"),              # lists are accepted; this one is not split
    (lambda x, H: "heads", "expected the heads as a tensor"),
])
def test_split_heads_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_split_heads(wrong)


def _to_torch(layer, order=(0, 1, 2), transpose=False, batch_first=True, out=True, bias=True):
    E, H = layer.embed_dim, layer.num_heads
    module = torch.nn.MultiheadAttention(E, H, batch_first=batch_first)
    lins = [layer.W_Q, layer.W_K, layer.W_V]
    with torch.no_grad():
        weights = [lins[i].weight.T if transpose else lins[i].weight for i in order]
        module.in_proj_weight.copy_(torch.cat(weights))
        if bias:
            module.in_proj_bias.copy_(torch.cat([lins[i].bias for i in order]))
        if out:
            module.out_proj.weight.copy_(layer.W_O.weight)
            module.out_proj.bias.copy_(layer.W_O.bias)
    return module


def test_to_torch_accepts_reference(capsys):
    check_to_torch(_to_torch)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda layer: _to_torch(layer, order=(1, 0, 2)), "wrong order"),
    (lambda layer: _to_torch(layer, transpose=True), "transposed"),
    (lambda layer: _to_torch(layer, batch_first=False), "batch_first"),
    (lambda layer: _to_torch(layer, out=False), "out_proj"),
    (lambda layer: _to_torch(layer, bias=False), "in_proj_bias"),
    (lambda layer: torch.nn.MultiheadAttention(layer.embed_dim, layer.num_heads, batch_first=True),
     "in_proj_weight is not"),
    (lambda layer: torch.nn.MultiheadAttention(layer.embed_dim, 2, batch_first=True), "num_heads=4"),
    (lambda layer: layer, "expected a torch.nn.MultiheadAttention"),
])
def test_to_torch_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_to_torch(wrong)


def _positions(max_len, d, sin_first=True, pair_exponent=True, interleave=True):
    t = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)
    w = 10000.0 ** (-(2 * i if pair_exponent else i) / d)
    a, b = (torch.sin(t * w), torch.cos(t * w)) if sin_first else (torch.cos(t * w), torch.sin(t * w))
    if not interleave:
        return torch.cat([a, b], 1)
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = a, b
    return pe


def test_positions_accepts_reference(capsys):
    check_positions(_positions)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda n, d: _positions(n, d, sin_first=False), "swapped"),
    (lambda n, d: _positions(n, d, interleave=False), "interleave"),
    (lambda n, d: _positions(n, d, pair_exponent=False), "too slowly"),
    (lambda n, d: _positions(n, d).T, "transposed"),
    (lambda n, d: _positions(n + 1, d), "expected shape"),
    (lambda n, d: _positions(n, d) + 1, "position 0 should be"),
    (lambda n, d: _positions(n, d) * torch.where(torch.arange(n)[:, None] == 7, math.pi, 1.0), "position 7"),
])
def test_positions_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_positions(wrong)


# --- Exercise: find the head-merge bug ------------------------------------------------------------

def _reference_detector(merge):
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)      # every entry distinct
    expected = torch.cat([x[:, h] for h in range(3)], dim=-1)                        # heads side by side
    out = merge(x)
    return isinstance(out, torch.Tensor) and out.shape == expected.shape and bool(torch.equal(out, expected))


def test_merge_detector_accepts_the_reference(capsys):
    from attention_course.teaching.checks.multihead import WRONG_MERGES, check_merge_detector
    check_merge_detector(_reference_detector)
    assert "catches every wrong merge" in capsys.readouterr().out
    assert not any(_reference_detector(m) for m in WRONG_MERGES.values())


@pytest.mark.parametrize("detector, diagnosis", [
    (lambda merge: merge(torch.zeros(2, 3, 4, 5)).shape == (2, 4, 15), "accepts a wrong merge"),
    (lambda merge: torch.equal(merge(torch.ones(2, 3, 4, 5)), torch.ones(2, 4, 15)), "accepts a wrong merge"),
    (lambda merge: False, "rejects the package's merge_heads"),
    (lambda merge: "yes", "must return True or False")])
def test_merge_detector_rejects_detectors_that_cannot_tell(detector, diagnosis):
    from attention_course.teaching.checks.multihead import check_merge_detector
    with pytest.raises(CheckFailed, match=diagnosis):
        check_merge_detector(detector)


# --- Exercise: build the three-lookup task --------------------------------------------------------

def _reference_three_lookup(rng, n, length=8, dim=4, fixed=False, same_mark=False):
    vectors = rng.standard_normal((n, length, dim))
    where = np.tile(np.arange(3), (n, 1)) if fixed else np.argsort(rng.random((n, length)), axis=1)[:, :3]
    if same_mark:
        where[:, 1] = where[:, 0]
    markers = np.zeros((n, length), dtype=np.int64)
    rows = np.arange(n)
    for slot in range(3):
        markers[rows, where[:, slot]] = slot + 1
    answer = np.stack([vectors[rows, where[:, s]] for s in range(3)], axis=1)
    return vectors, markers, answer


@pytest.mark.parametrize("form", ["numpy", "torch32", "lists"])
def test_three_lookup_accepts_the_reference_in_every_form(form, capsys):
    from attention_course.teaching.checks.multihead import check_three_lookup

    def answer(rng, n):
        out = _reference_three_lookup(rng, n)
        if form == "torch32":
            return tuple(torch.as_tensor(a, dtype=torch.float32 if a.dtype != np.int64 else torch.long) for a in out)
        return tuple(a.tolist() for a in out) if form == "lists" else out
    check_three_lookup(answer)
    assert capsys.readouterr().out.startswith("Correct: ")


@pytest.mark.parametrize("wrong, diagnosis", [
    (lambda rng, n: _reference_three_lookup(rng, n, fixed=True), "not placed at random"),
    (lambda rng, n: _reference_three_lookup(rng, n, same_mark=True), "exactly one item"),
    (lambda rng, n: (lambda v, m, a: (v, m, a[:, ::-1]))(*_reference_three_lookup(rng, n)), "answer\\[:, 0\\]"),
    (lambda rng, n: _reference_three_lookup(rng, n)[:2], "expected a tuple"),
    (lambda rng, n: (lambda v, m, a: (v * 0.01, m, a * 0.01))(*_reference_three_lookup(rng, n)), "hardly vary")])
def test_three_lookup_rejects_named_wrong_answers(wrong, diagnosis):
    from attention_course.teaching.checks.multihead import check_three_lookup
    with pytest.raises(CheckFailed, match=diagnosis):
        check_three_lookup(wrong)


# --- Exercise: which cuts keep QK^T = sum_h Q_h K_h^T? ------------------------------------------

PARTITIONS = {"feature blocks", "strided features", "shuffled features"}


@pytest.mark.parametrize("form", [set, list, tuple, frozenset])
def test_split_identity_accepts_the_partitions(form, capsys):
    from attention_course.teaching.checks.multihead import check_split_identity
    check_split_identity(form(sorted(PARTITIONS)))
    assert capsys.readouterr().out.startswith("Correct: ")


def test_split_identity_candidates_behave_as_named():
    """The candidates really are what their names say, on another shape than the check's."""
    from attention_course.teaching.checks.multihead import CANDIDATE_SPLITS, _split_identity_holds
    x = torch.arange(6 * 8, dtype=torch.float64).reshape(6, 8)
    assert torch.equal(CANDIDATE_SPLITS["feature blocks"](x, 2), split_heads(x[None], 2)[0])
    assert torch.equal(CANDIDATE_SPLITS["time halves"](x, 2)[1], x[3:])
    assert torch.equal(CANDIDATE_SPLITS["strided features"](x, 2)[1], x[:, 1::2])
    g = torch.Generator().manual_seed(0)
    Q, K = torch.randn(6, 8, generator=g, dtype=torch.float64), torch.randn(6, 8, generator=g, dtype=torch.float64)
    assert {n for n, s in CANDIDATE_SPLITS.items() if _split_identity_holds(s, Q, K, 2)} == PARTITIONS


@pytest.mark.parametrize("prediction, diagnosis", [
    ({"feature blocks"}, "'strided features': the identity holds, because"),
    (PARTITIONS | {"time halves"}, "'time halves': the sum differs .* never computed"),
    (PARTITIONS | {"reshaped straight"}, "'reshaped straight': the sum differs .* wrong positions"),
    (PARTITIONS - {"shuffled features"} | {"overlapping blocks"},
     "counted twice.*'shuffled features': the identity holds"),
    (set(), "'feature blocks': the identity holds"),
    ("feature blocks", "expected a set of names"),
    ({"feature blocks", "heads"}, "not among the candidates"),
])
def test_split_identity_rejects_wrong_predictions(prediction, diagnosis):
    from attention_course.teaching.checks.multihead import check_split_identity
    with pytest.raises(CheckFailed, match=diagnosis):
        check_split_identity(prediction)


# --- Exercise: predict what beam search returns ---------------------------------------------------

def test_beam_prediction_accepts_the_worked_answer(capsys):
    from attention_course.teaching.checks.multihead import check_beam_prediction
    check_beam_prediction("aaa", "b", "ab")
    check_beam_prediction("aaa<eos>", "b<eos>", "ab<eos>")             # with the <eos> written out
    assert capsys.readouterr().out.count("Correct: ") == 2


def test_beam_table_is_a_model_and_the_answer_its_search():
    """The table's rows are distributions, and the worked answer is what exhaustive search confirms: 'b' is
    the most likely output of all, 'ab' the best per token."""
    import itertools
    import math

    from attention_course.teaching.checks.multihead import BEAM_TABLE
    for prefix, dist in BEAM_TABLE.items():
        assert math.isclose(sum(dist.values()), 1.0), prefix

    def prob(text):
        p = 1.0
        for i, token in enumerate(list(text) + ["<eos>"]):
            p *= BEAM_TABLE.get(text[:i], {"<eos>": 1.0}).get(token, 0.0)
        return p
    outputs = ["".join(t) for n in range(1, 5) for t in itertools.product("ab", repeat=n)]
    assert max(outputs, key=prob) == "b"
    assert max(outputs, key=lambda t: math.log(prob(t)) / (len(t) + 1) if prob(t) else -math.inf) == "ab"


@pytest.mark.parametrize("answer, diagnosis", [
    (("ab", "b", "ab"), "greedy decoding returns 'aaa'"),
    (("aaa", "aaa", "ab"), "the beam returns 'b', not 'aaa'.*greedy path only while"),
    (("aaa", "ab", "ab"), "the beam returns 'b', not 'ab'"),
    (("aaa", "b", "b"), "length_penalty = 1 the beam returns 'ab', not 'b'.*per token -0.746"),
    (("aaa", "b", "aaa"), "length_penalty = 1 the beam returns 'ab', not 'aaa'"),
    (("aaa", "b", "abc"), "one or more of the letters"),
    (("aaa", ["b"], "ab"), "expected beam as a string"),
])
def test_beam_prediction_rejects_wrong_answers(answer, diagnosis):
    from attention_course.teaching.checks.multihead import check_beam_prediction
    with pytest.raises(CheckFailed, match=diagnosis):
        check_beam_prediction(*answer)


# --- Exercise: predict what the KV cache holds and saves ------------------------------------------

def test_kv_cache_prediction_accepts_the_worked_answer(capsys):
    from attention_course.teaching.checks.multihead import KV_SETUP, check_kv_cache_prediction
    B, S, T, H = KV_SETUP["batch"], KV_SETUP["source_len"], KV_SETUP["steps"], KV_SETUP["num_heads"]
    d_head = KV_SETUP["d_model"] // H
    check_kv_cache_prediction((B, H, T, d_head), B * T, B * T * (T + 1) // 2, B * T * S)
    check_kv_cache_prediction([B, H, T, d_head], np.int64(B * T), torch.tensor(B * T * (T + 1) // 2), 70.0)
    assert capsys.readouterr().out.count("Correct: ") == 2


def test_kv_cache_counts_are_measured_not_assumed():
    from attention_course.teaching.checks.multihead import kv_cache_counts
    counts = kv_cache_counts()
    assert counts["cached"]["cross"] == 2 * 7                  # the source, projected once in start()
    assert counts["recomputed"]["self"] > counts["cached"]["self"]


@pytest.mark.parametrize("answer, diagnosis", [
    (((2, 5, 4, 4), 10, 30, 70), "kept per head"),
    (((2, 4, 4, 4), 10, 30, 70), "the last one included"),
    (((2, 4, 5, 4), 2, 30, 70), "only the newest position"),
    (((2, 4, 5, 4), 10, 50, 70), "1 \\+ 2 \\+ ... \\+ 5"),
    (((2, 4, 5, 4), 10, 30, 14), "whole source"),
    (("2, 4, 5, 4", 10, 30, 70), "tuple of ints"),
    (((2, 4, 5, 4), 10.5, 30, 70), "whole number")])
def test_kv_cache_prediction_rejects_wrong_answers(answer, diagnosis):
    from attention_course.teaching.checks.multihead import check_kv_cache_prediction
    with pytest.raises(CheckFailed, match=diagnosis):
        check_kv_cache_prediction(*answer)
