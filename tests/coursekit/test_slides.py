"""Slides (``make slides``): short slides from the cells a chapter marks, notes, embedded figures,
offline decks. The browser half (every slide of every deck opened and measured in Chromium) is
tests/test_browser_slides.py."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import nbformat
import pytest
from coursekit.lessons import lesson_notebooks
from coursekit.slides import (
    WORD_LIMIT,
    SlideError,
    build_slides,
    checked_claims,
    copy_slide_metadata,
    count_words,
    export_deck,
    glue_values,
    main,
    markdown_images,
    myst_to_markdown,
    svg_size,
    write_slides,
)

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_FILES = lesson_notebooks(ROOT / "chapters")          # decks come from lessons, never from evidence
# A 1 x 1 PNG.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d49444154789c6360000002000100"
    "05fe02fea35b7a0000000049454e44ae426082")).decode()


def _md(src, kind=None, **meta):
    cell = nbformat.v4.new_markdown_cell(src)
    if kind:
        cell.metadata["slideshow"] = {"slide_type": kind}
    if meta:
        cell.metadata["slide"] = meta
    return cell


def _code(kind=None, outputs=(), caption=None, **meta):
    cell = nbformat.v4.new_code_cell("plot()")
    cell.outputs = list(outputs)
    if kind:
        cell.metadata["slideshow"] = {"slide_type": kind}
    if meta:
        cell.metadata["slide"] = meta
    if caption:
        cell.metadata["mystnb"] = {"figure": {"name": "fig-x", "caption": caption}, "image": {"alt": "the alt"}}
    return cell


def _figure():
    return nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})


def _stdout(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _claim(text):
    """The rich output of attention_course.claims.expect: text/plain and the HTML details."""
    return nbformat.v4.new_output("display_data", data={
        "text/plain": text, "text/html": f'<details class="claim"><summary>&#10003; {text}</summary></details>'})


def _nb(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="640px" height="240px" viewBox="0 0 640 240">'
       '<rect width="640" height="240" fill="#fafafa"/><text x="20" y="40" style="font: 14px sans-serif">'
       'encoder</text></svg>')


LONG = " ".join(f"word{i}" for i in range(60))


# ------------------------------------------------------------------ choosing cells, text and notes

def test_marked_cells_only_with_a_title_slide():
    nb = _nb(_md("# 9. Demo\n\nIntro prose."), _md("## 9.1 Part\n\nShort claim.", "slide"), _md("UNMARKED"),
             _md("A fragment.", "fragment"), _md("Teacher only.", "notes"), _md("Hidden.", "skip"))
    slides = build_slides(nb, "demo")
    assert [s.title for s in slides] == ["9. Demo", "9.1 Part"]
    assert slides[0].notes == ["Intro prose."] and not slides[0].blocks     # title slide: heading only
    html = "".join(b for b, _ in slides[1].blocks)
    assert "Short claim." in html and "A fragment." in html and "UNMARKED" not in html
    assert [frag for _, frag in slides[1].blocks] == [False, True]
    assert slides[1].notes == ["Teacher only."]


def test_metadata_text_shows_and_the_prose_becomes_notes():
    nb = _nb(_md("# 9. Demo"), _md(f"## 9.1 Long section\n\n{LONG}", "slide", text="One short claim, $x^2$."))
    slide = build_slides(nb, "demo")[1]
    assert "One short claim" in slide.blocks[0][0] and "word59" not in slide.blocks[0][0]
    assert slide.notes == [LONG]
    assert slide.words == count_words("9.1 Long section") + count_words("One short claim, $x^2$.")


def test_title_and_notes_metadata_and_section_headings():
    nb = _nb(_md("# 9. Demo"), _md("Before.\n\n## 9.2 Section\n\nIts prose.\n\n## 9.3 Next\n\nLater."),
             _code("slide", [_figure()], caption="A caption."),
             _md("Plain.", "slide", title="Own title", notes="Extra notes."))
    slides = build_slides(nb, "demo")
    assert slides[1].title == "9.3 Next"                              # the section the figure is in
    assert slides[1].notes == ["A caption.", "Later."]                 # caption, then the prose before it
    assert slides[2].title == "Own title" and slides[2].notes == ["Extra notes."]


def test_word_limit_names_chapter_and_cell():
    nb = _nb(_md("# 9. Demo"), _md(f"## 9.1 Part\n\n{LONG}", "slide"))
    cell_id = nb.cells[1].id
    with pytest.raises(SlideError, match=rf"05_demo: cell {cell_id} \(index 1\): the slide '9.1 Part' has 62 words, "
                                         rf"more than the {WORD_LIMIT}"):
        build_slides(nb, "05_demo")
    build_slides(nb, "05_demo", limit=100)                              # the limit is the only obstacle


def test_fragments_and_continuations_count_towards_the_limit():
    half = " ".join(["word"] * 25)
    nb = _nb(_md("# 9. Demo"), _md(half, "slide"), _md(half, "fragment"))
    with pytest.raises(SlideError, match="has 52 words"):
        build_slides(nb, "demo")


def test_word_count_ignores_formulas_and_markup():
    assert count_words("The **query** $q_t$ meets $$\\sum_i w_i v_i$$ every `key`, 0.95 of them.") == 8
    assert count_words("") == 0


# ------------------------------------------------------------------ code cells: figures and checked claims

def test_checked_claims_parsed_with_measured_values():
    cell = _code(outputs=[_stdout("table\nchecked: long strings fail (accuracy < 0.35) (acc = 0.18)\n"
                                  "checked: gradient search never beats the exact search\n")])
    assert checked_claims(cell) == [("long strings fail (accuracy < 0.35)", "acc = 0.18"),
                                    ("gradient search never beats the exact search", "")]


def test_checked_claims_read_from_the_rich_output_of_expect():
    cell = _code(outputs=[_claim("checked: long strings fail (accuracy < 0.35) (acc = 0.18)"),
                          _claim("checked: a claim without values"),
                          nbformat.v4.new_output("display_data", data={"text/plain": "not a claim checked: x"}),
                          _stdout("checked: the old form still counts (b = 2)\n")])
    assert checked_claims(cell) == [("long strings fail (accuracy < 0.35)", "acc = 0.18"),
                                    ("a claim without values", ""), ("the old form still counts", "b = 2")]
    nb = _nb(_md("# 9. Demo"), _code("slide", [_claim("checked: rich claims reach the slide (x = 1)")]))
    html = "".join(b for b, _ in build_slides(nb, "demo")[1].blocks)
    assert '<ul class="checks">' in html and "rich claims reach the slide" in html and "x = 1" in html
    assert "<details" not in html


def test_code_slide_embeds_images_and_shows_claims_not_code():
    out = _stdout("noise\nchecked: the claim holds (x > 1) (x = 2)\nchecked: another one (y = 3)\n")
    nb = _nb(_md("# 9. Demo"), _md("## 9.1 Part"), _code("slide", [_figure(), out], caption="Cap.", checks=[1]))
    slide = build_slides(nb, "demo")[1]
    html = "".join(b for b, _ in slide.blocks)
    assert f'src="data:image/png;base64,{PNG}"' in html and 'alt="the alt"' in html and slide.images == 1
    assert "another one" in html and "y = 3" in html and "the claim holds" not in html
    assert "plot()" not in html and "noise" not in html
    assert slide.words == count_words("9.1 Part another one")


def test_bad_checks_and_empty_code_cells_are_named():
    out = _stdout("checked: one (a = 1)\n")
    with pytest.raises(SlideError, match=r"demo: cell .* \(index 1\): metadata\['slide'\]\['checks'\] = \[3\]"):
        build_slides(_nb(_md("# 9. Demo"), _code("slide", [out], checks=[3])), "demo")
    with pytest.raises(SlideError, match="must show a figure, a checked claim"):
        build_slides(_nb(_md("# 9. Demo"), _code("slide", [_stdout("just text")])), "demo")


def test_unknown_slide_type_and_metadata_field_are_named():
    with pytest.raises(SlideError, match=r"cell .* \(index 0\) has slide_type 'slides'"):
        build_slides(_nb(_md("# 9. T", "slides")), "demo")
    with pytest.raises(SlideError, match=r"unknown field\(s\) \['txt'\]"):
        build_slides(_nb(_md("# 9. T", "slide", txt="typo")), "demo")


def test_unmarked_chapter_gets_title_and_figures():
    nb = _nb(_md("# 9. Demo\n\nIntro."), _md("## 9.1 Part\n\nProse."), _code(outputs=[_figure()], caption="Cap."),
             _code(outputs=[_stdout("checked: x (a = 1)\n")]))
    slides = build_slides(nb, "demo")
    assert [s.title for s in slides] == ["9. Demo", "9.1 Part"] and slides[1].images == 1


# ------------------------------------------------------------------ diagrams in Markdown cells

def _diagram_dir(tmp_path):
    chapters, diagrams = tmp_path / "chapters", tmp_path / "book" / "diagrams"
    chapters.mkdir()
    diagrams.mkdir(parents=True)
    (diagrams / "ch09_demo.svg").write_text(SVG, encoding="utf-8")
    return chapters


def test_svg_size_and_markdown_images():
    assert svg_size(SVG) == (640, 240)
    assert svg_size('<svg width="480pt" height="360pt">') == (640, 480)
    assert svg_size('<svg viewBox="0 0 300 100">') == (300, 100)
    assert svg_size("<p>no svg</p>") is None
    assert markdown_images('Text ![An encoder, a vector.](../book/diagrams/a.svg) and ![b](b.svg "title")') == \
        [("An encoder, a vector.", "../book/diagrams/a.svg"), ("b", "b.svg")]


def test_a_diagram_cell_is_a_slide_with_the_svg_embedded_and_the_caption_as_notes(tmp_path):
    chapters = _diagram_dir(tmp_path)
    cell = _md("![The encoder reads the digits; one vector goes to the decoder.](../book/diagrams/ch09_demo.svg)\n\n"
               "*Diagram.* The plain encoder-decoder: every digit passes through one vector of "
               + " ".join(["many"] * 40) + " words.", "slide")
    nb = _nb(_md("# 9. Demo"), _md("## 9.1 The bottleneck"), cell)
    slide = build_slides(nb, "demo", base=chapters)[1]
    html = "".join(b for b, _ in slide.blocks)
    data = base64.b64encode(SVG.encode()).decode()
    assert f'src="data:image/svg+xml;base64,{data}"' in html
    assert 'alt="The encoder reads the digits; one vector goes to the decoder."' in html
    assert 'width="1180" height="442"' in html
    assert slide.title == "9.1 The bottleneck" and slide.images == 1
    assert slide.words == count_words("9.1 The bottleneck")           # the alt and caption do not count
    assert slide.notes and slide.notes[0].startswith("*Diagram.* The plain encoder-decoder")
    assert "Diagram." not in html


def test_a_diagram_beside_prose_shows_both(tmp_path):
    chapters = _diagram_dir(tmp_path)
    nb = _nb(_md("# 9. Demo"), _md("## 9.1 Part\n\nOne vector for all.\n\n![alt](../book/diagrams/ch09_demo.svg)\n\n"
                                   "*Diagram.* Caption.", "slide"))
    slide = build_slides(nb, "demo", base=chapters)[1]
    html = "".join(b for b, _ in slide.blocks)
    assert "One vector for all." in html and "data:image/svg+xml;base64," in html
    assert slide.notes == ["*Diagram.* Caption."]


def test_a_diagram_scales_up_as_a_vector_within_the_slide(tmp_path):
    chapters = _diagram_dir(tmp_path)
    nb = _nb(_md("# 9. Demo"), _md("![alt](../book/diagrams/ch09_demo.svg)", "slide"))
    html = "".join(b for b, _ in build_slides(nb, "demo", base=chapters)[1].blocks)
    # 640 x 240 fits 1180 x 540 at 1.84x (the width decides); never more than twice the natural size
    assert 'width="1180" height="442"' in html


def test_a_missing_or_remote_diagram_is_named(tmp_path):
    chapters = _diagram_dir(tmp_path)
    nb = _nb(_md("# 9. Demo"), _md("![alt](../book/diagrams/ch09_gone.svg)", "slide"))
    with pytest.raises(SlideError, match=r"demo: cell .* \(index 1\): the image '../book/diagrams/ch09_gone.svg'"):
        build_slides(nb, "demo", base=chapters)
    nb = _nb(_md("# 9. Demo"), _md("![alt](https://example.org/x.svg)", "slide"))
    with pytest.raises(SlideError, match="not a local file"):
        build_slides(nb, "demo", base=chapters)


def test_unmarked_chapter_gets_its_diagrams_too(tmp_path):
    chapters = _diagram_dir(tmp_path)
    nb = _nb(_md("# 9. Demo"), _md(f"## 9.1 Part\n\n{LONG}\n\n![alt](../book/diagrams/ch09_demo.svg)\n\n*Diagram.* C."))
    slides = build_slides(nb, "demo", base=chapters)
    assert [s.title for s in slides] == ["9. Demo", "9.1 Part"] and slides[1].images == 1
    assert slides[1].notes == ["*Diagram.* C.", LONG]                # the long prose went to the notes


# ------------------------------------------------------------------ MyST, glue, HTML

def test_myst_is_flattened():
    text = ("(sec-x)=\n## 1.1 Title\n\nAccuracy {glue:}`acc`%, ratio {glue:text}`ratio`, "
            "{cite}`vaswani2017attention,bahdanau2015neural`, a {term}`query`, {term}`keys <key>`, "
            "{doc}`the setup <../book/setup>`, {prf:ref}`thm-x`.\n\n"
            "```{admonition} Learning objectives\n:class: tip\nAfter this chapter\n```\n\n"
            "```{exercise}\n:label: ex-a\n\nDo $x^2$.\n```")
    out = myst_to_markdown(text, {"acc": "97.5", "ratio": "1.2e-05"},
                           {"vaswani2017attention": "Vaswani et al. 2017"})
    assert "(sec-x)=" not in out and "{" not in out.replace("$x^2$", "")
    for piece in ("Accuracy 97.5%", "ratio 1.2e-05", "(Vaswani et al. 2017; bahdanau2015neural)", "a query",
                  "keys,", "the setup,", "thm-x.", "**Learning objectives**\n\nAfter this chapter",
                  "**Exercise**\n\nDo $x^2$."):
        assert piece in out, piece


def test_glue_from_another_notebook_and_format_specs():
    glue = {"acc": "0.97531", "01_demo_evidence::gap": "12.5", "gap": "own"}
    out = myst_to_markdown("{glue:text}`acc:.1%`, {glue:}`01_demo_evidence::gap`, "
                           "{glue:}`../chapters/01_demo_evidence.ipynb::gap`, {glue:text}`01_demo_evidence::gap:.0f`, "
                           "{glue:}`gap`, {glue:}`missing`", glue)
    assert out == "97.5%, 12.5, 12.5, 12, own, missing"


def test_glue_values_read_from_outputs():
    out = nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": "'12.5%'"},
                                 metadata={"scrapbook": {"mime_prefix": "application/papermill.record/",
                                                         "name": "share"}})
    assert glue_values(_nb(_code(outputs=[out]))) == {"share": "12.5%"}


def test_deck_html_math_notes_and_local_assets_only():
    nb = _nb(_md("# 9. Demo"), _md(f"## 9.1 Part\n\n{LONG} {{glue:}}`g`", "slide", text="Weights $w_{t,i}$ sum to 1."),
             _code("slide", [_figure()]), _md("UNMARKED-PROSE"))
    nb.cells.append(_code(outputs=[nbformat.v4.new_output(
        "display_data", data={"application/papermill.record/text/plain": "'0.97'"},
        metadata={"scrapbook": {"mime_prefix": "application/papermill.record/", "name": "g"}})]))
    html = export_deck(nb, "demo")
    assert "UNMARKED-PROSE" not in html and "{glue" not in html
    assert html.count("<section") == 3
    assert "$w_{t,i}$" in html                                    # math left intact for MathJax
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', html, re.S)
    assert len(notes) == 2 and "word59 0.97" in notes[0]        # the bare title slide has none
    refs = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html)
    assert {"mathjax/tex-svg-full.js", "reveal.js/dist/reveal.js", "reveal.js/dist/reveal.css",
            "reveal.js/plugin/notes/notes.js"} <= set(refs)
    assert all(not re.match(r"[a-z]+://|//", r) for r in refs), refs
    imgs = re.findall(r'<img[^>]*src="([^"]+)"', html)
    assert imgs and all(src.startswith("data:image/png;base64,") for src in imgs)


# ------------------------------------------------------------------ the chapters

@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    write_slides(ROOT / "chapters", out, ROOT / "book" / "references.bib")
    return out


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_every_chapter_marks_its_slides(path):
    """A real deck, not the fallback: the chapter marks its slides, with figures and checked claims,
    every slide within the word limit (build_slides raises otherwise) and with notes."""
    nb = nbformat.read(path, as_version=4)
    marked = [c for c in nb.cells if c.metadata.get("slideshow", {}).get("slide_type", "skip") != "skip"]
    assert len(marked) >= 8, f"{path.stem}: only {len(marked)} cells marked for slides"
    slides = build_slides(nb, path.stem, base=path.parent)
    assert sum(s.images for s in slides) >= 2, f"{path.stem}: fewer than two figures on its slides"
    assert any("ul class=\"checks\"" in b for s in slides for b, _ in s.blocks), f"{path.stem}: no checked claim"
    assert all(s.notes for s in slides), [s.title for s in slides if not s.notes]


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_every_chapter_has_a_deck_whose_assets_exist(path, decks):
    html = (decks / f"{path.stem}.slides.html").read_text(encoding="utf-8")
    for ref in re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html):
        assert not re.match(r"[a-z]+://|//", ref), f"{path.stem}: {ref} is not local"
        assert (decks / ref).is_file(), f"{path.stem}: {ref} is missing from the slides folder"
    assert "{glue" not in html and "{cite}" not in html and "{term}" not in html


def test_decks_come_from_lessons_only_and_quote_the_evidence(tmp_path):
    chapters = _diagram_dir(tmp_path)
    lesson = _nb(_md("# 9. Demo"), _md("## 9.1 Part", "slide", text="Gap {glue:}`09_demo_evidence::gap` points."),
                 _md("![The drawing.](../book/diagrams/ch09_demo.svg)\n\n*Diagram.* Caption.", "slide"))
    glued = nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": "12.5"},
                                   metadata={"scrapbook": {"mime_prefix": "application/papermill.record/",
                                                           "name": "gap"}})
    evidence = _nb(_md("# 9. Demo: the evidence"), _code("slide", [_figure()]), _code(outputs=[glued]))
    evidence.metadata["course"] = {"evidence_for": "09_demo"}
    nbformat.write(lesson, chapters / "09_demo.ipynb")
    nbformat.write(evidence, chapters / "09_demo_evidence.ipynb")
    written = write_slides(chapters, tmp_path / "out")
    assert [p.name for p in written] == ["09_demo.slides.html"]
    html = written[0].read_text(encoding="utf-8")
    assert "Gap 12.5 points." in html and "data:image/svg+xml;base64," in html and 'alt="The drawing."' in html


def test_copy_slide_metadata_by_cell_id(tmp_path):
    src = _nb(_md("# 9. Demo"), _md("A", "slide", text="short"), _md("B", "-"))
    dst = _nb(_md("# 9. Demo"), _md("A, rewritten"), _md("New cell", "slide"))
    dst.cells[0].id, dst.cells[1].id = src.cells[0].id, src.cells[1].id     # same cells, a new one at the end
    copied, missing = copy_slide_metadata(src, dst)
    assert copied == 1 and missing == [src.cells[2].id]
    assert dst.cells[1].metadata["slide"] == {"text": "short"}
    assert "slideshow" not in dst.cells[2].metadata and dst.cells[1].source == "A, rewritten"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    nbformat.write(src, tmp_path / "a" / "09_demo.ipynb")
    nbformat.write(dst, tmp_path / "b" / "09_demo.ipynb")
    assert main(["--copy-from", str(tmp_path / "a"), "--chapters", str(tmp_path / "b")]) == 0
    copied_nb = json.loads((tmp_path / "b" / "09_demo.ipynb").read_text())
    assert copied_nb["cells"][1]["metadata"]["slideshow"] == {"slide_type": "slide"}


def test_main_reports_errors(tmp_path, capsys):
    assert main(["--chapters", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "no notebooks" in capsys.readouterr().err
    nbformat.write(_nb(_md("# 9. Demo"), _md(LONG, "slide")), tmp_path / "09_demo.ipynb")
    assert main(["--chapters", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "09_demo: cell" in capsys.readouterr().err
