"""Other attention, same prediction? Permuted and adversarial attention (Jain & Wallace 2019).

Distances between distributions (natural logarithm throughout):

    total variation  TVD(p, q) = 1/2 sum_i |p_i - q_i|; for two classes it is |p - q|, the
                     change in P(positive)
    Jensen-Shannon   JSD(p, q) = 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, between 0 and
                     ln 2 = 0.693 (reached by distributions with disjoint supports)

The adversary of Jain & Wallace looks for attention a' over the same encoder states that is as
far as possible from the model's attention a (largest JSD) while the prediction moves by at
most epsilon (TVD <= 0.01). For a classifier whose output layer is linear (ours), the logit
is ``sum_t a_t s_t + b`` with s_t = w . h_t (:meth:`AttentionClassifier.token_logits`), so the
constraint says that ``sum_t a'_t s_t`` stays inside an interval [lo, hi]. The feasible set is
the probability simplex cut by two parallel planes, a polytope whose corners have at most two
non-zero weights; JSD(., a) is convex, so its maximum sits on a corner. Enumerating the corners
solves the adversary's problem exactly (:func:`adversarial_attention`). Jain & Wallace, whose
models were not always of this form, searched by gradient descent on a penalised loss;
:func:`jain_wallace_adversaries` follows the configuration of their released code, and
:func:`adversarial_attention_search` is a simplified search of ours (one adversary, a smaller
penalty, the best feasible iterate kept). Either can only find less than the exact corners.

Wiegreffe & Pinter (2019, Section 4) ask a different question with a *model-consistent* adversary:
not an edit of a trained model's attention, but a whole second model of the same architecture,
trained from scratch to reproduce the first one's predictions while its own attention moves away
from the first one's. :func:`consistent_adversary_loss` is their objective per batch,

    mean_i TVD(y_adv_i, y_base_i) - lambda * mean_i D(a_adv_i, a_base_i),

with D the KL divergence KL(a_adv || a_base), as in their paper's loss and their released code
(``divergence="kl"``, the default), or, as a variant of ours, the bounded JSD (``divergence="jsd"``); the
trainer is :func:`attention_course.experiments.reviews.train_consistent_adversary`. KL has no upper bound
(with the floor of :func:`kl_divergence`, about 23 nats for attention moved entirely off the base model's
support), so lambda sets how much the attention term can outweigh the outputs' TVD, which is at most 1.
"""

from __future__ import annotations

import math

import torch

from ..layers.attention import masked_softmax, padding_mask
from ..validate import check_choice, check_lengths, positive_int

__all__ = ["js_divergence", "total_variation", "permutation_output_change", "adversarial_attention",
           "adversarial_attention_search", "jain_wallace_adversaries", "best_adversary",
           "kl_divergence", "consistent_adversary_loss", "ADVERSARY_DIVERGENCES"]


def _check_distributions(p: torch.Tensor, q: torch.Tensor) -> None:
    if p.shape != q.shape:
        raise ValueError(f"the two distributions differ in shape: {tuple(p.shape)} and {tuple(q.shape)}")
    if (p < 0).any() or (q < 0).any():
        raise ValueError("probabilities must be non-negative")


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """JSD over the last axis, in nats: (..., T), (..., T) -> (...). Zeros are fine (0 log 0 = 0)."""
    _check_distributions(p, q)
    m = (p + q) / 2
    kl_pm = (torch.xlogy(p, p) - torch.xlogy(p, m)).sum(-1)
    kl_qm = (torch.xlogy(q, q) - torch.xlogy(q, m)).sum(-1)
    return (kl_pm + kl_qm) / 2


