"""Bad input to the public API gets a clear error that names the problem, never NaN, a wrong shape
or an error from deep inside torch (issue 15, items 4 and 5; the table in book/bad_input.md)."""

import math

import numpy as np
import pytest
import torch
from attention_course import viz
from attention_course.analysis.cca import cca, cca_from_covariances, inverse_sqrt_psd
from attention_course.experiments.dates import train_date_transformer, train_date_translator
from attention_course.experiments.pronoun import train_pronoun_model
from attention_course.experiments.reviews import train_classifier
from attention_course.experiments.series import train_forecaster
from attention_course.experiments.sets import train_max_regression
from attention_course.layers.attention import causal_mask, masked_softmax, padding_mask, scaled_dot_product_attention
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.layers.self_attention import CrossAttention, SelfAttention
from attention_course.models.classifier import AttentionClassifier
from attention_course.models.conv_attention import conv_as_attention
from attention_course.models.forecast import HorizonAttentionForecaster
from attention_course.models.pronoun import PronounResolver
from attention_course.models.retrieval import RetrievalHead, train_retrieval
from attention_course.models.rnn_attention import AttentionSeq2Seq
from attention_course.models.seq2seq import Seq2Seq, reverse_padded
from attention_course.models.set_transformer import ISAB, MAB, PMA, SAB, PooledSetModel, SetTransformerModel
from attention_course.models.transformer import Transformer
from attention_course.tasks.dates import TARGET_VOCAB, date_batch, decode_target
from attention_course.tasks.digits import DIGIT_VOCAB, decode_digits, digit_batch
from attention_course.tasks.pronoun import NAMES
from attention_course.tasks.pronoun import VOCAB as PRONOUN_VOCAB
from attention_course.tasks.reviews import VOCAB as REVIEW_VOCAB
from attention_course.tasks.reviews import planted_reviews
from attention_course.tasks.series import make_series, seasonal_naive
from attention_course.tokens import PAD
from attention_course.train.seq2seq import accuracy, train_seq2seq
from attention_course.viz import attention_explorer

# --- masked_softmax and attention -------------------------------------------------------------


def test_masked_softmax_rejects_a_mask_that_grows_the_scores():
    with pytest.raises(ValueError, match=r"mask of shape \(4, 2, 3\) is not broadcastable.*\(2, 3\)"):
        masked_softmax(torch.zeros(2, 3), torch.ones(4, 2, 3, dtype=torch.bool))


@pytest.mark.parametrize("mask, got", [(torch.ones(2, 3, dtype=torch.int64), "torch.int64"),
                                       (torch.ones(2, 3), "torch.float32"), ([[True] * 3] * 2, "list")])
def test_masked_softmax_rejects_non_boolean_masks(mask, got):
    with pytest.raises(TypeError, match=f"mask must be a boolean tensor.*{got}"):
        masked_softmax(torch.zeros(2, 3), mask)


@pytest.mark.parametrize("scores, error, match", [
    (torch.zeros(2, 3, dtype=torch.long), TypeError, "scores must be a floating-point tensor"),
    ([[0.0, 1.0]], TypeError, "scores must be a torch.Tensor, got list"),
    (torch.tensor(1.0), ValueError, "at least 1 dim"),
])
def test_masked_softmax_rejects_bad_scores(scores, error, match):
    with pytest.raises(error, match=match):
        masked_softmax(scores)


@pytest.mark.parametrize("junk", [math.nan, math.inf, -math.inf])
def test_nan_or_inf_in_masked_scores_values_and_keys_cannot_reach_the_output(junk):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, generator=g) for _ in range(3))
    mask = torch.tensor([True, True, False])                         # key 2 is hidden from every query
    out, w = scaled_dot_product_attention(q, k, v, mask)
    k2, v2 = k.clone(), v.clone()
    k2[:, 2], v2[:, 2] = junk, junk
    out2, w2 = scaled_dot_product_attention(q, k2, v2, mask)
    assert torch.equal(out, out2) and torch.equal(w, w2)
    scores = torch.randn(3, 3, generator=g)
    junk_scores = scores.clone()
    junk_scores[:, 2] = junk
    assert torch.equal(masked_softmax(scores, mask), masked_softmax(junk_scores, mask))


