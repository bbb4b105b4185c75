"""The Korean edition (coursekit.i18n): catalogs complete and faithful, terms as the glossary has them, the
Korean notebooks the English ones with translated prose, and an English edit that fails the checks until
its Korean follows.

The site itself (Hangul shown with the shipped font, at least 70% Hangul, links between the twins) is
checked in a browser by tests/test_browser_korean.py.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import polib
import pytest
from coursekit import i18n
from coursekit.diagrams import HANGUL, MODULE, render

ROOT = Path(__file__).resolve().parents[1]
ENTRY = i18n.translations(ROOT)
MARKED = [*ENTRY["translated"], *[f"diagrams/{d}" for d in ENTRY["diagrams"]], i18n.SITE]
KOREAN = i18n.glossary_korean(ROOT)


def _entries(name: str) -> list[polib.POEntry]:
    return [e for e in polib.pofile(str(i18n.catalog_path(name, ROOT))) if not e.obsolete]


# --------------------------------------------------------------------------- placing a translation

def test_a_message_replaces_its_whole_block_wherever_its_lines_break():
    text = "# Title\n\nA paragraph that\n  spans lines.\n\n- an item\n\n| a | cell |\n"
    out, used = i18n.translate_text(text, {"A paragraph that spans lines.": "여러 줄 문단.",
                                           "an item": "항목", "cell": "칸", "Title": "제목"})
    assert out == "# 제목\n\n여러 줄 문단.\n\n- 항목\n\n| a | 칸 |\n"
    assert used == {"A paragraph that spans lines.", "an item", "cell", "Title"}


def test_a_message_is_not_placed_inside_a_longer_block_nor_translated_twice():
    text = "The encoder reads.\n\nencoder\n"
    out, used = i18n.translate_text(text, {"encoder": "인코더 encoder", "The encoder reads.": "encoder가 읽습니다."})
    assert out == "encoder가 읽습니다.\n\n인코더 encoder\n"   # the translation's "encoder" stays as written


def test_a_message_with_nothing_to_translate_is_not_one():
    terms = {"encoder", "인코더"}
    assert not i18n.translatable("{glue:text}`long_d16`", terms)
    assert not i18n.translatable("$h_t = f(h_{t-1}, x_t)$", terms)
    assert not i18n.translatable("0.92<br><small>0.90–0.95</small>", terms)
    assert not i18n.translatable("encoder", terms)            # a glossary term line: a label
    assert i18n.translatable("The {term}`encoder` reads $x$.", terms)


def test_markup_and_terms_are_checked():
    english = "The {term}`encoder` reads {glue:}`n` digits ($x_t$, `encode`, [page](a.ipynb))."
    good = "{term}`인코더 <encoder>`(encoder)는 숫자 {glue:}`n`개를 읽습니다($x_t$, `encode`, [페이지](a.ipynb))."
    assert i18n.markup_problems(english, good) == []
    assert i18n.term_problems(english, good, {"encoder": "인코더"}) == []
    bad = "{term}`부호기`는 숫자를 읽습니다($x_t$, `encode`, [페이지](b.ipynb))."
    problems = i18n.markup_problems(english, bad)
    assert any("{glue:}`n`" in p for p in problems) and any("](a.ipynb)" in p for p in problems)
    assert any("{term}" in p for p in problems)
    assert i18n.term_problems("the attention weights sum to 1", "가중치의 합은 1입니다",
                              {"attention weights": "어텐션 가중치"})


# --------------------------------------------------------------------------- the catalogs

@pytest.mark.parametrize("name", MARKED)
def test_marked_catalog_is_complete_and_valid(name):
    """0 untranslated and 0 fuzzy entries (msgfmt --statistics), and msgfmt -c accepts it."""
    entries = _entries(name)
    assert entries, f"{name}: empty catalog"
    assert not [e.msgid[:60] for e in entries if not e.msgstr], f"{name}: untranslated entries"
    assert not [e.msgid[:60] for e in entries if "fuzzy" in e.flags], f"{name}: fuzzy entries"
    if shutil.which("msgfmt"):
        run = subprocess.run(["msgfmt", "-c", "--statistics", "-o", os.devnull, str(i18n.catalog_path(name, ROOT))],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert "untranslated" not in run.stderr and "fuzzy" not in run.stderr, run.stderr


@pytest.mark.parametrize("name", MARKED)
def test_translation_keeps_markup_and_uses_the_glossary_terms(name):
    """Every role, formula, code span and link target kept; every glossary term the English links or names
    in full given as the glossary's Korean term (one Korean term per English term, course-wide)."""
    problems = [f"{e.msgid[:50]!r}: {p}" for e in _entries(name) if e.msgstr
                for p in i18n.markup_problems(e.msgid, e.msgstr) + i18n.term_problems(e.msgid, e.msgstr, KOREAN)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", [n for n in MARKED if not n.startswith("diagrams/")])
def test_translated_prose_is_korean(name):
    """Translated prose is Hangul, not English left in place: at least 70% of the letters of the page's
    translations outside markup (code, formulas, roles' targets) are Hangul."""
    hangul = latin = 0
    for e in _entries(name):
        bare = re.sub(r"\{[a-z:]+\}`[^`]*`|`[^`]*`|\$[^$]*\$|\]\([^)]*\)|<[^>]+>", " ", e.msgstr)
        hangul += len(re.findall(r"[\uac00-\ud7a3]", bare))
        latin += len(re.findall(r"[A-Za-z]", bare))
    assert hangul / max(hangul + latin, 1) >= 0.7, f"{name}: {hangul} Hangul, {latin} Latin letters"


def _gives_english(text: str, korean: str, target: str) -> bool:
    """Whether ``text`` gives the English beside the Korean term: 인코더(encoder), a role's
    ``{term}`인코더 <encoder>`(encoder)``, or a role shown in English with the Korean after it,
    ``{term}`LSTM <long short-term memory>`(장단기 메모리)``."""
    k = re.escape(korean)
    return bool(re.search(rf"{k}(?:\s*<[^>]*>`)?\**\s*\(\s*[A-Za-z]", text)
                or re.search(rf"\{{term\}}`[A-Za-z][^`<]*<{re.escape(target)}>`", text, re.I))


def test_first_use_gives_the_english():
    """On each translated page, where a glossary term the page links first appears in Korean, the English
    is given beside it (한국어(English)), as the glossary's convention says."""
    missing = []
    for name in ENTRY["translated"]:
        if name == "book/glossary":
            continue   # the glossary shows every term with its English already
        # running text only: a heading, a table cell or an image's alt text names a term without its English
        entries = [e for e in _entries(name) if e.msgstr and len(e.msgid) >= 50]
        alts = {a for e in entries for a in re.findall(r"^!\[(.*)\]\(", e.msgid, re.S)}
        entries = [e for e in entries if not e.msgid.startswith("![") and e.msgid not in alts]
        targets = {t for e in entries for t in i18n.term_targets(e.msgid) if t in KOREAN}
        for target in sorted(targets):
            first = next((e.msgstr for e in entries if KOREAN[target] in e.msgstr
                          or re.search(rf"<{re.escape(target)}>`", e.msgstr, re.I)), None)
            if first is not None and not _gives_english(first, KOREAN[target], target):
                missing.append(f"{name}: {KOREAN[target]} ({target}) first used without its English: {first[:70]!r}")
    assert not missing, "\n".join(missing)


# --------------------------------------------------------------------------- the Korean tree and notebooks

@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("ko")
    problems = i18n.build_tree(ROOT, out)
    assert not problems, "\n".join(problems)
    return out


def _settings(cell) -> dict:
    """A cell's metadata without the words it shows a reader (a figure's caption and alt text, a slide's
    text), which the Korean notebook translates."""
    meta = copy.deepcopy(dict(cell.metadata))
    meta.pop("slide", None)
    for group, field in i18n.FIGURE_FIELDS:
        meta.get("mystnb", {}).get(group, {}).pop(field, None)
    return meta


def test_korean_notebooks_keep_the_english_code_byte_for_byte(tree):
    for english in sorted((ROOT / "chapters").glob("*.ipynb")):
        en = nbformat.read(english, as_version=4)
        ko = nbformat.read(tree / "chapters" / english.name, as_version=4)
        assert [c.cell_type for c in ko.cells] == [c.cell_type for c in en.cells], english.name
        for a, b in zip(en.cells, ko.cells):
            if a.cell_type == "code":
                assert a.source == b.source, f"{english.name}: a code cell changed"
                assert _settings(a) == _settings(b), f"{english.name}: a code cell's settings changed"


@pytest.mark.parametrize("docname", ENTRY["translated"])
def test_translated_pages_read_in_korean_with_korean_diagrams(tree, docname):
    source = next(p for p in (tree / f"{docname}.ipynb", tree / f"{docname}.md") if p.is_file())
    if source.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(source, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = source.read_text(encoding="utf-8")
    assert len(re.findall(r"[\uac00-\ud7a3]", text)) > 200, docname
    for name in re.findall(r"diagrams/(?:ko/)?([a-z0-9_]+)\.svg", text):
        if MODULE.get(name) in ENTRY["diagrams"]:
            assert f"diagrams/ko/{name}.svg" in text, f"{docname}: {name} not shown in its Korean twin"


def test_pages_not_fully_translated_say_so(tree):
    """A page not yet in Korean says so at its top; a partly translated one says its method prose is
    still English."""
    for docname in i18n.toc_pages(ROOT):
        if docname in ENTRY["translated"]:
            continue
        source = next(p for p in (tree / f"{docname}.ipynb", tree / f"{docname}.md") if p.is_file())
        text = source.read_text(encoding="utf-8")
        said = "영어 원문 그대로" if docname in ENTRY["partial"] else "아직 한국어로 옮기지 않아"
        assert said in text, docname


def test_korean_twin_diagrams_carry_the_glyphs_they_show():
    """A twin shows Hangul through an <img>, where no page font reaches: it embeds a font with every
    Hangul character its text uses."""
    import base64
    import io

    from fontTools.ttLib import TTFont
    names = [n for n, m in MODULE.items() if m in ENTRY["diagrams"]]
    assert names
    for name in names:
        svg = (ROOT / "book" / "diagrams" / "ko" / f"{name}.svg").read_text(encoding="utf-8")
        chars = set(re.findall(HANGUL, "".join(re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S))))
        assert chars, f"{name}: no Hangul in its Korean twin"
        data = re.search(r"base64,([A-Za-z0-9+/=]+)", svg)
        assert data, f"{name}: no embedded font"
        cmap = TTFont(io.BytesIO(base64.b64decode(data.group(1)))).getBestCmap()
        assert not [c for c in chars if ord(c) not in cmap], name
        assert svg != render(name), name


@pytest.mark.parametrize("lesson", [p for p in ("01_seq2seq_bottleneck", "04_multihead_attention")
                                    if f"chapters/{p}" in ENTRY["translated"]])
def test_the_korean_lesson_runs_and_checks_its_claims_in_korean(tree, lesson):
    """Two Korean lessons (chapter 1, and chapter 4, the quickest), run as make lab-ko runs them (claims
    looked up in the Korean catalog), execute without an error, every claim holding and shown in Korean;
    every other Korean lesson's code is the English one's, byte for byte (above), which nbval runs."""
    from nbclient import NotebookClient
    path = tree / "chapters" / f"{lesson}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    env = {"COURSE_STRICT_CLAIMS": "1", "COURSE_CLAIMS_CATALOG": str(tree / "claims.mo")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(notebook, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    shown = [html for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
             if 'class="claim"' in (html := o.get("data", {}).get("text/html", ""))]
    assert shown, "the lesson showed no claim"
    assert all(re.search(r"✓ [^<]*[\uac00-\ud7a3]", h) for h in shown), shown[:3]