def total_variation(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """TVD between two-class predictions given as P(positive), (...) and (...) -> (...): |p - q|."""
    _check_distributions(p, q)
    return (p - q).abs()


@torch.no_grad()
def permutation_output_change(token_logits: torch.Tensor, bias: float, weights: torch.Tensor,
                              lengths: torch.Tensor, n_permutations: int = 100,
                              generator: torch.Generator | None = None) -> torch.Tensor:
    """(N,) median |P(permuted attention) - P(attention)| over random shuffles of each row's weights.

    ``token_logits`` (N, T) are the s_t = w . h_t of the encoder states, which stay in place;
    only the weights (N, T) move, among the row's real tokens.
    """
    token_logits, weights, real = _padding_cleared(token_logits, weights, lengths)   # real (N, T)
    N, T = weights.shape
    keys = _uniform((N, n_permutations, T), generator).to(weights.device)         # sorting keys
    keys = keys.masked_fill(~real[:, None, :], float("inf"))                       # padding sorts last
    order = keys.argsort(-1)                                                       # (N, P, T)
    shuffled = weights[:, None, :].expand(N, n_permutations, T).gather(-1, order)  # (N, P, T)
    base = torch.sigmoid((weights * token_logits).sum(-1) + bias)                  # (N,)
    moved = torch.sigmoid((shuffled * token_logits[:, None, :]).sum(-1) + bias)    # (N, P)
    return total_variation(moved, base[:, None].expand_as(moved)).median(-1).values


def _padding_cleared(token_logits: torch.Tensor, weights: torch.Tensor,
                     lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(token_logits, weights, real (N, T)) with both maps set to 0 on padding: a select, so that NaN or
    inf there cannot reach a sum (0 * inf is NaN)."""
    if token_logits.shape != weights.shape or weights.dim() != 2:
        raise ValueError(f"token_logits {tuple(token_logits.shape)} and weights {tuple(weights.shape)} must share "
                         f"one (N, T) shape")
    check_lengths(lengths, weights.shape[0], weights.shape[1], minimum=0)
    real = padding_mask(lengths.to(weights.device), weights.shape[1])[:, 0]
    return token_logits.masked_fill(~real, 0.0), weights.masked_fill(~real, 0.0), real


def _uniform(shape: tuple[int, ...], generator: torch.Generator | None) -> torch.Tensor:
    """U(0, 1) numbers drawn on the generator's device (the CPU by default), so results do not depend
    on the device of the data."""
    return torch.rand(shape, generator=generator, device=generator.device if generator is not None else "cpu")


def _logit_interval(base_prob: torch.Tensor, bias: float, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Bounds on sum_t a'_t s_t that keep |sigmoid(. + bias) - base_prob| <= epsilon (may be infinite)."""
    lo_p, hi_p = base_prob - epsilon, base_prob + epsilon
    lo = torch.where(lo_p > 0, torch.logit(lo_p.clamp(min=1e-12)), float("-inf")) - bias
    hi = torch.where(hi_p < 1, torch.logit(hi_p.clamp(max=1 - 1e-7)), float("inf")) - bias
    return lo, hi


@torch.no_grad()
def adversarial_attention(token_logits: torch.Tensor, bias: float, weights: torch.Tensor, lengths: torch.Tensor,
                          epsilon: float = 0.01, chunk: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention farthest from ``weights`` (largest JSD) that moves P(positive) by <= epsilon.

    ``token_logits`` (N, T) = s_t, ``weights`` (N, T) the model's attention. Returns
    (adversarial weights (N, T), their JSD from ``weights`` (N,)), exact up to float rounding:
    every corner of the feasible polytope is tried (one-token distributions inside the interval,
    and two-token mixtures on its boundary), O(T^2) candidates per row, ``chunk`` rows at a time
    (the result does not depend on ``chunk``; small chunks keep the candidates in the CPU's cache).
    """
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must lie in (0, 1), got {epsilon!r}")
    token_logits, weights, real = _padding_cleared(token_logits, weights, lengths)
    parts = [_corners(token_logits[i:i + chunk], bias, weights[i:i + chunk], real[i:i + chunk], epsilon)
             for i in range(0, len(weights), positive_int("chunk", chunk))]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def _jsd_term(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One token's share of JSD(c, a) where c_t = x and a_t = y, minus its share when c_t = 0 (y ln 2 / 2)."""
    m = (x + y) / 2
    return (torch.xlogy(x, x) - torch.xlogy(x, m) + torch.xlogy(y, y) - torch.xlogy(y, m) - y * math.log(2)) / 2


def _corners(token_logits, bias, weights, real, epsilon):
    """:func:`adversarial_attention` for one chunk of rows; ``real`` (N, T) marks the real tokens.

    A corner has at most two non-zero weights, so its JSD from ``a`` needs only those two tokens:
    every token outside the corner's support adds a_t ln 2 / 2, the same for all corners, and the two
    inside add :func:`_jsd_term`. The corners are scored that way, O(T^2) per row, and only the best
    one is built."""
    s, a = token_logits.double(), weights.double()
    N, T = s.shape
    base = torch.sigmoid((a * s).sum(-1) + bias)
    lo, hi = _logit_interval(base, bias, epsilon - 1e-6)                             # a hair inside
    outside = a.sum(-1, keepdim=True) * math.log(2) / 2                              # (N, 1): every a_t outside
    # corners with one token: all weight on token i, feasible if lo <= s_i <= hi
    ok1 = real & (s >= lo[:, None]) & (s <= hi[:, None])                            # (N, T)
    scores, oks, lams = [outside + _jsd_term(torch.ones_like(a), a)], [ok1], [torch.ones_like(a)]
    # corners with two tokens i, j on a boundary c: lam s_i + (1 - lam) s_j = c, 0 < lam < 1
    diff = s[:, :, None] - s[:, None, :]                                            # (N, i, j)
    pair_real = real[:, :, None] & real[:, None, :] & (diff != 0)
    for c in (lo, hi):
        lam = (c[:, None, None] - s[:, None, :]) / torch.where(diff != 0, diff, 1.0)
        ok2 = pair_real & torch.isfinite(c)[:, None, None] & (lam > 0) & (lam < 1)  # (N, i, j)
        lam = torch.where(ok2, lam, 0.0)
        jsd2 = outside[:, :, None] + _jsd_term(lam, a[:, :, None]) + _jsd_term(1 - lam, a[:, None, :])
        scores.append(jsd2.reshape(N, T * T))
        oks.append(ok2.reshape(N, T * T))
        lams.append(lam.reshape(N, T * T))
    scores.append(torch.zeros(N, 1, dtype=s.dtype, device=s.device))               # the model's own: always feasible
    oks.append(torch.ones(N, 1, dtype=torch.bool, device=s.device))
    score = torch.cat(scores, 1).masked_fill(~torch.cat(oks, 1), -1.0)
    best = score.argmax(1)                                                          # (N,) in [0, T + 2 T^2]
    rows = torch.arange(N, device=s.device)
    lam = torch.cat(lams, 1)[rows, best.clamp(max=T + 2 * T * T - 1)]
    pair = (best - T) % (T * T)
    i = torch.where(best < T, best, pair // T)                                      # the token that gets lam
    j = torch.where(best < T, best, pair % T)                                       # and the one that gets 1 - lam
    adv = torch.zeros_like(a)
    adv[rows, j] = 1 - lam
    adv[rows, i] += lam                                                             # one token: i == j, lam = 1
    own = best == T + 2 * T * T
    adv[own] = a[own]
    return adv.to(weights.dtype), js_divergence(adv, a).to(weights.dtype)


def adversarial_attention_search(token_logits: torch.Tensor, bias: float, weights: torch.Tensor,
                                 lengths: torch.Tensor, epsilon: float = 0.01, steps: int = 300,
                                 lr: float = 0.1, penalty: float = 100.0, seed: int = 0
                                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient ascent on JSD with a penalty on the output change, all rows at once (Jain & Wallace's
    approach). Keeps, per row, the farthest iterate that satisfies the constraint. Same returns as
    :func:`adversarial_attention`.
    """
    s, a, real = _padding_cleared(token_logits.detach(), weights.detach(), lengths)
    N, T = s.shape
    mask = real[:, None, :]                                                         # (N, 1, T)
    base = torch.sigmoid((a * s).sum(-1) + bias)
    noise = torch.randn(N, T, generator=torch.Generator().manual_seed(seed), device="cpu").to(a.device)
    z = (torch.log(a.clamp(min=1e-6)) + 0.5 * noise).requires_grad_(True)
    opt = torch.optim.Adam([z], lr=lr)
    best, best_jsd = a.clone(), torch.zeros(N, dtype=a.dtype, device=a.device)
    for _ in range(steps):
        new = masked_softmax(z[:, None, :], mask)[:, 0]
        jsd = js_divergence(new, a)
        change = total_variation(torch.sigmoid((new * s).sum(-1) + bias), base)
        with torch.no_grad():
            better = (change <= epsilon) & (jsd > best_jsd)
            best[better], best_jsd[better] = new[better], jsd[better]
        loss = (-jsd + penalty * torch.relu(change - epsilon)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return best.detach(), best_jsd


def jain_wallace_adversaries(token_logits: torch.Tensor, bias: float, weights: torch.Tensor, lengths: torch.Tensor,
                             k: int = 5, steps: int = 500, lr: float = 0.01, noise: float = 3.0,
                             penalty: float = 500.0, epsilon: float = 0.01, seed: int = 0
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """``k`` adversarial attentions per row, searched as in Jain & Wallace's released code.

    Their configuration (``AdversaryMulti`` in successar/AttentionExplanation): the adversaries'
    logits start at log(uniform) plus N(0, noise^2) noise; Adam (amsgrad) with learning rate
    ``lr`` runs ``steps`` steps on

        sum_k [ -JSD(a'_k, a) + penalty * ReLU(|P(a'_k) - P(a)| - epsilon) ] - mean JSD(a'_j, a'_k),

    the last term (summed over the rows, averaged over the k x k pairs) pushing the adversaries apart.
    JSD is computed as H((p + q)/2) - (H(p) + H(q))/2 (H the entropy), the same quantity with fewer
    operations, so that the pairwise term costs k(k-1)/2 mixtures instead of k^2 divergences.
    Their decoder recomputes the output from the attention; ours is ``sigmoid(sum_t a'_t s_t + b)``,
    the same computation for a linear output layer. Returns (the final adversaries (N, k, T),
    their output changes |P(a'_k) - P(a)| (N, k)); pick among them with :func:`best_adversary`.
    """
    k, steps = positive_int("k", k), positive_int("steps", steps)
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must lie in (0, 1), got {epsilon!r}")
    s, a, real = _padding_cleared(token_logits.detach(), weights.detach(), lengths)
    N, T = s.shape
    mask = real[:, None, :].expand(N, k, T)                                          # (N, k, T)
    base = torch.sigmoid((a * s).sum(-1) + bias)[:, None]                            # (N, 1)
    gen = torch.Generator().manual_seed(seed)
    start = torch.log(torch.where(real, 1.0 / lengths.to(a.device)[:, None].clamp(min=1), 1.0))
    z = (start[:, None, :] + noise * torch.randn(N, k, T, generator=gen).to(a.device)).requires_grad_(True)
    opt = torch.optim.Adam([z], lr=lr, amsgrad=True)
    j, i = torch.triu_indices(k, k, 1, device=a.device)                            # the k(k-1)/2 pairs j < i
    h_a = _entropy(a)[:, None]                                                       # (N, 1)
    for _ in range(steps):
        new = torch.softmax(z.masked_fill(~mask, float("-inf")), -1)                 # (N, k, T)
        change = (torch.sigmoid((new * s[:, None, :]).sum(-1) + bias) - base).abs()  # (N, k)
        h_new = _entropy(new)                                                        # (N, k)
        jsd = _entropy((new + a[:, None, :]) / 2) - (h_new + h_a) / 2                # (N, k) JSD(a'_k, a)
        # sum over all k x k pairs of JSD(a'_j, a'_i) = 2 sum_{j<i} H(m_ji) + sum_j H(a'_j) - k sum_j H(a'_j)
        pairs = 2 * _entropy((new[:, j] + new[:, i]) / 2).sum(1) - (k - 1) * h_new.sum(1)   # (N,)
        loss = (-jsd + penalty * torch.relu(change - epsilon)).sum() - pairs.sum() / k ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        new = torch.softmax(z.masked_fill(~mask, float("-inf")), -1)
        change = (torch.sigmoid((new * s[:, None, :]).sum(-1) + bias) - base).abs()
    return new.detach(), change


def _entropy(p: torch.Tensor) -> torch.Tensor:
    """Entropy over the last axis in nats, 0 log 0 = 0: (..., T) -> (...). The clamp keeps the gradient
    finite at p = 0 (log 0 is -inf); it changes the value by less than 1e-10 per entry."""
    return -(p * torch.log(p.clamp(min=1e-12))).sum(-1)


def best_adversary(adversaries: torch.Tensor, changes: torch.Tensor, weights: torch.Tensor,
                   tolerance: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, the adversary (N, k, T) farthest in JSD from ``weights`` (N, T) among those whose output
    change (N, k) is at most ``tolerance``; the model's own attention (JSD 0) if none is. Returns
    (weights (N, T), JSD (N,)). Jain & Wallace's plotting code keeps changes up to 0.05."""
    if adversaries.dim() != 3 or adversaries.shape[::2] != weights.shape or changes.shape != adversaries.shape[:2]:
        raise ValueError(f"adversaries (N, k, T) {tuple(adversaries.shape)}, changes (N, k) {tuple(changes.shape)} "
                         f"and weights (N, T) {tuple(weights.shape)} do not match")
    jsd = js_divergence(adversaries, weights[:, None, :].expand_as(adversaries)).masked_fill(changes > tolerance, -1.0)
    best = jsd.argmax(1)
    rows = torch.arange(len(weights), device=weights.device)
    ok = jsd[rows, best] >= 0
    return (torch.where(ok[:, None], adversaries[rows, best], weights),
            torch.where(ok, jsd[rows, best], torch.zeros_like(jsd[rows, best])))


def kl_divergence(p: torch.Tensor, q: torch.Tensor, floor: float = 1e-10) -> torch.Tensor:
    """KL(p || q) over the last axis, in nats: (..., T), (..., T) -> (...).

        KL(p || q) = sum_t p_t (ln(p_t + floor) - ln(q_t + floor))

    The ``floor`` inside both logarithms is Wiegreffe & Pinter's (``kld`` in their released code adds
    1e-10): mass of p where q is 0 costs about p * 23 nats instead of inf, and the gradient stays
    finite where p is 0 (d/dp of p ln p is ln p, -inf at 0, which a softmax turns into NaN).
    """
    _check_distributions(p, q)
    if not (isinstance(floor, (int, float)) and floor > 0):
        raise ValueError(f"floor must be positive, got {floor!r}")
    return (p * (torch.log(p + floor) - torch.log(q + floor))).sum(-1)


_DIVERGENCES = {"kl": kl_divergence, "jsd": js_divergence}
ADVERSARY_DIVERGENCES = tuple(_DIVERGENCES)     # the attention terms the model-consistent adversary can use
_DIVERGENCE_HINT = " (the attention term of the loss: Wiegreffe & Pinter's KL, or the bounded JSD)"


def consistent_adversary_loss(adv_probs: torch.Tensor, base_probs: torch.Tensor, adv_weights: torch.Tensor,
                              base_weights: torch.Tensor, lam: float, divergence: str = "kl") -> torch.Tensor:
    """Wiegreffe & Pinter's adversarial objective on a batch, to be minimised (a scalar):

        mean TVD(adv_probs, base_probs) - lam * mean D(adv_weights, base_weights)

    ``adv_probs``, ``base_probs`` (N,) are P(positive) of the adversary and of the base model (TVD of
    two classes: |p - q|); ``adv_weights``, ``base_weights`` (N, T) their attention; ``lam`` >= 0 the
    trade-off (0: only reproduce the predictions). D is ``"kl"``, KL(adv || base) (:func:`kl_divergence`),
    the term of their paper's loss and of their released code, or ``"jsd"``, a bounded variant of ours.
    Their code sums over the batch and takes half of |p - q| as the TVD; we average and take the whole,
    which rescales lambda by 2 and nothing else (their lambda is half of ours).
    """
    check_choice("divergence", divergence, _DIVERGENCES, _DIVERGENCE_HINT)
    if not (isinstance(lam, (int, float)) and lam >= 0):
        raise ValueError(f"lam must be a number >= 0, got {lam!r}")
    if adv_probs.shape != base_probs.shape or adv_probs.dim() != 1:
        raise ValueError(f"adv_probs {tuple(adv_probs.shape)} and base_probs {tuple(base_probs.shape)} must share "
                         f"one (N,) shape")
    if adv_weights.shape != base_weights.shape or adv_weights.shape[:1] != adv_probs.shape:
        raise ValueError(f"adv_weights {tuple(adv_weights.shape)} and base_weights {tuple(base_weights.shape)} must "
                         f"share one (N, T) shape with N = {adv_probs.shape[0]}")
    tvd = total_variation(adv_probs, base_probs)                                     # (N,)
    return tvd.mean() - lam * _DIVERGENCES[divergence](adv_weights, base_weights).mean()
