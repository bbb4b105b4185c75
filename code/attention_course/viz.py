"""An attention explorer: point at a token and see where it looks.

    attention_explorer(weights, src_tokens, tgt_tokens)      # weights (T_q, T_k), (H, ...) or (L, H, ...)

returns an ``IPython.display.HTML`` object: one self-contained piece of HTML with an inline
``<style>``, an inline ``<script>`` that draws SVG links, and a static heat-map table. Nothing is
loaded from the network (no CDN, no require.js, no d3) and nothing needs a module loader, so the
same output serves the built book offline (tests/test_browser_viz.py checks it in Chromium) and
the notebook front ends that run the inline scripts of trusted outputs (JupyterLab, classic
Notebook, VS Code, Colab). Several explorers share a page without clashing: each keeps its state
in its own closure and finds its own root by an id.

Shapes. ``weights[..., i, j]`` is how much query ``i`` attends to key ``j``:

    weights (T_q, T_k)          one layer, one head
            (H, T_q, T_k)       one layer, H heads
            (L, H, T_q, T_k)    L layers of H heads
    src_tokens  T_k strings     the keys: the source (encoder) side, drawn on the right
    tgt_tokens  T_q strings     the queries: the target (decoder) side, on the left;
                                None for self-attention (queries = keys = src_tokens)

Several views with their own tokens (for a Transformer: encoder self-attention, decoder
self-attention and cross-attention; or several examples) go into one explorer with
:func:`views_explorer` or :func:`transformer_explorer`; a menu switches between them.

What the reader can do: hover, tap or focus a token to highlight its links and show their
weights next to the tokens on the other side (a query shows the row of weights it hands out, a
key the column it receives), with the token's index and the indices of the tokens it weights most
in a line above; click or press Enter to pin a token; arrow keys move the focus
(Up/Down along a column, Left/Right across; Home/End; Escape unpins); menus choose the view,
the layer and the head. Colours come from the surrounding text colour plus one accent that
reads on light and dark pages (pydata-sphinx-theme's ``html[data-theme="dark"]``, JupyterLab,
VS Code and ``prefers-color-scheme`` are recognised).

Numbering. Positions, layers and heads are numbered from 0, as Python and the package index them:
the token at index ``i`` is ``weights[..., i, :]`` (a query) or ``weights[..., :, i]`` (a key), and
the default names of layers and heads are "Layer 0", "Head 0", ...

Without JavaScript. The HTML first contains a heat-map table of the weights (one per view, at
the first layer and head), readable with no script at all; the script hides it when it builds
the interactive explorer. So where scripts do not run, the table is what one sees: a browser
with JavaScript off, and an *untrusted* notebook in JupyterLab or classic Notebook (a notebook
that you did not execute yourself: the front end strips inline scripts from its HTML outputs,
and may drop some styling). Run the cell, or trust the notebook (classic: File > Trust
Notebook; JupyterLab: the command "Trust Notebook"), to get the interactive version.

Size. One view has at most ``MAX_TOKENS`` (200) queries and keys, one explorer at most
``MAX_WEIGHTS`` (250,000) weights over all its views, layers and heads; above that the explorer
raises ValueError saying what to slice, instead of writing a page that takes many seconds to open.

Determinism. The HTML depends only on the arguments (weights are stored rounded to
``decimals`` digits) and on how many explorers with the same content this process made before:
the element id is a hash of the content plus that count, never a random number, so a notebook
re-executed from the top stores byte-identical outputs (nbval compares them).
"""

from __future__ import annotations

import hashlib
import html
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from IPython.display import HTML

__all__ = ["AttentionView", "attention_explorer", "views_explorer", "transformer_explorer", "explorer_html",
           "MAX_TOKENS", "MAX_WEIGHTS"]

