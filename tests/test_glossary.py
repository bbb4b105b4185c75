"""The glossary (book/glossary.md) and the notation page (book/notation.md) against the chapters.

Always checked: the glossary parses, every entry has an English and a Korean name and names where
it is taught, and every ``{term}`` role in any chapter points at a glossary entry (a chapter never
links a term the glossary lacks). An entry names its place in one of two forms:

* "*Chapter N.*": the chapter links the entry with ``{term}`` (checked below);
* "*Section N.M.*": the section of that chapter, which must exist with that number, for an entry
  that the chapter does not link yet. When the chapter links it, write "*Chapter N.*" instead.

The notation page (book/notation.md) lists each symbol once per meaning, checked as: in each
scope a symbol is defined in at most one table row. The tables of the course-wide sections form one
scope; the canonical correlation table and each chapter's rows of "Symbols that belong to one
chapter" form the scope of that chapter, where a letter may take a meaning of its own.

Checked per chapter, for the chapters listed below (grow the lists as chapters are linked):

* CHAPTERS_WITH_TERMS: the chapter links, with ``{term}``, every glossary entry that names it
  ("*Chapter N.*"). When every chapter is listed, every term is used and linked at least once.
* NOTATION_CHECKED_CHAPTERS: every symbol in the chapter's math ($...$, $$...$$) appears in the
  math of the notation page or is common notation (COMMON_MACROS, INDEX_LETTERS).

Run ``python tests/test_glossary.py`` for a report on every chapter, listed or not: the terms
still to link and the symbols still missing from the notation page.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"
NOTATION = ROOT / "book" / "notation.md"
CHAPTER_FILES = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
LESSON_NUMBERS = {int(p.name[:2]) for p in CHAPTER_FILES}

# Chapter notebook stems (e.g. "01_seq2seq_bottleneck") whose {term} links are complete.
CHAPTERS_WITH_TERMS: list[str] = ["01_seq2seq_bottleneck", "02_attention", "03_self_attention",
                                   "04_multihead_attention", "05_transformer", "06_attention_cca",
                                   "07_attention_explanation", "08_beyond"]
# Chapter notebook stems whose math uses only symbols defined on the notation page: every lesson and
# every evidence page.
NOTATION_CHECKED_CHAPTERS: list[str] = [p.stem for p in CHAPTER_FILES]
# Spellings the course retired for one notation (book/notation.md): width d_m, heads n_h.
RETIRED_NOTATION = {"N_h": "n_h (number of heads)", "N_{h}": "n_h (number of heads)",
                    "d_{\\text{model}}": "d_m (model width)", "d_\\text{model}": "d_m (model width)",
                    "d_{\\mathrm{model}}": "d_m (model width)", "d_{model}": "d_m (model width)"}

HANGUL = re.compile(r"[\uac00-\ud7a3]")
TERM_ROLE = re.compile(r"\{term\}`([^`]+)`")
CHAPTER_REF = re.compile(r"Chapters? ([0-9][0-9 ,and]*)")
SECTION_REF = re.compile(r"Sections? ([0-9]+\.[0-9]+(?:(?:, | and |-)[0-9]+\.[0-9]+)*)")

# Formatting, operators and functions: never a symbol that needs a row on the notation page.
COMMON_MACROS = {
    "\\frac", "\\tfrac", "\\dfrac", "\\sqrt", "\\sum", "\\prod", "\\int", "\\log", "\\exp", "\\ln", "\\tanh",
    "\\sin", "\\cos", "\\max", "\\min", "\\arg", "\\argmax", "\\lim", "\\det", "\\top", "\\dots", "\\ldots",
    "\\cdots", "\\vdots", "\\ddots", "\\cdot", "\\times", "\\le", "\\leq", "\\ge", "\\geq", "\\ne", "\\neq",
    "\\approx", "\\sim", "\\propto", "\\equiv", "\\in", "\\notin", "\\subset", "\\subseteq", "\\to",
    "\\rightarrow", "\\leftarrow", "\\Rightarrow", "\\mapsto", "\\infty", "\\partial", "\\nabla", "\\pm",
    "\\mp", "\\circ", "\\quad", "\\qquad", "\\left", "\\right", "\\big", "\\Big", "\\bigg", "\\Bigg",
    "\\lVert", "\\rVert", "\\lvert", "\\rvert", "\\langle", "\\rangle", "\\mathbf", "\\mathbb", "\\mathcal",
    "\\boldsymbol", "\\bm", "\\hat", "\\tilde", "\\bar", "\\overline", "\\underbrace", "\\overbrace",
    "\\begin", "\\end", "\\hline", "\\displaystyle", "\\label", "\\tag", "\\underset", "\\overset",
    "\\operatorname", "\\mathrm", "\\text", "\\textrm", "\\textbf", "\\textit", "\\mbox", "\\emph",
    "\\vert", "\\Vert", "\\mid", "\\colon", "\\forall", "\\exists", "\\lfloor", "\\rfloor", "\\lceil",
    "\\rceil", "\\,", "\\;", "\\!", "\\ ", "\\\\", "\\{", "\\}", "\\|", "\\%", "\\#", "\\&", "\\_",
    "\\bullet", "\\star", "\\ast", "\\odot", "\\otimes", "\\oplus", "\\setminus", "\\cup", "\\cap",
    "\\emptyset", "\\varnothing", "\\mathrm{d}", "\\operatorname*", "\\limits", "\\nolimits", "\\choose",
    "\\binom", "\\mathsf", "\\mathtt", "\\rm", "\\bf", "\\it", "\\land", "\\lor", "\\lnot", "\\neg",
    "\\uparrow", "\\downarrow", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\gg", "\\ll", "\\prime", "\\ell",
    "\\textstyle", "\\scriptstyle", "\\bmod", "\\pmod", "\\mod", "\\pi",
}
# Bound indices and counters a chapter may introduce on the spot.
INDEX_LETTERS = {"i", "j", "l", "m", "r", "u", "e", "f", "g", "z", "L", "N", "O"}
# Macros whose argument is words or a number set (\\mathbb{R}), not symbols: their content is dropped before tokenising.
_WORD_MACROS = re.compile(r"\\(?:text|textrm|textbf|textit|mathrm|operatorname\*?|mbox|label|tag|emph"
                          r"|begin|end|mathbb)\s*\{[^{}]*\}")
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[A-Za-z]")


# ------------------------------------------------------------------------- parsing

def glossary_entries(text: str) -> list[dict]:
    """Parse the ```{glossary} block: a list of {"names": [...], "definition": str, "chapters": [int]}.

    An entry is one or more unindented term lines followed by indented definition lines.
    """
    block = re.search(r"^```\{glossary\}\s*\n(.*?)^```\s*$", text, re.S | re.M)
    if block is None:
        raise ValueError("no ```{glossary} block found")
    entries, names, definition = [], [], []
    for line in block.group(1).splitlines():
        if line.startswith(":") and not entries and not names:
            continue                                                      # directive options
        if not line.strip():
            continue
        if line[0].isspace():
            if not names:
                raise ValueError(f"definition line with no term before it: {line.strip()!r}")
            definition.append(line.strip())
        else:
            if definition:
                entries.append(_entry(names, definition))
                names, definition = [], []
            names.append(line.strip())
    if names:
        if not definition:
            raise ValueError(f"glossary term(s) {names} have no definition")
        entries.append(_entry(names, definition))
    return entries


