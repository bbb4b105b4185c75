"""Every Chapter 4 exercise checker accepts the reference solution and rejects typical wrong answers."""

import math

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
