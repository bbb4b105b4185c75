"""Serve MathJax 3 from the built site itself, so the math renders with no network.

Sphinx loads MathJax from a CDN by default; offline the formulas stay raw TeX. This extension
points ``mathjax_path`` at ``_static/mathjax/tex-svg-full.js`` and, when the HTML build
finishes, copies that file (plus MathJax's licence) from the installed PyPI package
``django-static-mathjax`` (importable as ``mathjax``) into the output. Nothing of MathJax is
kept in the repository.

``tex-svg-full.js`` is one self-contained file: every TeX extension is bundled and the SVG
output draws glyphs from path data inside the script, so no font files or lazy-loaded
components are requested.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.ext.mathjax import MATHJAX_URL
from sphinx.util import logging

logger = logging.getLogger(__name__)

BUNDLE = "tex-svg-full.js"
TARGET_DIR = "mathjax"  # inside <outdir>/_static


def _mathjax_source() -> tuple[Path, Path]:
    try:
        import mathjax  # the django-static-mathjax distribution
    except ImportError as err:
        raise ExtensionError("offline_mathjax: the 'django-static-mathjax' package is not installed "
                             "(pip install -r requirements.txt -c constraints.txt)") from err
    root = Path(mathjax.__file__).parent / "static" / "mathjax"
    bundle = root / "es5" / BUNDLE
    if not bundle.is_file():
        raise ExtensionError(f"offline_mathjax: {bundle} not found in the installed mathjax package")
    return bundle, root / "LICENSE"


def _configure(app: Sphinx, config) -> None:
    _mathjax_source()  # fail early, before reading any page, if MathJax is missing
    # A relative mathjax_path is resolved by Sphinx against the site's _static folder.
    wanted = f"{TARGET_DIR}/{BUNDLE}"
    if config.mathjax_path not in (wanted, MATHJAX_URL):
        raise ExtensionError(f"offline_mathjax: mathjax_path is {config.mathjax_path!r}; this extension "
                             f"serves MathJax at {wanted!r} (set that, or leave mathjax_path unset)")
    config.mathjax_path = wanted


def _copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    bundle, licence = _mathjax_source()
    target = Path(app.outdir) / "_static" / TARGET_DIR
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundle, target / BUNDLE)
    if licence.is_file():
        shutil.copyfile(licence, target / "LICENSE")
    logger.info("offline_mathjax: copied %s into %s", BUNDLE, target)


def setup(app: Sphinx) -> dict:
    # Priority > 500 so this runs after every config-inited handler that might set a CDN URL.
    app.connect("config-inited", _configure, priority=900)
    app.connect("build-finished", _copy)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
