"""The course's diagrams (coursekit.diagrams): written, reproducible, up to date, legible, described.

Every check runs on every diagram the package knows, so a new chapter's diagrams are held to the same
rules as chapter 1's.
"""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from coursekit.diagrams import ALT, DIAGRAMS, render, stale, style, twins, write
from coursekit.diagrams.__main__ import main
from coursekit.diagrams.draw import normalise
from matplotlib.colors import to_rgb

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "book" / "diagrams"
SVG = "{http://www.w3.org/2000/svg}"
NAMES = sorted(DIAGRAMS)
TWINS = twins("ko")   # the Korean twins (book/translations.yml), each with its catalog
VARIANTS = NAMES + [f"ko/{name}" for name in sorted(TWINS)]   # every drawing a reader sees


def _render(variant: str) -> str:
    language, _, name = variant.rpartition("/")
    return render(name, TWINS[name] if language else None)


@pytest.fixture(scope="module")
def svgs() -> dict[str, str]:
    return {variant: _render(variant) for variant in VARIANTS}


def _root(svg: str) -> ET.Element:
    return ET.fromstring(svg.encode("utf-8"))


def _px(value: str) -> float:
    m = re.fullmatch(r"([\d.]+)px", value)
    assert m, f"expected a length in px, got {value!r}"
    return float(m.group(1))


# ------------------------------------------------------------------ the set of diagrams

