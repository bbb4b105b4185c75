"""Feature importance of each input token, and how to compare two rankings of the tokens.

Jain & Wallace (2019) ask whether attention ranks the tokens of a review the way other
importance measures do. Two measures, each (N, T) with zeros on padding:

    gradient        |dP/dx_t| for the one-hot input x_t, which is |grad_{e_t} P . e_t| for the
                    embedding e_t; the attention weights are held fixed (detached), so the
                    gradient measures the path through the encoder, not through the attention
    leave-one-out   |P(review) - P(review with token t deleted)|, the output change (total
                    variation distance of the two class distributions) when t is removed

Agreement of two rankings: Kendall's tau (scipy's tau-b) over each review's real tokens.
Against a known explanation: precision at k, the fraction of the k top-ranked tokens that are
true evidence, with k the number of evidence tokens of that review.

Against the model itself, ERASER's faithfulness scores (DeYoung et al. 2020): with the rationale the
top-ranked tokens, comprehensiveness is p(y|x) - p(y|x without the rationale) and sufficiency is
p(y|x) - p(y|the rationale alone), y the class the model predicts on x, each averaged over rationales
of several sizes (their AOPC over bins of 1, 5, 10, 20 and 50% of the tokens).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import kendalltau

from ..layers.attention import padding_mask
from ..models.classifier import AttentionClassifier
from ..validate import check_float_tensor, check_lengths, first_index

__all__ = ["gradient_importance", "leave_one_out_importance", "kendall_tau", "precision_at_k", "ERASER_BINS",
           "eraser_faithfulness"]

ERASER_BINS = (0.01, 0.05, 0.1, 0.2, 0.5)   # DeYoung et al.'s rationale sizes, as fractions of the tokens


def gradient_importance(model: AttentionClassifier, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(N, T): |dP(positive)/d one-hot x_t| with the model's attention weights detached."""
    model.eval()
    model._check(tokens, lengths)
    tokens, lengths = _on_model(model, tokens, lengths)
    embedded = model.embed(tokens).detach().requires_grad_(True)            # (N, T, E)
    hs = model.states(embedded, lengths)
    weights = model.attend(hs, lengths).detach()                            # no gradient through attention
    probs = torch.sigmoid(model.head(hs, weights))                          # (N,)
    (grad,) = torch.autograd.grad(probs.sum(), embedded)                    # rows are independent
    importance = (grad * embedded).sum(-1).abs().detach()                   # (N, T)
    return importance * padding_mask(lengths, tokens.shape[1])[:, 0]


@torch.no_grad()
def leave_one_out_importance(model: AttentionClassifier, tokens: torch.Tensor,
                             lengths: torch.Tensor) -> torch.Tensor:
    """(N, T): |P(x) - P(x without token t)| for every real token t; 0 on padding.

    All N x T shortened reviews run as one batch: row (n, t) is review n with position t
    deleted and the rest shifted left (a review of length 1 keeps its token, change 0).
    """
    model.eval()
    model._check(tokens, lengths)
    tokens, lengths = _on_model(model, tokens, lengths)
    N, T = tokens.shape
    full = torch.sigmoid(model(tokens, lengths)[0])                          # (N,)
    pos = torch.arange(T, device=tokens.device)
    # source index for position j of the copy that drops t: j if j < t else j + 1
    src = pos[None, :] + (pos[None, :] >= pos[:, None]).long()              # (T_drop, T)
    src = src.clamp(max=T - 1)
    dropped = tokens[:, src]                                                 # (N, T_drop, T)
    dropped = torch.where(pos[None, None, :] < (lengths - 1)[:, None, None], dropped, 0)
    short = (lengths - 1).clamp(min=1)[:, None].expand(N, T)                 # (N, T_drop)
    keep = lengths[:, None] == 1                                             # nothing to drop
    dropped = torch.where(keep[:, :, None], tokens[:, None, :], dropped)
    probs = torch.sigmoid(model(dropped.reshape(N * T, T), short.reshape(-1))[0]).reshape(N, T)
    change = (probs - full[:, None]).abs()
    return change * padding_mask(lengths, T)[:, 0] * ~keep