# Labels of the two columns for each kind of attention: (queries, keys).
_LABELS = {"cross": ("output (queries)", "input (keys)"), "self": ("queries", "keys")}
_ACCENT = (37, 99, 235)  # the static table's colour; the interactive view takes it from CSS
# Size limits: the page holds every weight (in the script's data) and one table cell and one SVG line per
# query-key pair of a view, so it grows with T_q x T_k. 600 x 600 tokens took 17 s to become interactive in
# Chromium; one 200 x 200 view is a 1.1 MB page with 40,000 links, a ninth of that. Slice the weights to
# show a longer sequence.
MAX_TOKENS = 200       # queries or keys of one view
MAX_WEIGHTS = 250_000  # numbers in one explorer: every view, layer, head, query and key
_seen: Counter[str] = Counter()  # content hash -> explorers made with it so far (for unique ids)


def _as_array(weights) -> np.ndarray:
    if hasattr(weights, "detach"):  # a torch tensor, without importing torch here
        weights = weights.detach().cpu()
        if weights.is_floating_point():
            weights = weights.double()  # numpy has no bfloat16
        weights = weights.numpy()
    arr = np.asarray(weights)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"weights must be real numbers (float or int), got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _as_tokens(tokens, what: str) -> tuple[str, ...]:
    if isinstance(tokens, str):
        raise TypeError(f"{what} must be a sequence of token strings, got one str {tokens!r}: "
                        f"pass list(text) for characters or text.split() for words")
    try:
        out = tuple(tokens)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of token strings, got {type(tokens).__name__}") from None
    bad = [t for t in out if not isinstance(t, str)]
    if bad:
        raise TypeError(f"{what} must contain only str, got {type(bad[0]).__name__} {bad[0]!r}")
    if not out:
        raise ValueError(f"{what} is empty: an explorer needs at least one token on each side")
    return out


def _names(names, n: int, default: str, what: str) -> tuple[str, ...]:
    if names is None:
        return tuple(f"{default} {i}" for i in range(n))             # from 0, as the weights' own indices
    out = _as_tokens(names, what)
    if len(out) != n:
        raise ValueError(f"{what} has {len(out)} names but the weights have {n} {default.lower()}s")
    return out


@dataclass(frozen=True)
class AttentionView:
    """One attention map to explore: weights ``(L, H, T_q, T_k)`` with their tokens and names.

    Build it with the same arguments as :func:`attention_explorer` plus ``name`` (shown in the
    view menu); the constructor checks everything and normalises ``weights`` to 4 dims.
    ``kind`` is ``"cross"`` (queries and keys are different sequences) or ``"self"``
    (one sequence; ``tgt_tokens`` may be None); it only sets the default column labels.
    """

    weights: np.ndarray
    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...] | None = None
    name: str = "attention"
    layer_names: tuple[str, ...] | None = None
    head_names: tuple[str, ...] | None = None
    kind: str | None = None
    query_label: str | None = None
    key_label: str | None = None

    def __post_init__(self):
        w = _as_array(self.weights)
        if w.ndim not in (2, 3, 4):
            raise ValueError(f"weights must have shape (T_q, T_k), (H, T_q, T_k) or (L, H, T_q, T_k); got "
                             f"{w.ndim} dims {w.shape} (for a batch, pass one example: weights[b])")
        w = w.reshape((1,) * (4 - w.ndim) + w.shape)                        # (L, H, T_q, T_k)
        src = _as_tokens(self.src_tokens, "src_tokens")
        tgt = src if self.tgt_tokens is None else _as_tokens(self.tgt_tokens, "tgt_tokens")
        if w.shape[-1] != len(src) or w.shape[-2] != len(tgt):
            raise ValueError(f"weights of shape {w.shape[-2:]} (T_q, T_k) do not match the tokens: "
                             f"{len(tgt)} {'tgt' if self.tgt_tokens is not None else 'src'}_tokens (queries, rows) "
                             f"and {len(src)} src_tokens (keys, columns)")
        for side, n in (("query", w.shape[-2]), ("key", w.shape[-1])):
            if n > MAX_TOKENS:
                raise ValueError(f"{n} {side} tokens are too many for the explorer (at most MAX_TOKENS={MAX_TOKENS}"
                                 f" per side; the page would hold {w.shape[-2] * w.shape[-1]:,} links per head): "
                                 f"show a slice, for example weights[..., :{MAX_TOKENS}, :{MAX_TOKENS}]")
        bad = ~np.isfinite(w)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"weights contain {int(bad.sum())} non-finite values (NaN or inf), the first at "
                             f"(layer, head, query, key) = {where}: {w[where]}")
        if w.min() < -1e-6 or w.max() > 1 + 1e-6:
            raise ValueError(f"attention weights must lie in [0, 1], got values from {w.min():.4g} to "
                             f"{w.max():.4g} (scores or logits? apply the softmax first)")
        kind = self.kind or ("self" if self.tgt_tokens is None else "cross")
        if kind not in _LABELS:
            raise ValueError(f"kind must be 'self' or 'cross', got {kind!r}")
        if kind == "self" and len(src) != len(tgt):
            raise ValueError(f"self-attention needs as many queries as keys, got {len(tgt)} and {len(src)}")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        set_ = object.__setattr__  # frozen dataclass: normalise once, here
        set_(self, "weights", np.clip(w, 0.0, 1.0))
        set_(self, "src_tokens", src)
        set_(self, "tgt_tokens", tgt)
        set_(self, "kind", kind)
        set_(self, "layer_names", _names(self.layer_names, w.shape[0], "Layer", "layer_names"))
        set_(self, "head_names", _names(self.head_names, w.shape[1], "Head", "head_names"))
        set_(self, "query_label", self.query_label or _LABELS[kind][0])
        set_(self, "key_label", self.key_label or _LABELS[kind][1])