def test_every_diagram_is_written(tmp_path):
    written = write(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == sorted(f"{v}.svg" for v in VARIANTS)
    assert all(p.stat().st_size > 0 for p in written)


@pytest.mark.parametrize("name", NAMES)
def test_names_carry_their_chapter_prefix(name):
    """``chNN_<name>`` from ``chNN.py``; the authoring page's legend from ``authoring.py``."""
    module = DIAGRAMS[name].__module__.rsplit(".", 1)[-1]
    assert re.fullmatch(r"ch\d\d|authoring", module) and name.startswith(module + "_"), name


@pytest.mark.parametrize("name", VARIANTS)
def test_drawing_is_deterministic(name, svgs):
    assert _render(name) == svgs[name]


def test_committed_svgs_are_up_to_date():
    assert stale(COMMITTED) == [], "run  make diagrams  (python -m coursekit.diagrams)"


def test_check_names_every_missing_changed_or_orphaned_svg(tmp_path, capsys):
    write(tmp_path)
    assert stale(tmp_path) == [] and main(["--check", "--out", str(tmp_path)]) == 0
    first, second = (tmp_path / f"{n}.svg" for n in NAMES[:2])
    # a last-bit difference in a coordinate is not a change ...
    text = first.read_text(encoding="utf-8")
    number = next(m.group(1) for m in re.finditer(r'd="M (\d+\.\d{3,})', text)
                  if abs(round(float(m.group(1)), 2) - float(m.group(1))) < 0.004)  # far from a rounding edge
    first.write_text(text.replace(number, f"{float(number) + 1e-4:.6f}", 1), encoding="utf-8")
    assert stale(tmp_path) == []
    # ... a moved shape, a missing file and a file without a source are
    first.write_text(text.replace('width="', 'width="1', 1), encoding="utf-8")
    second.unlink()
    orphan = tmp_path / "ch99_orphan.svg"
    orphan.write_text("<svg/>", encoding="utf-8")
    problems = stale(tmp_path)
    assert sorted(p.split(": ", 1)[0] for p in problems) == sorted(map(str, [first, second, orphan]))
    assert main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert all(str(p) in err for p in (first, second, orphan))


def test_normalise_rounds_to_two_decimals():
    assert normalise('d="M 1.23456 7.891"') == 'd="M 1.23 7.89"'


# ------------------------------------------------------------------ legible at the column width

@pytest.mark.parametrize("name", VARIANTS)
def test_natural_width_at_most_640px_and_unscaled(name, svgs):
    root = _root(svgs[name])
    width, height = _px(root.get("width")), _px(root.get("height"))
    assert 0 < width <= style.MAX_WIDTH
    assert [float(v) for v in root.get("viewBox").split()] == [0, 0, width, height], \
        "one SVG unit must be one pixel, so that font sizes are what a reader sees"


@pytest.mark.parametrize("name", VARIANTS)
def test_every_font_size_at_least_12px(name, svgs):
    sizes = [float(s) for s in re.findall(r"font-size:\s*([\d.]+)px", svgs[name])]
    sizes += [float(s) for s in re.findall(r"font:[^;\"]*?([\d.]+)px", svgs[name])]
    assert sizes, "no font sizes found"
    assert min(sizes) >= style.SMALL, f"text of {min(sizes)} px"
    assert not re.search(r"font-size:\s*[\d.]+(pt|em|%)", svgs[name])


@pytest.mark.parametrize("name", VARIANTS)
def test_text_is_text(name, svgs):
    root = _root(svgs[name])
    texts = list(root.iter(f"{SVG}text"))
    assert texts, "no <text> elements: was svg.fonttype left at 'path'?"
    for t in texts:
        assert "".join(t.itertext()).strip(), "an empty <text>"
    assert not re.search(r'id="DejaVu|<use xlink:href="#DejaVu', svgs[name]), "glyphs drawn as paths"


@pytest.mark.parametrize("name", VARIANTS)
def test_no_private_use_character(name, svgs):
    """A private-use code point (mathtext's glyph for a script letter, say) has no glyph in a reader's
    browser and shows as a box: every character of a diagram's text must be a real one."""
    text = "".join("".join(t.itertext()) for t in _root(svgs[name]).iter(f"{SVG}text"))
    private = sorted({f"U+{ord(c):04X}" for c in text
                      if 0xE000 <= ord(c) <= 0xF8FF or 0xF0000 <= ord(c) <= 0x10FFFF})
    assert not private, f"private-use characters in the text: {private}"


@pytest.mark.parametrize("name", VARIANTS)
def test_opaque_light_card_behind_everything(name, svgs):
    root = _root(svgs[name])
    width, height = _px(root.get("width")), _px(root.get("height"))
    card = root.find(f".//{SVG}g[@id='card']/{SVG}path")
    assert card is not None, "no card"
    style_ = card.get("style")
    fill = re.search(r"fill:\s*(#[0-9a-fA-F]{6})", style_)
    assert fill and "opacity" not in style_
    assert style.contrast(fill.group(1), style.INK) >= 12, "the card must be light"
    xs, ys = zip(*[(float(x), float(y)) for x, y in re.findall(r"([\d.]+) ([\d.]+)", card.get("d"))])
    assert min(xs) <= 2 and max(xs) >= width - 2 and min(ys) <= 2 and max(ys) >= height - 2
    # the card comes first: everything else is drawn on it (the figure's own background is invisible)
    figure_bg = root.find(f".//{SVG}g[@id='patch_1']/{SVG}path")
    assert figure_bg is None or "fill: none" in figure_bg.get("style", "")
    assert root.find(f".//{SVG}g[@id='axes_1']")[0].get("id") == "card"


@pytest.mark.parametrize("name", NAMES)
def test_every_diagram_has_an_alt_text(name):
    alt = ALT.get(name, "")
    sentences = re.findall(r"[.!?](?:\s|$)", alt)
    assert len(alt.split()) >= 12 and 1 <= len(sentences) <= 2, alt
    assert not re.search(r"[<>\[\]]", alt), "alt text goes inside Markdown ![...](...): no brackets or tags"


def test_no_alt_text_without_a_diagram():
    assert set(ALT) == set(DIAGRAMS)


def test_authoring_page_shows_its_diagrams_with_their_alt_texts():
    page = (ROOT / "book" / "authoring.md").read_text(encoding="utf-8")
    shown = dict((name, alt) for alt, name in re.findall(r"!\[([^\]]*)\]\(diagrams/(\w+)\.svg\)", page))
    assert set(shown) == {"authoring_visual_language", "ch01_encoder_decoder", "ch01_gradient_path"}
    assert all(alt == ALT[name] for name, alt in shown.items())


# ------------------------------------------------------------------ the palette

ROLE_NAMES = ["encoder", "decoder", "query", "key", "value", "weight", "gradient", "neutral"]


def test_one_colour_per_role():
    colours = [style.ROLES[r].lower() for r in ROLE_NAMES]
    assert len(set(colours)) == len(colours)


@pytest.mark.parametrize("role", ROLE_NAMES + ["ink"])
def test_text_in_a_role_colour_reads_on_the_card(role):
    assert style.contrast(style.dark(style.ROLES[role]), style.CARD) >= 4.5
    assert style.contrast(style.MUTED, style.CARD) >= 4.5


def test_authoring_page_states_the_palette_of_style():
    rows = re.findall(r"^\|[^|]*\| `([A-Z]+)` \| (?:`(#[0-9A-Fa-f]{6})`[^|]*)?\| `(#[0-9A-Fa-f]{6})` \|$",
                      (ROOT / "book" / "authoring.md").read_text(encoding="utf-8"), re.M)
    assert {r[0] for r in rows} == {r.upper() for r in ROLE_NAMES} | {"INK", "MUTED"}
    for constant, fill, text_colour in rows:
        colour = getattr(style, constant)
        if fill:
            assert fill.lower() == colour.lower(), constant
        expected = colour if constant == "MUTED" else style.dark(colour)
        assert text_colour.lower() == expected.lower(), constant


# Machado, Oliveira and Fernandes (2009), full severity, applied in linear RGB.
_CVD = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
}


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear_rgb
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("deficiency", sorted(_CVD))
def test_roles_stay_apart_for_colour_blind_readers(deficiency):
    def seen(colour):
        c = np.array(to_rgb(colour))
        linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return _lab(np.clip(np.array(_CVD[deficiency]) @ linear, 0, 1))
    lab = {r: seen(style.ROLES[r]) for r in ROLE_NAMES}
    distance, a, b = min((float(np.linalg.norm(lab[a] - lab[b])), a, b) for a, b in itertools.combinations(lab, 2))
    assert distance >= 12, f"{a} and {b} differ by only ΔE = {distance:.1f} under {deficiency}"