def _entry(names: list[str], definition: list[str]) -> dict:
    text = " ".join(definition)
    chapters = sorted({int(n) for m in CHAPTER_REF.finditer(text) for n in re.findall(r"\d+", m.group(1))})
    sections = sorted({s for m in SECTION_REF.finditer(text) for s in re.findall(r"\d+\.\d+", m.group(1))})
    return {"names": list(names), "definition": text, "chapters": chapters, "sections": sections}


def chapter_markdown(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def term_links(markdown: str) -> set[str]:
    """Lower-cased targets of every {term} role: ``{term}`x``` and ``{term}`text <x>```."""
    targets = set()
    for m in TERM_ROLE.finditer(markdown):
        inner = m.group(1)
        target = re.search(r"<([^>]+)>\s*$", inner)
        targets.add((target.group(1) if target else inner).strip().lower())
    return targets


def math_spans(markdown: str) -> list[str]:
    """The TeX of every $...$ and $$...$$ in ``markdown``, code blocks and inline code removed.

    Fenced MyST directives (```{exercise} ...) are kept: their bodies are prose with math.
    """
    kept, closing = [], None
    for line in markdown.splitlines():
        fence = re.match(r"^\s*(`{3,}|~{3,})(.*)$", line)
        if closing is not None:                       # inside a code block: skip up to its fence
            if fence and fence.group(1).startswith(closing) and not fence.group(2).strip():
                closing = None
            continue
        if fence and not fence.group(2).strip().startswith("{") and fence.group(2).strip():
            closing = fence.group(1)                  # ```python and friends: a code block
            continue
        if not fence:
            kept.append(line)                         # directive fences themselves are dropped
    text = re.sub(r"`[^`\n]*`", "", "\n".join(kept))
    spans = re.findall(r"\$\$(.+?)\$\$", text, flags=re.S)
    text = re.sub(r"\$\$(.+?)\$\$", "", text, flags=re.S)
    spans += re.findall(r"(?<![\\$])\$(?!\s)([^$\n]+?)(?<![\s\\])\$", text)
    return spans


def symbols(tex: str) -> set[str]:
    """Symbols in a TeX string: single letters and macros, sub/superscripts reduced to their parts.

    ``h_{t-1}`` gives {"h", "t"}; ``\\mathrm{softmax}(s)`` gives {"s"}; ``\\rho_i`` gives {"\\rho", "i"}.
    """
    previous = None
    while previous != tex:
        previous, tex = tex, _WORD_MACROS.sub(" ", tex)
    return set(_TOKEN.findall(tex))


def notation_symbols() -> set[str]:
    text = NOTATION.read_text(encoding="utf-8")
    found = set()
    for span in math_spans(text):
        found |= symbols(span)
    return found


def missing_symbols(path: Path, allowed: set[str] | None = None) -> dict[str, str]:
    """Symbols a chapter uses that neither the notation page nor the common-notation lists cover,
    each with the first span it appears in."""
    allowed = (notation_symbols() if allowed is None else allowed) | COMMON_MACROS | INDEX_LETTERS
    missing: dict[str, str] = {}
    for span in math_spans(chapter_markdown(path)):
        for sym in sorted(symbols(span) - allowed):
            missing.setdefault(sym, span.strip())
    return missing


def missing_terms(path: Path, entries: list[dict]) -> list[str]:
    """Glossary entries that name this chapter but that the chapter does not link with {term}."""
    number = int(path.name[:2])
    linked = term_links(chapter_markdown(path))
    return [e["names"][0] for e in entries
            if number in e["chapters"] and not linked & {n.lower() for n in e["names"]}]


def _chapter(stem: str) -> Path:
    path = ROOT / "chapters" / f"{stem}.ipynb"
    assert path.is_file(), f"{stem} is listed but {path} does not exist"
    return path


# ------------------------------------------------------------------------- tests

ENTRIES = glossary_entries(GLOSSARY.read_text(encoding="utf-8"))


def test_glossary_is_substantial_and_unique():
    assert len(ENTRIES) >= 40
    names = [n.lower() for e in ENTRIES for n in e["names"]]
    assert len(names) == len(set(names)), "a glossary name is used twice"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["names"][0])
