"""Tidy the scripts every page loads, so pages run without console errors and offline.

Two upstream wrinkles of the Jupyter Book 1 stack (Sphinx 7.4) show up in a browser:

* Some extensions' inline scripts are added twice to every page. One of them, from
  sphinx-thebe, declares ``const THEBE_JS_URL``; the second declaration throws
  "Identifier 'THEBE_JS_URL' has already been declared" on every page. Identical scripts
  are dropped here, keeping the first.
* sphinx-thebe is always loaded by Jupyter Book and points at a CDN copy of thebe. This
  course runs without a network and has launch buttons (and so thebe) switched off, so its
  scripts are removed from the pages. (``tests/test_browser.py`` checks both.)
"""

from __future__ import annotations

from sphinx.application import Sphinx


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", None) or "", tuple(sorted(attributes.items())))


def _is_thebe(script) -> bool:
    filename = getattr(script, "filename", "") or ""
    body = (getattr(script, "attributes", {}) or {}).get("body", "") or ""
    return "sphinx-thebe" in filename or "THEBE_JS_URL" in body


def _thebe_enabled(app: Sphinx) -> bool:
    launch = (app.config.html_theme_options or {}).get("launch_buttons", {}) or {}
    return bool(launch.get("thebe")) or bool((getattr(app.config, "thebe_config", None) or {}).get("always_load"))


def _tidy(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    drop_thebe = not _thebe_enabled(app)
    seen: set[tuple] = set()
    kept = []
    for script in scripts:
        key = _key(script)
        if key in seen or (drop_thebe and _is_thebe(script)):
            continue
        seen.add(key)
        kept.append(script)
    scripts[:] = kept  # in place: Sphinx renders from this very list


def setup(app: Sphinx) -> dict:
    # Late priority: after every extension (MathJax, the theme) has added its page scripts.
    app.connect("html-page-context", _tidy, priority=999)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
