"""The attention explorer's HTML: self-contained, deterministic, unique ids, clear errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
import torch
from attention_course import viz
from attention_course.viz import AttentionView, attention_explorer, explorer_html, transformer_explorer, views_explorer
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(autouse=True)
def fresh_ids(monkeypatch):
    """Each test starts like a fresh kernel: no explorer made yet."""
    monkeypatch.setattr(viz, "_seen", Counter())


def softmax_rows(rng, shape):
    x = rng.normal(size=shape) * 2
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def data_of(html: str) -> dict:
    """The DATA literal the script carries, parsed back (undoing the '</' escape)."""
    m = re.search(r"^var DATA = (.*);$", html, flags=re.M)
    assert m, "no DATA line in the script"
    return json.loads(m.group(1).replace("<\\/", "</").replace("<\\!--", "<!--"))


def ids_of(html: str) -> list[str]:
    return re.findall(r'(?<![-\w])id="([^"]+)"', html)


SRC = list("3 AUG 1995")
TGT = list("1995-08-03")


def date_like(seed=0):
    return softmax_rows(np.random.default_rng(seed), (len(TGT), len(SRC)))


# --------------------------------------------------------------------------- the HTML itself


def test_returns_html_object_with_everything_inline():
    out = attention_explorer(date_like(), SRC, TGT, title="dates")
    assert type(out).__name__ == "HTML" and isinstance(out.data, str)
    html = out.data
    assert html.startswith('<div class="ace-explorer"') and html.endswith("</div>")
    assert html.count("<script>") == 1 and html.count("</script>") == 1 and "<style>" in html
    # Nothing is fetched: no external resources, no module loaders, no CDN.
    for banned in ("src=", "href=", "require(", "requirejs", "import ", "cdn", "d3.", "@import", "url("):
        assert banned not in html.lower(), banned
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}  # SVG namespace only
    assert "Math.random" not in html and "Date.now" not in html


def test_fallback_table_holds_every_weight():
    w = date_like()
    html = attention_explorer(w, SRC, TGT).data
    table = re.search(r'<table class="ace-table">.*?</table>', html, flags=re.S).group(0)
    cells = re.findall(r'<td(?: style="background-color:rgba\(37,99,235,([0-9.]+)\);[^"]*")?>', table)
    assert len(cells) == len(SRC) * len(TGT)
    assert table.count('<th scope="row">') == len(TGT)
    assert table.count('<th scope="col">') == len(SRC)
    # Every cell's colour strength is its weight, rounded to 2 decimals; spaces are drawn visibly.
    alphas = [float(a or 0) for a in cells]                                  # an empty cell rounds to 0
    assert np.allclose(np.array(alphas).reshape(w.shape), np.round(w, 2), atol=1e-9)
    assert "\u2423" in table


def test_data_round_trips_rounded_weights_and_tokens():
    w = date_like()
    data = data_of(attention_explorer(w, SRC, TGT, decimals=3).data)
    assert data["decimals"] == 3 and len(data["views"]) == 1
    view = data["views"][0]
    assert view["q"] == [c.replace(" ", "\u2423") for c in TGT] and view["k"] == [c.replace(" ", "\u2423") for c in SRC]
    got = np.array(view["w"]) / 1000                                         # (L, H, T_q, T_k)
    assert got.shape == (1, 1, len(TGT), len(SRC))
    assert np.abs(got[0, 0] - w).max() <= 0.0005 + 1e-12


def test_tokens_cannot_break_out_of_the_script_or_the_markup():
    nasty = ["</script><script>alert(1)</script>", "<b>x</b>", '"quote"', "<!--"]
    w = softmax_rows(np.random.default_rng(1), (4, 4))
    html = attention_explorer(w, nasty).data
    assert html.lower().count("</script") == 1 and "<!--" not in html   # the only way out of a script
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert data_of(html)["views"][0]["k"] == nasty


def test_torch_tensors_and_all_three_ranks_are_accepted():
    w = torch.softmax(torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(0)), -1)
    src, tgt = list("abcde"), list("wxyz")
    for weights, shape in ((w[0, 0], (1, 1, 4, 5)), (w[0], (1, 3, 4, 5)), (w, (2, 3, 4, 5))):
        view = AttentionView(weights, src, tgt)
        assert view.weights.shape == shape
        assert view.layer_names == tuple(f"Layer {i}" for i in range(shape[0]))     # from 0, as the indices
        assert view.head_names == tuple(f"Head {i}" for i in range(shape[1]))
    data = data_of(attention_explorer(w, src, tgt, layer_names=["enc 1", "enc 2"], head_names=list("abc")).data)
    assert data["views"][0]["layers"] == ["enc 1", "enc 2"] and data["views"][0]["heads"] == ["a", "b", "c"]
    assert np.array(data["views"][0]["w"]).shape == (2, 3, 4, 5)


def test_transformer_explorer_has_the_three_views_with_their_tokens():
    rng = np.random.default_rng(2)
    src, tgt = ["the", "cat", "sat", "."], ["<s>", "le", "chat"]
    enc = softmax_rows(rng, (2, 4, 4, 4))
    dec = softmax_rows(rng, (2, 4, 3, 3)) * np.tril(np.ones((3, 3)))           # causal: nothing above the diagonal
    dec /= dec.sum(-1, keepdims=True)
    cross = softmax_rows(rng, (2, 4, 3, 4))
    data = data_of(transformer_explorer(src, tgt, encoder_self=enc, decoder_self=dec, cross=cross).data)
    names = [v["name"] for v in data["views"]]
    assert names == ["encoder self-attention", "decoder self-attention", "cross-attention"]
    shapes = [np.array(v["w"]).shape for v in data["views"]]
    assert shapes == [(2, 4, 4, 4), (2, 4, 3, 3), (2, 4, 3, 4)]
    enc_v, dec_v, cross_v = data["views"]
    assert enc_v["q"] == enc_v["k"] == src and dec_v["q"] == dec_v["k"] == tgt
    assert cross_v["q"] == tgt and cross_v["k"] == src
    assert np.all(np.triu(np.array(dec_v["w"]), k=1) == 0)
    assert [v["kind"] for v in data["views"]] == ["self", "self", "cross"]
    # One view only is fine too; none is an error.
    assert len(data_of(transformer_explorer(src, tgt, cross=cross).data)["views"]) == 1
    with pytest.raises(ValueError, match="at least one of encoder_self"):
        transformer_explorer(src, tgt)


# --------------------------------------------------------------------------- determinism and ids


def test_same_input_gives_the_same_html_in_a_fresh_process():
    code = ("import numpy as np; from attention_course.viz import attention_explorer;"
            "x = np.random.default_rng(0).normal(size=(10, 10)); w = np.exp(x) / np.exp(x).sum(-1, keepdims=True);"
            "print(attention_explorer(w, list('3 AUG 1995'), list('1995-08-03'), title='dates').data, end='')")
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    x = np.random.default_rng(0).normal(size=(10, 10))
    here = attention_explorer(np.exp(x) / np.exp(x).sum(-1, keepdims=True), SRC, TGT, title="dates").data
    assert fresh == here


def test_ids_are_unique_across_explorers_even_with_equal_content():
    w = date_like()
    first, second = attention_explorer(w, SRC, TGT).data, attention_explorer(w, SRC, TGT).data
    other = attention_explorer(date_like(1), SRC, TGT).data
    ids = [ids_of(h)[0] for h in (first, second, other)]
    assert len(set(ids)) == 3
    assert ids[1] == ids[0] + "-2"                        # same content: same hash, next count
    for h, uid in zip((first, second, other), ids):
        assert ids_of(h) == [uid]                         # one id per explorer ...
        assert f'data-ace-id="{uid}"' in h and f'var ID = "{uid}";' in h   # ... which its script looks for
    # Only the id differs between the two equal explorers.
    assert first.replace(ids[0], "X") == second.replace(ids[1], "X")


def test_title_and_decimals_change_the_id():
    w = date_like()
    a = ids_of(attention_explorer(w, SRC, TGT, title="a").data)[0]
    b = ids_of(attention_explorer(w, SRC, TGT, title="b").data)[0]
    c = ids_of(attention_explorer(w, SRC, TGT, title="a", decimals=3).data)[0]
    assert len({a, b, c}) == 3


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("weights, src, tgt, error, message", [
    (np.full((10, 9), 0.1), SRC, TGT, ValueError, r"\(10, 9\) \(T_q, T_k\) do not match the tokens: 10 tgt_tokens"),
    (np.full((9, 10), 0.1), SRC, TGT, ValueError, r"\(9, 10\) \(T_q, T_k\) do not match"),
    (np.full((3, 3), 0.1), list("abcd"), None, ValueError, r"4 src_tokens"),
    (np.full(10, 0.1), SRC, TGT, ValueError, r"got 1 dims \(10,\)"),
    (np.full((2, 2, 2, 10, 10), 0.1), SRC, TGT, ValueError, r"got 5 dims \(2, 2, 2, 10, 10\).*pass one example"),
    (np.ones((10, 10), dtype=bool), SRC, TGT, TypeError, r"dtype bool"),
    (np.full((10, 10), 0.1 + 0j), SRC, TGT, TypeError, r"dtype complex128"),
    (np.full((10, 10), 2.0), SRC, TGT, ValueError, r"must lie in \[0, 1\], got values from 2 to 2 .*softmax"),
    (np.full((10, 10), -0.5), SRC, TGT, ValueError, r"from -0.5"),
    (np.full((10, 10), 0.1), "3 AUG 1995", TGT, TypeError, r"got one str '3 AUG 1995'.*list\(text\)"),
    (np.full((10, 10), 0.1), SRC, [1] * 10, TypeError, r"tgt_tokens must contain only str, got int 1"),
    (np.full((10, 10), 0.1), SRC, 5, TypeError, r"tgt_tokens must be a sequence of token strings, got int"),
    (np.zeros((0, 0)), [], None, ValueError, r"src_tokens is empty"),
])
def test_bad_input_gets_a_clear_error(weights, src, tgt, error, message):
    with pytest.raises(error, match=message):
        attention_explorer(weights, src, tgt)


def test_nan_and_inf_are_located():
    w = np.full((2, 3, 10, 10), 0.1)
    w[1, 2, 4, 7] = np.nan
    w[1, 2, 5, 0] = np.inf
    where = r"first at \(layer, head, query, key\) = \(1, 2, 4, 7\)"
    with pytest.raises(ValueError, match=r"2 non-finite values .* " + where):
        attention_explorer(w, SRC, TGT)


def test_bad_names_kind_and_options():
    w = np.full((2, 3, 10, 10), 0.1)
    with pytest.raises(ValueError, match="layer_names has 3 names but the weights have 2 layers"):
        attention_explorer(w, SRC, TGT, layer_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="head_names has 2 names but the weights have 3 heads"):
        attention_explorer(w, SRC, TGT, head_names=["a", "b"])
    with pytest.raises(ValueError, match="kind must be 'self' or 'cross', got 'encoder'"):
        attention_explorer(w, SRC, TGT, kind="encoder")
    with pytest.raises(ValueError, match="self-attention needs as many queries as keys, got 3 and 10"):
        attention_explorer(np.full((3, 10), 0.1), SRC, list("abc"), kind="self")
    with pytest.raises(ValueError, match="decimals must be an int from 1 to 4, got 7"):
        attention_explorer(w, SRC, TGT, decimals=7)
    with pytest.raises(TypeError, match="title must be a str or None, got int"):
        attention_explorer(w, SRC, TGT, title=3)
    with pytest.raises(TypeError, match="non-empty sequence of AttentionView"):
        views_explorer([])
    with pytest.raises(TypeError, match="non-empty sequence of AttentionView"):
        views_explorer([np.zeros((2, 2))])


# --------------------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 3), H=st.integers(1, 4), Tq=st.integers(1, 7), Tk=st.integers(1, 7),
       seed=st.integers(0, 2**32 - 1), decimals=st.integers(1, 4))
def test_any_valid_weights_round_trip_within_half_a_unit(L, H, Tq, Tk, seed, decimals):
    w = softmax_rows(np.random.default_rng(seed), (L, H, Tq, Tk))
    src, tgt = [f"k{j}" for j in range(Tk)], [f"q{i}" for i in range(Tq)]
    html = explorer_html([AttentionView(w, src, tgt)], decimals=decimals)
    got = np.array(data_of(html)["views"][0]["w"]) / 10 ** decimals
    assert got.shape == (L, H, Tq, Tk)
    assert np.abs(got - w).max() <= 0.5 / 10 ** decimals + 1e-12
    assert html.count("<td") == Tq * Tk                       # the static table: layer 1, head 1


def test_explorer_html_accepts_a_single_view():
    view = AttentionView(date_like(), SRC, TGT)
    assert len(data_of(explorer_html(view))["views"]) == 1