def test_entry_has_english_korean_definition_and_chapter(entry):
    english, *korean = entry["names"]
    assert not HANGUL.search(english), f"the first name must be English, got {english!r}"
    assert any(HANGUL.search(k) for k in korean), f"{english}: no Korean name"      # English spellings may follow
    assert len(entry["definition"].split()) >= 10, f"{english}: definition too short"
    taught = entry["chapters"] + [int(s.split(".")[0]) for s in entry["sections"]]
    assert taught and all(c in LESSON_NUMBERS for c in taught), f"{english}: no chapter or section named"


def chapter_sections() -> set[str]:
    """The numbers ("6.3") of every numbered section heading of every chapter."""
    found = set()
    for path in CHAPTER_FILES:
        found |= set(re.findall(r"^##\s+(\d+\.\d+)\s", chapter_markdown(path), re.M))
    return found


def test_sections_named_by_the_glossary_exist():
    existing = chapter_sections()
    for entry in ENTRIES:
        missing = [s for s in entry["sections"] if s not in existing]
        assert not missing, f"{entry['names'][0]}: no chapter has a section {missing}"


def test_issue_terms_and_alternates_present():
    """The terms chapters 6-7 rely on, with the Korean names and the alternates in common use."""
    names = {n for e in ENTRIES for n in e["names"]}
    for name in ("similarity", "유사도", "Kendall's tau", "Jensen–Shannon divergence", "total variation distance",
                 "leave-one-out", "permutation invariance", "permutation equivariance", "inducing points",
                 "seasonal naive", "forecast horizon", "어텐션 스코어", "컨텍스트 벡터", "주각"):
        assert name in names, f"no glossary name {name!r}"
    angles = next(e for e in ENTRIES if "principal angles" in e["names"])
    assert "주각(principal angles)" in angles["definition"], "give the English beside 주각"


