"""The Korean font the course ships, NanumGothic, as the site, the slides, JupyterLab and the diagrams use it.

NanumGothic (copyright NAVER Corporation, SIL Open Font License 1.1) comes inside the pinned
``koreanize-matplotlib`` wheel, so nothing is downloaded. A browser gets it as WOFF and uses it for
Hangul only (``unicode-range``): every other letter keeps the page's own font, and a reader without a
Korean font sees Hangul, not boxes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["FAMILY", "HANGUL_RANGE", "NOTICE", "font_face", "korean_font", "write_web_font"]

FAMILY = "Course Hangul"     # the name the course's stylesheets give it
HANGUL_RANGE = "U+1100-11FF, U+3130-318F, U+A960-A97F, U+AC00-D7A3, U+D7B0-D7FF"
NOTICE = ("NanumGothic, copyright (c) NAVER Corporation, licensed under the SIL Open Font License 1.1\n"
          "(https://openfontlicense.org). Copied from the koreanize-matplotlib wheel by the course's build.\n")


def korean_font(bold: bool = False) -> Path:
    """The NanumGothic file (regular or bold) of the installed ``koreanize-matplotlib``."""
    spec = importlib.util.find_spec("koreanize_matplotlib")
    if spec is None or spec.origin is None:
        raise ValueError("the Korean edition needs NanumGothic from the koreanize-matplotlib package; install "
                         "the course's requirements (make .venv/.installed)")
    return Path(spec.origin).parent / "fonts" / ("NanumGothicBold.ttf" if bold else "NanumGothic.ttf")


def write_web_font(target: Path, bold: bool = False) -> Path:
    """Write NanumGothic to ``target`` as WOFF, with a licence notice beside it; return ``target``. Its empty
    VTT hinting-source tables (``TSI*``) are dropped: Chromium's font sanitizer rejects the font for them."""
    from fontTools.ttLib import TTFont
    font = TTFont(str(korean_font(bold)), recalcTimestamp=False)
    for tag in [tag for tag in font.keys() if tag.startswith("TSI")]:
        del font[tag]
    font.flavor = "woff"
    target.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(target))
    (target.parent / "NOTICE.txt").write_text(NOTICE, encoding="utf-8")
    return target


def font_face(url: str, weight: int = 400) -> str:
    """The CSS ``@font-face`` rule that gives the font at ``url`` (WOFF) to Hangul only."""
    return (f'@font-face {{ font-family: "{FAMILY}"; src: url("{url}") format("woff"); font-weight: {weight}; '
            f"font-display: swap; unicode-range: {HANGUL_RANGE}; }}")