def test_finite_scores_of_any_magnitude_give_finite_weights():
    big = torch.finfo(torch.float32).max
    scores = torch.tensor([[1e20, -1e20, big], [-big, -big, 0.0], [-big, -big, -big]])
    mask = torch.tensor([[True, True, True], [True, True, False], [True, True, True]])
    w = masked_softmax(scores, mask)
    assert torch.isfinite(w).all()
    assert torch.equal(w, torch.tensor([[0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]]))


def test_scores_that_overflow_raise_instead_of_giving_nan():
    q = torch.full((1, 2, 4), 1e20)                                 # q . k = 4e40 overflows float32
    with pytest.raises(ValueError, match="NaN.*inf"):
        scaled_dot_product_attention(q, q, q)


@pytest.mark.parametrize("where", ["query", "value"])
def test_nan_in_an_unmasked_input_raises(where):
    q, k, v = torch.zeros(1, 2, 4), torch.zeros(1, 3, 4), torch.zeros(1, 3, 4)
    {"query": q, "value": v}[where][0, 1, 0] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        scaled_dot_product_attention(q, k, v)


def test_zero_feature_size_is_rejected():
    with pytest.raises(ValueError, match="d_k=0"):
        scaled_dot_product_attention(torch.zeros(1, 2, 0), torch.zeros(1, 3, 0), torch.zeros(1, 3, 4))


@pytest.mark.parametrize("scale", [math.inf, math.nan, "2"])
def test_scale_must_be_a_finite_number(scale):
    q = torch.zeros(1, 2, 4)
    with pytest.raises((ValueError, TypeError), match="scale must be a finite number"):
        scaled_dot_product_attention(q, q, q, scale=scale)


def test_causal_mask_takes_integers_only():
    with pytest.raises(ValueError, match="T must be a positive int, got True"):
        causal_mask(True)
    assert torch.equal(causal_mask(np.int64(3)), causal_mask(3))
    with pytest.raises(ValueError, match="T must be a positive int, got 2.0"):
        causal_mask(2.0)


def test_padding_mask_of_an_empty_list_is_an_empty_batch():
    assert padding_mask([], 3).shape == (0, 1, 3)