def test_seed_terms_present():
    """The Korean terms of the source posts (and the issue's list) all have an entry."""
    names = {n for e in ENTRIES for n in e["names"]}
    for korean in ("어텐션", "맥락 벡터", "은닉 상태", "정렬", "얼라인먼트", "쿼리", "키", "밸류", "멀티헤드 어텐션",
                   "인코더", "디코더", "기울기 소실", "기울기 폭발", "기울기 클리핑", "셀프 어텐션", "마스킹",
                   "소프트맥스", "정준상관분석", "양방향 인코더", "교사 강요", "위치 인코딩"):
        assert korean in names, f"no glossary entry for {korean}"


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_every_term_role_points_at_an_entry(path):
    known = {n.lower() for e in ENTRIES for n in e["names"]}
    unknown = term_links(chapter_markdown(path)) - known
    assert not unknown, f"{path.name} links terms missing from the glossary: {sorted(unknown)}"


@pytest.mark.parametrize("stem", CHAPTERS_WITH_TERMS)
def test_chapter_links_its_terms(stem):
    missing = missing_terms(_chapter(stem), ENTRIES)
    assert not missing, f"{stem} teaches but does not link with {{term}}: {missing}"


@pytest.mark.parametrize("stem", NOTATION_CHECKED_CHAPTERS)
def test_chapter_symbols_are_on_the_notation_page(stem):
    missing = missing_symbols(_chapter(stem))
    assert not missing, (f"{stem} uses symbols missing from book/notation.md: "
                         + "; ".join(f"{s} (in ${span}$)" for s, span in missing.items()))


@pytest.mark.parametrize("stem", NOTATION_CHECKED_CHAPTERS)
def test_chapter_uses_no_retired_notation(stem):
    spans = math_spans(chapter_markdown(_chapter(stem)))
    found = sorted({f"{old} -> {new}" for span in spans for old, new in RETIRED_NOTATION.items()
                    if old in span.replace(" ", "")})
    assert not found, f"{stem} writes a retired notation: {found}"


def test_when_every_chapter_is_listed_every_term_is_linked():
    """Every entry names a chapter, so once all chapters are in CHAPTERS_WITH_TERMS every term is
    linked at least once. Here: the entries' chapters are all lessons of the course."""
    assert {c for e in ENTRIES for c in e["chapters"]} <= LESSON_NUMBERS


# The machinery itself, on small inputs, so the checks are exercised before any chapter is listed.