def _shown(token: str) -> str:
    """How a token is drawn: visible spaces and line breaks, a mark for the empty string."""
    return (token.replace(" ", "\u2423").replace("\n", "\u21b5").replace("\t", "\u21e5")) or "\u2205"


def _fmt(q: int, decimals: int) -> str:
    return f"{q / 10 ** decimals:.{decimals}f}"


def _table(view: AttentionView, quantized: np.ndarray, decimals: int) -> str:
    """The static heat map of one view (its first layer and head): an HTML table, readable without JS."""
    e = html.escape
    r, g, b = _ACCENT
    scale = 10 ** decimals
    rows = ['<tr><th scope="col" class="ace-corner"></th>'
            + "".join(f'<th scope="col">{e(_shown(t))}</th>' for t in view.src_tokens) + "</tr>"]
    for i, tok in enumerate(view.tgt_tokens):
        cells = []
        for j in range(len(view.src_tokens)):
            q = int(quantized[0, 0, i, j])
            alpha = _fmt(q, decimals)
            ink = "color:#fff;" if q * 2 >= scale else ""
            text = alpha[1:] if alpha.startswith("0.") else alpha              # .85 keeps the table narrow
            cells.append(f'<td style="background-color:rgba({r},{g},{b},{alpha});{ink}">{text}</td>' if q
                         else "<td></td>")
        rows.append(f'<tr><th scope="row">{e(_shown(tok))}</th>{"".join(cells)}</tr>')
    where = "".join(f"; {e(names[0])} of {len(names)}" for names in (view.layer_names, view.head_names)
                    if len(names) > 1)
    caption = (f"{e(view.name)} (rows: {e(view.query_label)}; columns: {e(view.key_label)}{where}). "
               f"Empty cells are below {0.5 / 10 ** decimals:.{decimals + 1}f}.")
    return (f'<table class="ace-table"><caption>{caption}</caption>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def explorer_html(views: Sequence[AttentionView], *, title: str | None = None, decimals: int = 2) -> str:
    """The explorer's HTML as a string (what :func:`views_explorer` wraps in an HTML object)."""
    if isinstance(views, AttentionView):
        views = [views]
    views = list(views)
    if not views or not all(isinstance(v, AttentionView) for v in views):
        raise TypeError("views must be a non-empty sequence of AttentionView")
    if not isinstance(decimals, int) or not 1 <= decimals <= 4:
        raise ValueError(f"decimals must be an int from 1 to 4, got {decimals!r}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__}")
    total = sum(v.weights.size for v in views)
    if total > MAX_WEIGHTS:
        raise ValueError(f"{total} weights are too many for one explorer (at most MAX_WEIGHTS={MAX_WEIGHTS}; the "
                         f"page holds every one): pass fewer views, layers or heads, or shorter sequences")
    quantized = [np.rint(v.weights * 10 ** decimals).astype(np.int64) for v in views]
    data = {"decimals": decimals, "views": [
        {"name": v.name, "kind": v.kind, "qLabel": v.query_label, "kLabel": v.key_label,
         "q": [_shown(t) for t in v.tgt_tokens], "k": [_shown(t) for t in v.src_tokens],
         "layers": list(v.layer_names), "heads": list(v.head_names), "w": q.tolist()}
        for v, q in zip(views, quantized)]}
    payload = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    digest = hashlib.sha1(f"{title!r}\n{payload}".encode()).hexdigest()[:12]
    _seen[digest] += 1
    uid = f"ace-{digest}" + (f"-{_seen[digest]}" if _seen[digest] > 1 else "")
    # Inside <script>, "</" could end the element early: JSON allows "\/" for "/".
    payload = payload.replace("</", "<\\/").replace("<!--", "<\\!--")
    e = html.escape
    head = f'<div class="ace-title">{e(title)}</div>' if title else ""
    tables = "".join(_table(v, q, decimals) for v, q in zip(views, quantized))
    note = ('<p class="ace-note">Static heat map (darker = more weight). With JavaScript on, or in a trusted '
            'notebook, this is an interactive explorer.</p>')
    script = _JS.replace("__ACE_ID__", uid).replace("__ACE_DATA__", payload)
    return (f'<div class="ace-explorer" id="{uid}" data-ace-id="{uid}">{_CSS}{head}'
            f'<div class="ace-fallback">{note}{tables}</div>'
            f'<script>{script}</script></div>')


def views_explorer(views: Sequence[AttentionView], *, title: str | None = None, decimals: int = 2) -> HTML:
    """One explorer over several views (a menu switches between them); see :class:`AttentionView`."""
    return HTML(explorer_html(views, title=title, decimals=decimals))


def attention_explorer(weights, src_tokens: Sequence[str], tgt_tokens: Sequence[str] | None = None, *,
                       layer_names: Sequence[str] | None = None, head_names: Sequence[str] | None = None,
                       title: str | None = None, kind: str | None = None, name: str = "attention",
                       decimals: int = 2) -> HTML:
    """An interactive view of attention ``weights`` (T_q, T_k), (H, T_q, T_k) or (L, H, T_q, T_k).

    ``src_tokens`` label the keys (columns, right), ``tgt_tokens`` the queries (rows, left);
    leave ``tgt_tokens`` out for self-attention. Raises ValueError/TypeError naming the
    offending shape or value for mismatched tokens, NaN or out-of-range weights, wrong dims.
    """
    view = AttentionView(weights, src_tokens, tgt_tokens, name=name, layer_names=layer_names,
                         head_names=head_names, kind=kind)
    return views_explorer([view], title=title, decimals=decimals)


def transformer_explorer(src_tokens: Sequence[str], tgt_tokens: Sequence[str], *, encoder_self=None,
                         decoder_self=None, cross=None, layer_names: Sequence[str] | None = None,
                         head_names: Sequence[str] | None = None, title: str | None = None,
                         decimals: int = 2) -> HTML:
    """The three attentions of an encoder-decoder Transformer, one view each (give any of them).

    ``encoder_self`` (L, H, S, S) over ``src_tokens``; ``decoder_self`` (L, H, T, T) over
    ``tgt_tokens``; ``cross`` (L, H, T, S) from ``tgt_tokens`` (queries) to ``src_tokens`` (keys).
    Fewer dims are accepted as in :func:`attention_explorer`.
    """
    views = []
    if encoder_self is not None:
        views.append(AttentionView(encoder_self, src_tokens, None, name="encoder self-attention", kind="self",
                                   layer_names=layer_names, head_names=head_names,
                                   query_label="encoder (queries)", key_label="encoder (keys)"))
    if decoder_self is not None:
        views.append(AttentionView(decoder_self, tgt_tokens, None, name="decoder self-attention", kind="self",
                                   layer_names=layer_names, head_names=head_names,
                                   query_label="decoder (queries)", key_label="decoder (keys)"))
    if cross is not None:
        views.append(AttentionView(cross, src_tokens, tgt_tokens, name="cross-attention", kind="cross",
                                   layer_names=layer_names, head_names=head_names,
                                   query_label="decoder (queries)", key_label="encoder (keys)"))
    if not views:
        raise ValueError("give at least one of encoder_self, decoder_self and cross")
    return views_explorer(views, title=title, decimals=decimals)


# The style is scoped to .ace-explorer, so repeating it per explorer is harmless. Token text uses the
# page's own colour; the accent (lines, highlights) is one blue, lighter on dark pages. In its dark
# mode pydata-sphinx-theme (the book's theme) puts HTML outputs on a light panel, made for outputs
# that assume a white page; the one rule outside .ace-explorer undoes that for outputs that are
# explorers, which draw themselves for either background.
_CSS = """<style>
.ace-explorer{--ace-rgb:37,99,235;color:inherit;font-size:13px;line-height:1.3;margin:.5em 0;max-width:100%;
overflow-x:auto}
html[data-theme="dark"] .ace-explorer,body[data-jp-theme-light="false"] .ace-explorer,body.vscode-dark .ace-explorer,
html[theme="dark"] .ace-explorer{--ace-rgb:96,165,250}
html[data-theme="dark"] .bd-content div.cell_output div.text_html:has(> div.ace-explorer){background-color:transparent;
color:inherit;padding:0}
@media (prefers-color-scheme:dark){html:not([data-theme]) body:not([data-jp-theme-light]) .ace-explorer{
--ace-rgb:96,165,250}}
.ace-explorer .ace-title{font-weight:600;margin:0 0 .4em}
.ace-explorer .ace-note{font-size:12px;opacity:.8;margin:0 0 .3em}
.ace-explorer table.ace-table{border-collapse:collapse;margin:0 0 .8em;font-size:11px;width:auto}
.ace-explorer table.ace-table caption{caption-side:top;text-align:left;font-size:12px;padding:0 0 .2em}
.ace-explorer table.ace-table th,.ace-explorer table.ace-table td{border:1px solid rgba(127,127,127,.3);
padding:1px 3px;text-align:center;min-width:1.6em;font-weight:normal}
.ace-explorer .ace-controls{display:flex;flex-wrap:wrap;gap:.4em 1.2em;margin:0 0 .5em;align-items:center}
.ace-explorer .ace-controls select{font:inherit;color:inherit;background:transparent;
border:1px solid rgba(127,127,127,.6);border-radius:4px;padding:1px 4px}
.ace-explorer .ace-controls option{color:#000;background:#fff}
.ace-explorer .ace-stage{display:grid;grid-template-columns:auto 160px auto;justify-content:start;column-gap:0}
.ace-explorer .ace-colhead{font-size:12px;opacity:.8;padding:0 0 4px}
.ace-explorer .ace-left .ace-colhead,.ace-explorer .ace-colhead.ace-l{text-align:right}
.ace-explorer .ace-col{display:flex;flex-direction:column}
.ace-explorer .ace-left{align-items:flex-end}
.ace-explorer button.ace-tok{all:unset;box-sizing:border-box;display:flex;align-items:center;gap:6px;height:24px;
padding:0 6px;border-radius:4px;cursor:pointer;white-space:pre;color:inherit;font:inherit;
font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
background-color:rgba(var(--ace-rgb),calc(var(--ace-w,0)*.6))}
.ace-explorer .ace-left button.ace-tok{flex-direction:row}
.ace-explorer button.ace-tok:focus-visible{outline:2px solid rgb(var(--ace-rgb));outline-offset:-2px}
.ace-explorer button.ace-tok.ace-cur{box-shadow:inset 0 0 0 2px rgb(var(--ace-rgb))}
.ace-explorer button.ace-tok.ace-pinned{text-decoration:underline}
.ace-explorer .ace-w{font-size:11px;min-width:2.6em;opacity:.85;text-align:right}
.ace-explorer .ace-right .ace-w{text-align:left}
.ace-explorer svg.ace-links{display:block;overflow:visible}
.ace-explorer svg.ace-links line{stroke:rgb(var(--ace-rgb))}
.ace-explorer .ace-readout{margin:0 0 .5em;min-height:1.3em;font-size:12px}
.ace-explorer.ace-live .ace-fallback{display:none}
</style>"""

# Plain ES5-style script in an IIFE: no globals, no imports, no network. It finds its root through
# document.currentScript (the script sits inside the root) or, where front ends evaluate scripts
# elsewhere (classic Notebook's jQuery), through the data-ace-id attribute, retrying briefly until
# the output is attached.
_JS = r"""(function () {
"use strict";
var ID = "__ACE_ID__";
var DATA = __ACE_DATA__;
var ROW = 24, GAP = 160, NS = "http://www.w3.org/2000/svg";
var SCALE = Math.pow(10, DATA.decimals);
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function fmt(v) { return (v / SCALE).toFixed(DATA.decimals); }
function init(root) {
  if (!root || root.getAttribute("data-ace-ready") === "1") return;
  root.setAttribute("data-ace-ready", "1");
  var st = {view: 0, layer: 0, head: 0, hover: null, focus: null, pin: null, roving: {q: 0, k: 0}};
  var ui = el("div", "ace-ui"), controls = el("div", "ace-controls"), stage = el("div", "ace-stage");
  var readout = el("div", "ace-readout");
  readout.setAttribute("aria-live", "polite");
  // JupyterLab and Notebook 7 bind arrow keys to cell navigation; this attribute keeps them off here.
  ui.setAttribute("data-lm-suppress-shortcuts", "true");
  ui.appendChild(controls); ui.appendChild(readout); ui.appendChild(stage);
  var lines = [], buttons = {q: [], k: []}, labels = {q: [], k: []};
  function view() { return DATA.views[st.view]; }
  function menu(text, names, value, onchange, cls) {
    var wrap = el("label", "ace-control " + cls), s = el("select");
    wrap.appendChild(el("span", null, text + " "));
    for (var i = 0; i < names.length; i++) {
      var o = el("option", null, names[i]);
      o.value = String(i);
      s.appendChild(o);
    }
    s.value = String(value);
    s.addEventListener("change", function () { onchange(parseInt(s.value, 10)); });
    wrap.appendChild(s);
    controls.appendChild(wrap);
  }
  function buildControls() {
    controls.textContent = "";
    var names = DATA.views.map(function (v) { return v.name; });
    if (names.length > 1) menu("View", names, st.view, function (i) { st.view = i; rebuild(); }, "ace-view");
    var v = view();
    if (v.layers.length > 1) menu("Layer", v.layers, st.layer, function (i) { st.layer = i; render(); }, "ace-layer");
    if (v.heads.length > 1) menu("Head", v.heads, st.head, function (i) { st.head = i; render(); }, "ace-head");
  }
  function token(side, i, text, label) {
    var b = el("button", "ace-tok");
    b.type = "button";
    b.setAttribute("data-side", side);
    b.setAttribute("data-i", String(i));
    b.setAttribute("aria-label", label + " at index " + i + ": " + text);
    b.setAttribute("aria-pressed", "false");
    b.tabIndex = -1;
    var w = el("span", "ace-w", ""), t = el("span", "ace-t", text);
    if (side === "q") { b.appendChild(w); b.appendChild(t); } else { b.appendChild(t); b.appendChild(w); }
    b.addEventListener("mouseenter", function () { st.hover = {side: side, i: i}; render(); });
    b.addEventListener("mouseleave", function () { st.hover = null; render(); });
    b.addEventListener("focus", function () {  // the keyboard takes over from a resting mouse
      st.focus = {side: side, i: i}; st.hover = null; rove(side, i); render();
    });
    b.addEventListener("blur", function () { st.focus = null; render(); });
    b.addEventListener("click", function () {
      st.pin = (st.pin && st.pin.side === side && st.pin.i === i) ? null : {side: side, i: i};
      render();
    });
    buttons[side].push(b);
    labels[side].push(w);
    return b;
  }
  function rove(side, i) {
    st.roving[side] = i;
    for (var s in buttons) for (var j = 0; j < buttons[s].length; j++)
      buttons[s][j].tabIndex = (j === st.roving[s]) ? 0 : -1;
  }
  function go(side, i) {
    var n = buttons[side].length;
    i = Math.max(0, Math.min(n - 1, i));
    rove(side, i);
    buttons[side][i].focus();
  }
  function key(ev, side, i) {
    var other = side === "q" ? "k" : "q";
    switch (ev.key) {
      case "ArrowDown": go(side, i + 1); break;
      case "ArrowUp": go(side, i - 1); break;
      case "Home": go(side, 0); break;
      case "End": go(side, buttons[side].length - 1); break;
      case "ArrowRight": if (side === "q") go("k", i); else return; break;
      case "ArrowLeft": if (side === "k") go("q", i); else return; break;
      case "Escape": st.pin = null; render(); break;
      default: return;
    }
    ev.preventDefault();
    ev.stopPropagation();
  }
  function rebuild() {
    st.hover = st.focus = st.pin = null;
    st.roving = {q: 0, k: 0};
    var v = view();
    st.layer = Math.min(st.layer, v.layers.length - 1);
    st.head = Math.min(st.head, v.heads.length - 1);
    buildControls();
    stage.textContent = "";
    lines = []; buttons = {q: [], k: []}; labels = {q: [], k: []};
    var nq = v.q.length, nk = v.k.length, n = Math.max(nq, nk), height = n * ROW;
    var offq = (n - nq) * ROW / 2, offk = (n - nk) * ROW / 2;
    stage.appendChild(el("div", "ace-colhead ace-l", v.qLabel));
    stage.appendChild(el("div", "ace-colhead", ""));
    stage.appendChild(el("div", "ace-colhead", v.kLabel));
    var left = el("div", "ace-col ace-left"), right = el("div", "ace-col ace-right");
    left.style.paddingTop = offq + "px";
    right.style.paddingTop = offk + "px";
    var i, j;
    for (i = 0; i < nq; i++) left.appendChild(token("q", i, v.q[i], "query"));
    for (j = 0; j < nk; j++) right.appendChild(token("k", j, v.k[j], "key"));
    var svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", "ace-links");
    svg.setAttribute("width", String(GAP));
    svg.setAttribute("height", String(height));
    svg.setAttribute("viewBox", "0 0 " + GAP + " " + height);
    svg.setAttribute("aria-hidden", "true");
    for (i = 0; i < nq; i++) {
      lines.push([]);
      for (j = 0; j < nk; j++) {
        var line = document.createElementNS(NS, "line");
        line.setAttribute("x1", "4");
        line.setAttribute("y1", String(offq + (i + 0.5) * ROW));
        line.setAttribute("x2", String(GAP - 4));
        line.setAttribute("y2", String(offk + (j + 0.5) * ROW));
        svg.appendChild(line);
        lines[i].push(line);
      }
    }
    stage.appendChild(left); stage.appendChild(svg); stage.appendChild(right);
    rove("q", 0);
    render();
  }
  function top(pairs) {
    pairs.sort(function (a, b) { return b[1] - a[1] || a[2] - b[2]; });
    return pairs.filter(function (p) { return p[1] > 0; }).slice(0, 3)
      .map(function (p) { return "\u201c" + p[0] + "\u201d at " + p[2] + " (" + fmt(p[1]) + ")"; }).join(", ");
  }
  function render() {
    var v = view(), W = v.w[st.layer][st.head], cur = st.hover || st.focus || st.pin;
    var nq = v.q.length, nk = v.k.length, i, j;
    for (i = 0; i < nq; i++) for (j = 0; j < nk; j++) {
      var w = W[i][j] / SCALE, line = lines[i][j], on = false, op;
      if (!cur) op = 0.6 * w;
      else { on = cur.side === "q" ? i === cur.i : j === cur.i; op = on && w > 0 ? 0.25 + 0.75 * w : 0; }
      line.setAttribute("stroke-opacity", op.toFixed(3));
      line.setAttribute("stroke-width", on ? (1 + 3 * w).toFixed(2) : "1.5");
      line.setAttribute("class", on && W[i][j] > 0 ? "ace-on" : "");
    }
    ["q", "k"].forEach(function (side) {
      for (var n = 0; n < buttons[side].length; n++) {
        var b = buttons[side][n], val = null;
        if (cur && cur.side !== side) val = side === "k" ? W[cur.i][n] : W[n][cur.i];
        labels[side][n].textContent = val === null ? "" : fmt(val);
        b.style.setProperty("--ace-w", val === null ? "0" : (val / SCALE).toFixed(3));
        var isCur = !!cur && cur.side === side && cur.i === n;
        b.classList.toggle("ace-cur", isCur);
        var pinned = !!st.pin && st.pin.side === side && st.pin.i === n;
        b.classList.toggle("ace-pinned", pinned);
        b.setAttribute("aria-pressed", pinned ? "true" : "false");
      }
    });
    var where = (v.layers.length > 1 ? v.layers[st.layer] + ", " : "") +
      (v.heads.length > 1 ? v.heads[st.head] + ": " : "");
    if (!cur) readout.textContent = where + "Hover, tap or focus a token (arrow keys move) to see its weights.";
    else if (cur.side === "q") {   // indices from 0, as in Python: "at index 6 of 0-10"
      readout.textContent = where + "query \u201c" + v.q[cur.i] + "\u201d at index " + cur.i + " of 0\u2013" +
        (nq - 1) + " attends most to " + (top(v.k.map(function (t, n) { return [t, W[cur.i][n], n]; })) || "nothing");
    } else {
      readout.textContent = where + "key \u201c" + v.k[cur.i] + "\u201d at index " + cur.i + " of 0\u2013" +
        (nk - 1) + " gets the most weight from " +
        (top(v.q.map(function (t, n) { return [t, W[n][cur.i], n]; })) || "no query");
    }
  }
  // Keys are caught on the way down (capture on window), before the front end's own shortcuts see
  // them: Notebook 7 moves between cells on arrow keys even with data-lm-suppress-shortcuts.
  window.addEventListener("keydown", function (ev) {
    var t = ev.target;
    if (t && t.classList && t.classList.contains("ace-tok") && ui.contains(t))
      key(ev, t.getAttribute("data-side"), parseInt(t.getAttribute("data-i"), 10));
  }, true);
  var fallback = root.querySelector(".ace-fallback");
  root.insertBefore(ui, fallback);
  rebuild();
  root.classList.add("ace-live");
  if (fallback) fallback.style.display = "none";
}
function all() {
  var roots = document.querySelectorAll('[data-ace-id="' + ID + '"]');
  for (var i = 0; i < roots.length; i++) init(roots[i]);
  return roots.length;
}
var me = document.currentScript, root = me && me.parentNode;
if (root && root.getAttribute && root.getAttribute("data-ace-id") === ID) init(root);
if (!all()) {
  var tries = 0, timer = setInterval(function () { if (all() || ++tries > 50) clearInterval(timer); }, 100);
}
})();"""