# --------------------------------------------------------------------------- in step with the English

def test_an_english_edit_fails_the_check_until_its_korean_follows(tmp_path):
    """Change one English sentence of chapter 1 (in a copy of the book): the check make test runs names the
    page and the sentence; with the Korean for the new sentence added it passes again."""
    for name in ("_config.yml", "_toc.yml", "Makefile"):
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "book", tmp_path / "book")
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters")
    path = tmp_path / "chapters" / "01_seq2seq_bottleneck.ipynb"
    notebook = nbformat.read(path, as_version=4)
    old = "The task is deliberately easy: read a string of random digits and write it back."
    new = "The task is easy on purpose: read a string of random digits and write it back."
    cell = next(c for c in notebook.cells if c.cell_type == "markdown" and old in c.source)
    cell.source = cell.source.replace(old, new)
    nbformat.write(notebook, path)

    pot_dir = tmp_path / "_build" / "gettext"
    i18n.extract(tmp_path, pot_dir)
    problems = i18n.problems(tmp_path, pot_dir)
    assert len(problems) == 1 and "01_seq2seq_bottleneck.po" in problems[0] and "untranslated" in problems[0], problems

    catalog = polib.pofile(str(i18n.catalog_path("chapters/01_seq2seq_bottleneck", tmp_path)), wrapwidth=0)
    stale = next(e for e in catalog if e.msgid.startswith(old))
    catalog.append(polib.POEntry(msgid=stale.msgid.replace(old, new), msgstr=stale.msgstr))
    catalog.save()
    assert i18n.problems(tmp_path, pot_dir) == []


def test_the_claims_catalog_translates_a_run(tmp_path, monkeypatch):
    from attention_course import claims
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    po.append(polib.POEntry(msgid="the sky is blue", msgstr="하늘은 파랗습니다"))
    po.save_as_mofile(str(tmp_path / "c.mo"))
    monkeypatch.setenv("COURSE_CLAIMS_CATALOG", str(tmp_path / "c.mo"))
    assert claims._in_language("the sky is blue") == "하늘은 파랗습니다"
    assert claims._in_language("another sentence") == "another sentence"
    monkeypatch.setenv("COURSE_CLAIMS_CATALOG", str(tmp_path / "missing.mo"))
    with pytest.raises(ValueError, match="COURSE_CLAIMS_CATALOG"):
        claims._in_language("the sky is blue")