def test_parser_on_a_small_glossary():
    text = ("```{glossary}\n:sorted:\n\nquery\n쿼리\n  Asks. *Chapter 3.*\n\n"
            "key\n키\n  Answers. *Chapters 2 and 3.*\n```\n")
    entries = glossary_entries(text)
    assert [e["names"] for e in entries] == [["query", "쿼리"], ["key", "키"]]
    assert [e["chapters"] for e in entries] == [[3], [2, 3]]
    with pytest.raises(ValueError, match="no definition"):
        glossary_entries("```{glossary}\nlonely\n```\n")


def test_term_links_and_missing_terms(tmp_path):
    md = "The {term}`Query` asks and the {term}`맥락 벡터` answers; {term}`keys <key>` too."
    assert term_links(md) == {"query", "맥락 벡터", "key"}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(md)])
    path = tmp_path / "03_demo.ipynb"
    nbformat.write(nb, path)
    entries = [{"names": ["query", "쿼리"], "chapters": [3]}, {"names": ["value", "밸류"], "chapters": [3]},
               {"names": ["context vector", "맥락 벡터"], "chapters": [1]}]
    assert missing_terms(path, entries) == ["value"]


def test_symbol_extraction():
    md = ("Let $h_{t-1}$ and $\\mathrm{softmax}(s_t)$; code `$x$` is skipped.\n\n"
          "$$\n\\frac{\\partial h_T}{\\partial x_1} = \\rho_i\n$$\n\n```python\ny = '$Z$'\n```\n"
          "```{exercise}\nUse $\\Lambda$.\n```")
    spans = math_spans(md)
    found = set().union(*(symbols(s) for s in spans))
    assert {"h", "t", "s", "T", "x", "\\rho", "i", "\\Lambda", "\\frac", "\\partial"} <= found
    assert "Z" not in found and "o" not in found        # code blocks and \mathrm words are skipped


def test_notation_page_defines_the_core_symbols():
    allowed = notation_symbols()
    for sym in ("h", "H", "q", "K", "V", "s", "w", "c", "W", "Q", "d", "T", "M", "X", "\\rho"):
        assert sym in allowed, f"{sym} not found in the math of book/notation.md"


def test_missing_symbols_flags_an_undefined_symbol(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Scores $s_t$ and $\\zeta$.")])
    path = tmp_path / "09_demo.ipynb"
    nbformat.write(nb, path)
    assert list(missing_symbols(path)) == ["\\zeta"]


def report() -> None:
    """Print, for every chapter, the terms it should link and the symbols the notation page lacks."""
    for path in CHAPTER_FILES:
        print(f"{path.stem}:")
        print(f"  terms to link ({len(missing_terms(path, ENTRIES))}): {', '.join(missing_terms(path, ENTRIES))}")
        for sym, span in missing_symbols(path).items():
            print(f"  symbol {sym:10s} first in ${span[:70]}$")


if __name__ == "__main__":
    sys.exit(report())


def test_no_authoring_markup_is_shown_to_readers():
    """The page is for readers: markup like ``{term}`` belongs on the authoring page."""
    intro = GLOSSARY.read_text(encoding="utf-8").split("```{glossary}", 1)[0]
    assert "{term}" not in intro and "``" not in intro


def test_forecast_horizon_is_not_called_a_prediction_interval():
    horizon = next(e for e in ENTRIES if e["names"][0] == "forecast horizon")
    assert "예측 구간" not in horizon["names"]


def test_the_later_chapters_and_the_transformer_have_their_terms():
    names = {n for e in ENTRIES for n in e["names"]}
    for name in ("plausibility", "faithfulness", "InfoNCE", "precision at k", "ablation", "multihead attention block",
                 "pooling by multihead attention", "mean absolute error", "diagnostic model", "kernel CCA", "deep CCA",
                 "residual connection", "layer normalization", "feed-forward layer", "positional encoding",
                 "KV cache", "beam search", "learning-rate warm-up", "계층 정규화", "순전파 계층"):
        assert name in names, f"no glossary name {name!r}"