def test_padding_mask_names_the_dtype_and_max_len():
    with pytest.raises(ValueError, match=r"integer.*torch.float32"):
        padding_mask(torch.tensor([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="max_len must be an int >= 0, got -1"):
        padding_mask(torch.tensor([0]), -1)


# --- sequence models: lengths, ids, batch size, decoding length --------------------------------

def _seq2seq():
    torch.manual_seed(0)
    return Seq2Seq(len(DIGIT_VOCAB), 8, 16)


def _attention_seq2seq():
    torch.manual_seed(0)
    return AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 8, 16)


def _transformer():
    torch.manual_seed(0)
    return Transformer(len(DIGIT_VOCAB), len(DIGIT_VOCAB), d_model=8, num_heads=2, num_layers=1, d_ff=16)


MODELS = [_seq2seq, _attention_seq2seq, _transformer]
SRC = torch.tensor([[3, 4, 5], [6, 7, PAD]])


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("lengths, error, match", [
    ([3, 2], TypeError, "lengths must be a torch.Tensor of integers, got list"),
    (np.array([3, 2]), TypeError, "lengths must be a torch.Tensor of integers, got ndarray"),
    (torch.tensor([3.0, 2.0]), TypeError, "lengths must hold integers, got dtype torch.float32"),
    (torch.tensor([4, 2]), ValueError, r"lengths must lie in \[1, 3\].*max 4"),
    (torch.tensor([3, 0]), ValueError, r"lengths must lie in \[1, 3\].*min 0"),
])
def test_models_name_bad_lengths(make, lengths, error, match):
    model = make()
    tgt_in = torch.tensor([[1, 3], [1, 4]])
    with pytest.raises(error, match=match):
        model(SRC, lengths, tgt_in)
    with pytest.raises(error, match=match):
        model.greedy_decode(SRC, lengths, 4)


@pytest.mark.parametrize("make", MODELS)
def test_models_name_an_empty_batch(make):
    with pytest.raises(ValueError, match="src is empty"):
        make().greedy_decode(torch.zeros(0, 3, dtype=torch.long), torch.zeros(0, dtype=torch.long), 4)


@pytest.mark.parametrize("make", MODELS)
def test_models_name_ids_outside_the_vocabulary(make):
    model = make()
    with pytest.raises(ValueError, match=r"src holds token ids outside the vocabulary \[0, 13\): 99"):
        model.greedy_decode(torch.tensor([[3, 99]]), torch.tensor([2]), 4)
    with pytest.raises(ValueError, match=r"tgt_in holds token ids outside the vocabulary \[0, 13\): -1"):
        model(SRC, torch.tensor([3, 2]), torch.tensor([[1, 3], [1, -1]]))


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("max_len", [0, -1, 2.0])
def test_greedy_decoding_needs_a_positive_length(make, max_len):
    with pytest.raises(ValueError, match=f"max_len must be a positive int, got {max_len!r}"):
        make().greedy_decode(SRC, torch.tensor([3, 2]), max_len)


def test_reverse_padded_checks_its_lengths():
    with pytest.raises(ValueError, match=r"lengths must lie in \[1, 3\].*max 5"):
        reverse_padded(SRC, torch.tensor([5, 2]))


def test_classifier_and_pronoun_model_name_list_lengths():
    tokens = torch.tensor([[1, 2, 3]])
    with pytest.raises(TypeError, match="lengths must be a torch.Tensor of integers, got list"):
        AttentionClassifier(len(REVIEW_VOCAB), 4, 4)(tokens, [3])
    with pytest.raises(TypeError, match="lengths must be a torch.Tensor of integers, got list"):
        PronounResolver(len(PRONOUN_VOCAB), len(NAMES))(tokens, [3], torch.tensor([1]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        AttentionClassifier(len(REVIEW_VOCAB), 4, 4)(torch.tensor([[1, 2, 999]]), torch.tensor([3]))


# --- accuracy ---------------------------------------------------------------------------------

def test_accuracy_refuses_to_broadcast_the_batch():
    with pytest.raises(ValueError, match=r"predicted has 1 rows but target has 2"):
        accuracy(torch.tensor([[3, 2]]), torch.tensor([[3, 2], [4, 2]]))


def test_accuracy_of_an_all_pad_target_row_is_an_error_not_nan():
    with pytest.raises(ValueError, match=r"target row 1 has no real tokens"):
        accuracy(torch.tensor([[3, 2], [4, 2]]), torch.tensor([[3, 2], [PAD, PAD]]))


def test_accuracy_needs_token_id_tensors():
    with pytest.raises(ValueError, match="target must be a"):
        accuracy(torch.tensor([[3, 2]]), torch.tensor([3, 2]))


# --- training functions: steps ----------------------------------------------------------------

def _trainers():
    rng = np.random.default_rng(0)
    data = planted_reviews(rng, 8)
    views = rng.standard_normal((8, 2))
    return {
        "train_seq2seq": lambda s: train_seq2seq(_seq2seq(), lambda: digit_batch(rng, 2, 1, 3), s),
        "train_date_translator": lambda s: train_date_translator(steps=s, hidden_dim=8),
        "train_date_transformer": lambda s: train_date_transformer(steps=s, d_model=8, num_heads=2, d_ff=8),
        "train_pronoun_model": lambda s: train_pronoun_model(PronounResolver(len(PRONOUN_VOCAB), len(NAMES)), steps=s),
        "train_classifier": lambda s: train_classifier(AttentionClassifier(len(REVIEW_VOCAB), 4, 4), data, steps=s,
                                                       batch_size=4),
        "train_max_regression": lambda s: train_max_regression(PooledSetModel("mean", 4), rng, steps=s),
        "train_forecaster": lambda s: train_forecaster(HorizonAttentionForecaster(12, 4, 8), rng, steps=s),
        "train_retrieval": lambda s: train_retrieval(RetrievalHead(2, 2, 2), views, views, steps=s, batch_size=4),
    }


@pytest.mark.parametrize("name", list(_trainers()))
@pytest.mark.parametrize("steps", [0, -5, 2.5])
def test_trainers_need_a_positive_number_of_steps(name, steps):
    with pytest.raises(ValueError, match=f"steps .* must be a positive int, got {steps!r}"):
        _trainers()[name](steps)


# --- float64 data into float32 modules ----------------------------------------------------------

def _float64_calls():
    x = torch.zeros(2, 3, 8, dtype=torch.float64)
    return {
        "MultiHeadAttention": lambda: MultiHeadAttention(8, 2)(x, x, x),
        "SelfAttention": lambda: SelfAttention(8)(x),
        "CrossAttention": lambda: CrossAttention(8, 8)(x, x),
        "MAB": lambda: MAB(8, 2)(x, x),
        "SAB": lambda: SAB(8, 2)(x),
        "ISAB": lambda: ISAB(8, 2, 2)(x),
        "PMA": lambda: PMA(8, 2)(x),
        "SetTransformerModel": lambda: SetTransformerModel(8, 2)(x[..., :1]),
        "PooledSetModel": lambda: PooledSetModel("max", 8)(x[..., :1]),
        "HorizonAttentionForecaster": lambda: HorizonAttentionForecaster(3, 2, 8)(x[:, :, 0], x[:, :, 0],
                                                                                   x[:, :2, 0]),
        "RetrievalHead": lambda: RetrievalHead(8, 8, 4)(x[0], x[0]),
    }


@pytest.mark.parametrize("name", list(_float64_calls()))
def test_float64_input_to_a_float32_module_names_both_dtypes(name):
    with pytest.raises(TypeError, match=r"dtype torch.float64 but .*parameters are torch.float32"):
        _float64_calls()[name]()


# --- data helpers -------------------------------------------------------------------------------

def test_date_batch_of_size_zero_names_the_batch_size():
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        date_batch(np.random.default_rng(0), 0, split="train")


@pytest.mark.parametrize("decode, vocab", [(decode_target, TARGET_VOCAB), (decode_digits, DIGIT_VOCAB)])
def test_decoding_an_unknown_id_names_it(decode, vocab):
    with pytest.raises(ValueError, match=rf"id 99 is not in the vocabulary \(ids 0..{len(vocab) - 1}\)"):
        decode([3, 99])


# --- cca ----------------------------------------------------------------------------------------

def test_cca_refuses_complex_data():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((20, 2)), rng.standard_normal((20, 2))
    with pytest.raises(TypeError, match="X must be real.*complex"):
        cca(X + 1j, Y)


def test_covariances_must_be_symmetric():
    C = np.array([[2.0, 0.5], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"covariance of X \(2x2\) is not symmetric: entry \(0, 1\) is 0.5"):
        cca_from_covariances(C, np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="covariance .* is not symmetric"):
        inverse_sqrt_psd(C)


def test_covariances_may_be_lists():
    rho, _, _ = cca_from_covariances([[1.0, 0.0], [0.0, 1.0]], [[1.0]], [[0.5], [0.0]])
    assert np.allclose(rho, [0.5])


# --- set models, convolution, forecasting -------------------------------------------------------

def test_max_pooling_of_an_empty_set_is_finite_and_equals_pooling_zeros():
    torch.manual_seed(0)
    model = PooledSetModel("max", 4)
    x = torch.randn(2, 3, 1)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    out = model(x, mask)
    assert torch.isfinite(out).all()
    assert torch.allclose(out[1], model.decoder(torch.zeros(4)).squeeze(-1))


@pytest.mark.parametrize("alpha", [math.inf, math.nan, -1.0, 0.0, True])
def test_conv_as_attention_rejects_a_non_finite_or_non_positive_alpha(alpha):
    x, w = torch.randn(1, 1, 5), torch.randn(1, 1, 3)
    with pytest.raises(ValueError, match="alpha"):
        conv_as_attention(x, w, alpha=alpha)


def test_conv_as_attention_names_an_alpha_too_large_for_the_dtype():
    x, w = torch.randn(1, 1, 5), torch.randn(1, 1, 3)
    with pytest.raises(ValueError, match=r"alpha=1e\+38 is too large for torch.float32"):
        conv_as_attention(x, w, alpha=1e38)


@pytest.mark.parametrize("horizon", [0, -2, 1.5])
def test_seasonal_naive_needs_a_positive_horizon(horizon):
    with pytest.raises(ValueError, match="horizon must be a positive int"):
        seasonal_naive(torch.zeros(2, 8), 4, horizon)


def test_forecaster_series_of_other_length_is_named():
    b = make_series(np.random.default_rng(0), 2, period=4, history=8, horizon=2)
    with pytest.raises(ValueError, match=r"history must have shape \(2, 12\)"):
        HorizonAttentionForecaster(12, 2, 8)(b.history, b.history_events, b.future_events)


# --- the explorer ---------------------------------------------------------------------------------

def test_explorer_refuses_too_many_tokens():
    n = viz.MAX_TOKENS + 1
    with pytest.raises(ValueError, match=rf"{n} query tokens.*at most MAX_TOKENS={viz.MAX_TOKENS}"):
        attention_explorer(torch.full((n, n), 1 / n), [str(i) for i in range(n)])


def test_explorer_refuses_too_many_weights_in_total():
    n = viz.MAX_TOKENS
    heads = viz.MAX_WEIGHTS // (n * n) + 1
    w = torch.full((heads, n, n), 1 / n)
    with pytest.raises(ValueError, match=rf"{heads * n * n} weights.*MAX_WEIGHTS={viz.MAX_WEIGHTS}"):
        attention_explorer(w, [str(i) for i in range(n)])


def test_explorer_at_the_limit_is_accepted():
    n = viz.MAX_TOKENS
    html = attention_explorer(torch.full((n, n), 1 / n), [str(i) for i in range(n)]).data
    assert html.count("<td") == n * n


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_explorer_takes_low_precision_weights(dtype):
    w = torch.softmax(torch.randn(3, 4), -1).to(dtype)
    html = attention_explorer(w, list("abcd"), list("xyz")).data
    want = attention_explorer(w.float(), list("abcd"), list("xyz"), title="float32").data
    assert html.count("<td") == want.count("<td") == 12


def test_a_named_choice_lists_the_choices_and_the_bad_value():
    from attention_course.validate import check_choice
    assert check_choice("split", "test", {"train": 0, "test": 1}) == "test"
    with pytest.raises(ValueError, match=r"split must be one of \['test', 'train'\], got 'dev'"):
        check_choice("split", "dev", {"train": 0, "test": 1})
    with pytest.raises(ValueError, match=r"norm must be one of \['post', 'pre'\] \(where\), got \['pre'\]"):
        check_choice("norm", ["pre"], ("pre", "post"), " (where)")          # unhashable: still a clear error
    with pytest.raises(ValueError, match="got True"):
        check_choice("cell", True, ("gru", "lstm"))