def _on_model(model: AttentionClassifier, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tensors moved to the device of the model's parameters."""
    device = next(model.parameters()).device
    return tuple(t.to(device) for t in tensors)


def _as_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def kendall_tau(a: torch.Tensor, b: torch.Tensor, lengths: torch.Tensor) -> np.ndarray:
    """(N,) Kendall tau-b between rows of ``a`` and ``b`` (N, T) over each row's real tokens.

    A row with fewer than two tokens, or constant on one side, has no ranking: NaN.
    """
    if a.shape != b.shape:
        raise ValueError(f"the two importance maps differ in shape: {tuple(a.shape)} and {tuple(b.shape)}")
    a, b, lengths = _as_numpy(a), _as_numpy(b), _as_numpy(lengths)
    taus = np.full(len(a), np.nan)
    for n, L in enumerate(lengths):
        if L >= 2 and np.ptp(a[n, :L]) > 0 and np.ptp(b[n, :L]) > 0:
            taus[n] = kendalltau(a[n, :L], b[n, :L]).statistic
    return taus


def _check_ranking(scores: torch.Tensor, evidence: torch.Tensor, lengths: torch.Tensor) -> None:
    check_float_tensor("scores", scores, min_dims=2)
    if scores.dim() != 2 or scores.shape != evidence.shape:
        raise ValueError(f"scores {tuple(scores.shape)} and evidence {tuple(evidence.shape)} must share one "
                         f"(N, T) shape")
    if evidence.dtype != torch.bool:
        raise TypeError(f"evidence must be a boolean tensor, got {evidence.dtype}")
    check_lengths(lengths, scores.shape[0], scores.shape[1], minimum=0)
    real = padding_mask(lengths.to(scores.device), scores.shape[1])[:, 0]
    if (evidence & ~real).any():
        raise ValueError(f"evidence marks padding (row, position) = {first_index(evidence & ~real)}: only real "
                         f"tokens can be evidence")
    if torch.isnan(scores[real]).any():
        raise ValueError(f"scores hold NaN at real tokens, first at (row, position) = "
                         f"{first_index(torch.isnan(scores) & real)}: NaN has no rank")


def precision_at_k(scores: torch.Tensor, evidence: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(N,): the fraction of each row's top-k tokens by ``scores`` that are ``evidence`` tokens.

    ``scores`` (N, T) float, ``evidence`` (N, T) bool; k is the row's number of evidence tokens
    (rows without evidence give NaN). Padding is never ranked. Ties go to the earlier position.
    """
    _check_ranking(scores, evidence, lengths)
    T = scores.shape[1]
    real = padding_mask(lengths.to(scores.device), T)[:, 0]
    ranked = torch.where(real, scores.detach().double(), float("-inf"))           # padding ranks last
    order = torch.sort(ranked, dim=1, descending=True, stable=True).indices       # (N, T)
    k = evidence.sum(1)                                                           # (N,)
    top = torch.arange(T, device=scores.device)[None, :] < k[:, None]             # first k ranks
    hits = (evidence.gather(1, order) & top).sum(1).float()
    return torch.where(k > 0, hits / k.clamp(min=1), float("nan"))


def _kept(tokens: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's kept tokens moved to the front in their order, padding after: (tokens (M, T), lengths (M,)).

    A row that keeps nothing becomes a single padding token (length 1), the model's input for "no words".
    """
    T = tokens.shape[1]
    pos = torch.arange(T, device=tokens.device)
    order = torch.argsort(torch.where(keep, pos, pos + T), dim=1)               # kept positions first
    lengths = keep.sum(1)
    moved = torch.where(pos[None, :] < lengths[:, None], tokens.gather(1, order), 0)
    return moved, lengths.clamp(min=1)


@torch.no_grad()
def eraser_faithfulness(model: AttentionClassifier, tokens: torch.Tensor, lengths: torch.Tensor,
                        scores: torch.Tensor,
                        bins: tuple[float, ...] = ERASER_BINS) -> tuple[torch.Tensor, torch.Tensor]:
    """(comprehensiveness (N,), sufficiency (N,)) of the token ranking ``scores`` (N, T) for each review.

    For each fraction q of ``bins`` the rationale is the review's ceil(q * length) top-ranked real tokens
    (ties to the earlier position, padding never ranked). With y the class the model predicts on the whole
    review and p(y|.) its probability:

        comprehensiveness = p(y|x) - p(y|x with the rationale deleted)   (large: the rationale was needed)
        sufficiency       = p(y|x) - p(y|the rationale alone)            (small: the rationale suffices)

    Deleted tokens are removed and the rest closes up, as in leave-one-out; each score is averaged over
    the bins (DeYoung et al.'s AOPC). A review left with no token is read as one padding token.
    """
    model.eval()
    model._check(tokens, lengths)
    check_float_tensor("scores", scores, min_dims=2)
    if scores.shape != tokens.shape:
        raise ValueError(f"scores {tuple(scores.shape)} must match tokens {tuple(tokens.shape)}")
    if not bins or not all(isinstance(q, (int, float)) and 0 < q <= 1 for q in bins):
        raise ValueError(f"bins must be fractions in (0, 1], at least one, got {bins!r}")
    tokens, lengths, scores = _on_model(model, tokens, lengths, scores.detach())
    N, T = tokens.shape
    real = padding_mask(lengths, T)[:, 0]                                           # (N, T)
    if torch.isnan(scores[real]).any():
        raise ValueError(f"scores hold NaN at real tokens, first at (row, position) = "
                         f"{first_index(torch.isnan(scores) & real)}: NaN has no rank")
    full = torch.sigmoid(model(tokens, lengths)[0])                                 # (N,)
    predicted = full >= 0.5

    def p_predicted(p: torch.Tensor) -> torch.Tensor:                               # p(y|.) for the predicted y
        return torch.where(predicted, p, 1 - p)

    order = torch.sort(torch.where(real, scores.double(), float("-inf")), dim=1, descending=True,
                       stable=True).indices
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(T, device=tokens.device).expand(N, T))
    comprehensiveness, sufficiency = [], []
    for q in bins:
        k = torch.ceil(q * lengths.double()).long().clamp(min=1)                    # (N,) rationale sizes
        rationale = (rank < k[:, None]) & real                                      # (N, T)
        for keep, out in ((real & ~rationale, comprehensiveness), (rationale, sufficiency)):
            p = torch.sigmoid(model(*_kept(tokens, keep))[0])
            out.append(p_predicted(full) - p_predicted(p))
    return torch.stack(comprehensiveness).mean(0), torch.stack(sufficiency).mean(0)
