"""The Korean edition, made from the English source and gettext catalogs.

One source: the English notebooks and pages. The translations live in gettext catalogs,
``book/locales/<language>/LC_MESSAGES/<page>.po``, one per page, and ``book/translations.yml`` says which
pages are translated (or partly: headings, tables and the summary at the top), which diagram modules have
Korean twins. From them this module makes

* the catalogs' templates (:func:`extract`): Sphinx's gettext builder reads every page (``gettext_compact``
  off: one ``.pot`` per page); the messages that hold nothing to translate (a lone glue role, a formula, a
  number, a glossary's term line) are dropped; and what a reader reads but Sphinx does not reach is added:
  the cells of a table inside a directive (the lessons' notation boxes), the checked-claim lines a notebook
  prints (its ``✓`` lines, stored in cell outputs), the words of its slides (cell metadata), the words
  drawn in the diagrams (``diagrams/<module>.pot``), the site's title and part captions (``site.pot``) and
  the Makefile's comments the setup page shows (``makefile.pot``). Each message says what kind of block
  it is, for a partly translated page. ``sphinx-intl update`` merges them into the catalogs
  (:func:`update`), marking a changed English sentence fuzzy;
* the Korean source tree (:func:`build_tree`, in ``_build/<language>/``): every page of the table of
  contents copied, each translated page with its markdown replaced block by block (:func:`translate_text`),
  code cells byte for byte the English ones, stored outputs copied (claim lines and displayed tables
  translated), diagrams pointing at their Korean twins, and a note at the top of a page not (fully)
  translated. The Korean site is built from that tree (``make book``), its notebooks are the ones
  ``make lab-ko`` opens, ``make slides`` and ``make student`` make the Korean decks and student edition
  from them. A glue role in a translated paragraph resolves as in the English page: the page's own
  outputs are there;
* the checks (:func:`problems`, :func:`markup_problems`, :func:`term_problems`): a page marked translated
  whose catalog misses, leaves empty or marks fuzzy a message of the current English fails ``make test``,
  and so does a translated page in which a message cannot be placed.

``python -m coursekit.i18n update`` (``make translations``) extracts, merges and lists what needs a
translator; ``check`` fails on any problem (``make lint``); ``build`` writes the tree.
"""

from __future__ import annotations

import argparse
import copy
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import polib
import yaml

from .fonts import FAMILY, font_face, write_web_font

__all__ = ["TRANSLATIONS", "LOCALES", "PARTIAL_KINDS", "catalog", "catalog_path", "extract", "translate_text",
           "translations", "problems", "build_tree", "update", "translatable", "claims_of", "slide_texts",
           "markup_problems", "term_problems", "term_targets", "glossary_korean", "toc_pages", "CLAIM"]

TRANSLATIONS = Path("book/translations.yml")
LOCALES = Path("book/locales")
POT_DIR = Path("_build/gettext")
GLOSSARY = Path("book/glossary.md")
SITE = "site"            # the catalog of the site's title and the table of contents' captions
MAKEFILE = "makefile"    # the comments of the Makefile the setup page shows (book/_ext/makefile_steps.py)
DIAGRAM_CATALOGS = "diagrams"

CLAIM = re.compile(r'(<details class="claim"><summary>✓ )(.*?)(</summary>)', re.S)
_ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)
_CODE = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_TAG = re.compile(r"</?[a-z]+[^>]*>")
_LINK_TEXT = re.compile(r"\{(?:doc|ref|numref|term)\}`([^`<]*)<[^`>]*>`")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


# --- which pages, and their catalogs ---------------------------------------------------------------------

def translations(root: Path = Path("."), language: str = "ko") -> dict:
    """``book/translations.yml``'s entry for ``language``: its ``name``, the ``translated`` and ``partial``
    pages (docnames such as ``chapters/01_seq2seq_bottleneck``) and the translated ``diagrams`` modules."""
    data = yaml.safe_load((root / TRANSLATIONS).read_text(encoding="utf-8")) or {}
    if language not in data:
        raise ValueError(f"{TRANSLATIONS} has no language {language!r}; it has {', '.join(data) or 'none'}")
    entry = {"name": language, "translated": [], "partial": [], "diagrams": [], **data[language]}
    for key in ("translated", "partial", "diagrams"):
        entry[key] = list(entry[key] or [])
    return entry


def catalog_path(name: str, root: Path = Path("."), language: str = "ko") -> Path:
    """The catalog of page or catalog ``name`` (``book/intro``, ``diagrams/ch01``, ``site``)."""
    return root / LOCALES / language / "LC_MESSAGES" / f"{name}.po"


def catalog(name: str, root: Path = Path("."), language: str = "ko") -> dict[str, str]:
    """The translated, non-fuzzy entries of catalog ``name`` as ``{English: translation}`` (empty if none)."""
    path = catalog_path(name, root, language)
    if not path.is_file():
        return {}
    return {e.msgid: e.msgstr for e in polib.pofile(str(path))
            if e.msgstr and not e.obsolete and "fuzzy" not in e.flags}


# --- what is a message ----------------------------------------------------------------------------------

def glossary_terms(root: Path = Path(".")) -> set[str]:
    """The term lines of the glossary (English and Korean names): labels, never translated."""
    return {line.strip() for line in _glossary_lines(root) if line.strip() and not line[0].isspace()}


def translatable(msgid: str, terms: set[str] = frozenset()) -> bool:
    """Whether a message holds words to translate: Latin words outside roles, formulas, code and link
    targets, and it is not one of the glossary's term lines."""
    if msgid in terms:
        return False
    msgid = _LINK_TEXT.sub(r"\1 ", msgid)   # a link's own text is words: {doc}`1. The bottleneck <ch01>`
    rest = _TAG.sub(" ", _LINK_TARGET.sub("]", _CODE.sub(" ", _MATH.sub(" ", _ROLE.sub(" ", msgid)))))
    rest = re.sub(r"\\[A-Za-z]+", " ", rest)   # a display formula's body comes without its $$
    return bool(_LATIN_WORD.search(rest))


_TERM = re.compile(r"\{term\}`([^`]*?)(?:\s*<([^`>]+)>)?`")


def term_targets(text: str) -> list[str]:
    """The glossary entries a text's ``{term}`` roles point to (lower case), in order."""
    return [(target or label).strip().lower() for label, target in _TERM.findall(_without_code_spans(text))]


_SPAN = re.compile(r"(\{[a-z:]+\}`[^`]*`)|(`+)")


def _without_code_spans(text: str) -> str:
    """``text`` with its code spans blanked (```{term}``` there shows a role, it is not one); roles kept."""
    out, i = [], 0
    while (m := _SPAN.search(text, i)) is not None:
        if m.group(1):                                   # a role, from its name to its closing backtick
            out.append(text[i:m.end()])
            i = m.end()
        else:                                            # a code span: skip to the same run of backticks
            close = text.find(m.group(2), m.end())
            out.append(text[i:m.start()] + " ")
            i = len(text) if close < 0 else close + len(m.group(2))
    return "".join(out) + text[i:]


def _spans(text: str) -> tuple[list[str], list[str], str]:
    """The roles and the code spans of a text, in order, and the text without either."""
    roles, code, rest, i = [], [], [], 0
    while (m := _SPAN.search(text, i)) is not None:
        rest.append(text[i:m.start()] + " ")
        if m.group(1):
            roles.append(m.group(1))
            i = m.end()
        else:
            close = text.find(m.group(2), m.end())
            end = len(text) if close < 0 else close + len(m.group(2))
            code.append(text[m.start():end])
            i = end
    rest.append(text[i:])
    return roles, code, "".join(rest)


_LINK_ROLE = re.compile(r"^(\{(?:doc|ref|numref)\})`[^`<]*<([^`>]+)>`$")


def markup_problems(msgid: str, msgstr: str) -> list[str]:
    """What a translation changed that it must keep: every role but ``{term}`` (glue, cite, doc, numref),
    every formula, code span and link target of the English, as many times (a ``{doc}``, ``{ref}`` or
    ``{numref}`` role with its own text may translate the text); and every ``{term}`` role's entry (its
    text is translated: ``{term}`인코더 <encoder>```)."""
    def pieces(text: str) -> list[str]:
        roles, code, rest = _spans(text)
        # a link's text is translated, its target kept: {doc}`1장 <../chapters/01_x>`
        roles = [_LINK_ROLE.sub(r"\1`<\2>`", r) for r in roles if not r.startswith("{term}")]
        return roles + code + _MATH.findall(rest) + re.findall(r"\]\([^)]*\)", rest)
    english, korean = pieces(msgid), pieces(msgstr)
    lines = [f"keeps {p!r} as in the English" for p in sorted(set(english)) if korean.count(p) < english.count(p)]
    if sorted(term_targets(msgid)) != sorted(term_targets(msgstr)):
        lines.append(f"{{term}} roles point to {sorted(term_targets(msgstr))}, the English to "
                     f"{sorted(term_targets(msgid))}")
    return lines


def term_problems(msgid: str, msgstr: str, korean: dict[str, str]) -> list[str]:
    """A translation that does not use the glossary's Korean term (``korean``, from :func:`glossary_korean`)
    for an entry its English links with ``{term}``, or names in full (a glossary term of two or more words)."""
    wanted = set(term_targets(msgid))
    bare = _ROLE.sub(" ", msgid).lower()
    for term in sorted(korean, key=len, reverse=True):   # a longer term first: "canonical correlation analysis"
        found = re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])")   # is not also "canonical correlation"
        if " " in term and found.search(bare):
            wanted.add(term)
            bare = found.sub(" ", bare)
    return [f"uses {korean[t]!r} for {t!r} (the glossary's term)" for t in sorted(wanted)
            if t in korean and korean[t] not in msgstr]


def glossary_korean(root: Path = Path(".")) -> dict[str, str]:
    """Every glossary entry's English names (lower case) -> its Korean term, the first name in Hangul."""
    table, names = {}, []
    for line in [*_glossary_lines(root), ""]:
        if line.strip() and not line[0].isspace():
            names.append(line.strip())
        elif names:
            korean = next((n for n in names if _HANGUL.search(n)), None)
            for name in names:
                if korean and not _HANGUL.search(name):
                    table[name.lower()] = korean
            names = []
    return table


def _glossary_lines(root: Path) -> list[str]:
    inside, lines = False, []
    for line in (root / GLOSSARY).read_text(encoding="utf-8").splitlines():
        if line.startswith("```{glossary}"):
            inside = True
        elif inside and line.startswith("```"):
            break
        elif inside and not line.startswith(":"):
            lines.append(line)
    return lines


SLIDE_FIELDS = ("title", "text", "notes")   # what a cell's "slide" metadata says (coursekit.slides)


def slide_texts(notebook: nbformat.NotebookNode) -> list[str]:
    """The words of a lesson's slides that its cells' ``slide`` metadata holds (title, text, notes)."""
    return [cell.metadata["slide"][field] for cell in notebook.cells
            for field in SLIDE_FIELDS if isinstance(cell.metadata.get("slide", {}).get(field), str)]


FIGURE_FIELDS = (("figure", "caption"), ("image", "alt"))   # a code cell's mystnb metadata a page shows


def figure_texts(notebook: nbformat.NotebookNode) -> list[str]:
    """The captions and alt texts a notebook's code cells give their figures (``mystnb`` metadata)."""
    return [cell.metadata["mystnb"][group][field] for cell in notebook.cells
            for group, field in FIGURE_FIELDS
            if isinstance(cell.metadata.get("mystnb", {}).get(group, {}).get(field), str)]


def claims_of(notebook: nbformat.NotebookNode) -> list[str]:
    """The checked-claim sentences a notebook's stored outputs show, in order, each once."""
    found: list[str] = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            for match in CLAIM.finditer(output.get("data", {}).get("text/html", "")):
                sentence = html.unescape(match.group(2))
                if sentence not in found:
                    found.append(sentence)
    return found


def _docname_source(root: Path, docname: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (root / f"{docname}{suffix}").is_file():
            return root / f"{docname}{suffix}"
    raise ValueError(f"no page {docname!r} (.ipynb or .md) under {root}")


def toc_pages(root: Path = Path(".")) -> list[str]:
    """Every page of the book, as ``_toc.yml`` lists it (docnames)."""
    def walk(items: list[dict]) -> list[str]:
        return [name for item in items for name in [*([item["file"]] if "file" in item else []),
                                                     *walk(item.get("sections", []))]]
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"], *walk([c for part in toc.get("parts", []) for c in part.get("chapters", [])])]


# What a page marked partly translated (book/translations.yml, partial) must have in Korean: its headings,
# the captions of its figures, diagrams and tables, its tables' cells and the summary at its top.
PARTIAL_KINDS = ("heading", "caption", "table cell", "summary")
_CAPTION = re.compile(r"^\*(?:Diagram|Figure|Table)\.\*")


def _markdown_blocks(source: Path) -> list[str]:
    """A page's markdown: a MyST page's text, or a notebook's markdown cells and markdown outputs, in order."""
    if source.suffix != ".ipynb":
        return [source.read_text(encoding="utf-8")]
    blocks = []
    for cell in nbformat.read(source, as_version=4).cells:
        if cell.cell_type == "markdown":
            blocks.append(cell.source)
        for output in cell.get("outputs", []):
            if "text/markdown" in output.get("data", {}):
                blocks.append(output["data"]["text/markdown"])
    return blocks


def _block_kinds(source: Path, msgids: list[str]) -> dict[str, set[str]]:
    """For each message: the kinds of block it is on the page (:data:`PARTIAL_KINDS`). The summary is the
    prose of the first markdown block (a notebook's first cell, the opening of a MyST page before its
    first section)."""
    blocks = _markdown_blocks(source)
    captions = set(figure_texts(nbformat.read(source, as_version=4))) if source.suffix == ".ipynb" else set()
    kinds: dict[str, set[str]] = {}
    for msgid in msgids:
        found = kinds.setdefault(msgid, set())
        if _CAPTION.match(msgid) or msgid in captions:
            found.add("caption")
        pattern = re.compile(r"(?<![^\s|])" + _pattern(msgid) + r"(?=[ \t]*(?:\||$))", re.M)
        for index, text in enumerate(blocks):
            for match in pattern.finditer(text):
                line = text[text.rfind("\n", 0, match.start()) + 1:].lstrip()
                if line.startswith("#"):
                    found.add("heading")
                elif line.startswith("|"):
                    found.add("table cell")
                elif index == 0 and "\n## " not in text[:match.start()]:
                    found.add("summary")
    return kinds


def _table_cells(source: Path) -> list[str]:
    """The cells of every table a page's markdown writes. Sphinx's gettext builder misses a table inside a
    directive (the lessons' "Notation in this lesson" admonitions): its cells carry no source position, so
    Sphinx takes them for its own text. They are read from the markdown here instead."""
    if source.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(source, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = source.read_text(encoding="utf-8")
    cells = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|") and not re.fullmatch(r"[|:\- ]+", line):
            cells += [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|")) if c.strip()]
    return cells


def _makefile_steps(root: Path):
    """The book's own ``makefile_steps`` extension, which reads the Makefile for the setup page."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("makefile_steps", root / "book" / "_ext" / "makefile_steps.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _makefile_messages(root: Path) -> list[str]:
    """What the setup page says of each step of ``make test``: the Makefile's comment on it. Sphinx's
    gettext builder never sees it (a directive writes it), so it has a catalog of its own."""
    makefile = _makefile_steps(root).Makefile((root / "Makefile").read_text(encoding="utf-8"))
    return list(dict.fromkeys(d for step in makefile.test_steps() if (d := makefile.describe(step))))


def translate_makefile_comments(text: str, messages: dict[str, str]) -> str:
    """A Makefile with each comment block that says one of ``messages`` (its lines joined, as the setup
    page shows it) replaced by a one-line comment of its translation."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].startswith("#"):
            j += 1
        if j > i:
            said = " ".join(line.lstrip("#").strip() for line in lines[i:j])
            out += [f"# {messages[said]}"] if said in messages else lines[i:j]
            i = j
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out) + "\n"


def _site_messages(root: Path) -> list[str]:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [config["title"], *[part["caption"] for part in toc.get("parts", []) if part.get("caption")]]


def _write_pot(path: Path, messages: list[tuple[str, str]]) -> None:
    pot = polib.POFile()
    pot.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}
    for msgid, comment in messages:
        pot.append(polib.POEntry(msgid=msgid, msgstr="", comment=comment))
    path.parent.mkdir(parents=True, exist_ok=True)
    pot.save(str(path))


def extract(root: Path = Path("."), out: Path | None = None) -> list[Path]:
    """Write the message templates of every page, diagram module and the site into ``out``
    (``_build/gettext``); return the ``.pot`` paths. Runs Sphinx's gettext builder (a few seconds)."""
    out = out or root / POT_DIR
    build = out.parent / "gettext-build"
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    subprocess.run([str(jupyter_book), "build", str(root), "--builder", "custom", "--custom-builder", "gettext",
                    "--path-output", str(build), "-n", "-W", "--keep-going", "--all", "-q"],
                   check=True, stdout=subprocess.DEVNULL)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(build / "_build" / "gettext", out)
    terms = glossary_terms(root)
    site = _site_messages(root)
    root_page = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))["root"]
    written = []
    for pot_path in sorted(out.rglob("*.pot")):
        pot = polib.pofile(str(pot_path))
        docname = pot_path.relative_to(out).with_suffix("").as_posix()
        # Sphinx finds the captions in the root page's toctree: they go to site.pot (the title stays: the
        # root page's heading says it too)
        labels = terms if docname == GLOSSARY.with_suffix("").as_posix() else set()   # term lines stay there
        kept = [e for e in pot if translatable(e.msgid, labels)
                and not (docname == root_page and e.msgid in site[1:])]
        seen = {e.msgid for e in kept}
        source = _docname_source(root, docname)
        for cell in _table_cells(source):
            if cell not in seen and translatable(cell, labels):
                kept.append(polib.POEntry(msgid=cell, msgstr="", comment="table cell"))
                seen.add(cell)
        if source.suffix == ".ipynb":
            notebook = nbformat.read(source, as_version=4)
            for words, kind in [*((w, "slide") for w in slide_texts(notebook)),
                                *((w, "caption") for w in figure_texts(notebook))]:
                if words not in seen and translatable(words, labels):
                    kept.append(polib.POEntry(msgid=words, msgstr="", comment=kind))
                    seen.add(words)
            for sentence in claims_of(notebook):
                if sentence not in seen:
                    kept.append(polib.POEntry(msgid=sentence, msgstr="", comment="checked-claim line"))
                    seen.add(sentence)
        kinds = _block_kinds(source, [e.msgid for e in kept])
        for e in kept:   # what kind of block each message is: a partly translated page owes some kinds
            tags = [k for k in PARTIAL_KINDS if k in kinds.get(e.msgid, ()) and k not in (e.comment or "")]
            if tags:
                e.comment = ", ".join(filter(None, [e.comment, *tags]))
        pot[:] = kept
        pot.save(str(pot_path))
        written.append(pot_path)
    from .diagrams import messages as diagram_messages
    for module, words in diagram_messages().items():
        path = out / DIAGRAM_CATALOGS / f"{module}.pot"
        _write_pot(path, [(w, "drawn in a diagram") for w in words])
        written.append(path)
    path = out / f"{SITE}.pot"
    _write_pot(path, [(m, "site title or table-of-contents caption") for m in site])
    written.append(path)
    path = out / f"{MAKEFILE}.pot"
    _write_pot(path, [(m, "a step of make test, described on the setup page") for m in _makefile_messages(root)])
    written.append(path)
    return written


def update(root: Path = Path("."), pot_dir: Path | None = None, language: str = "ko") -> None:
    """Merge the templates into the catalogs (``sphinx-intl update``): new messages come in empty, a
    changed English message comes in fuzzy with its old translation, for a translator to revise."""
    pot_dir = pot_dir or root / POT_DIR
    sphinx_intl = Path(sys.executable).parent / "sphinx-intl"
    subprocess.run([str(sphinx_intl), "update", "-p", str(pot_dir), "-l", language, "-d", str(root / LOCALES),
                    "-w", "0"], check=True, stdout=subprocess.DEVNULL)
    for path in sorted((root / LOCALES / language / "LC_MESSAGES").rglob("*.po")):
        po = polib.pofile(str(path), wrapwidth=0)
        gone = [e for e in po if e.obsolete and not e.msgstr]   # a removed message nobody translated
        # Babel flags a message with "90% g" in it python-format; none is ever %-formatted, and the flag
        # makes msgfmt -c reject a translation whose per cent sign is followed by other words
        flagged = [e for e in po if "python-format" in e.flags]
        for entry in gone:
            po.remove(entry)
        for entry in flagged:
            entry.flags.remove("python-format")
        if gone or flagged:
            po.save(str(path))


# --- translating a text ----------------------------------------------------------------------------------

def _pattern(msgid: str) -> str:
    """A message as a regular expression over its source: Sphinx joins a paragraph's lines with spaces,
    so a space matches any run of white space (a line break and the next line's indentation)."""
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", msgid.strip()))


def translate_text(text: str, messages: dict[str, str]) -> tuple[str, set[str]]:
    """``text`` (MyST) with every message of ``messages`` that it holds as a whole block (a paragraph, a
    heading, a list item, a table cell, a directive's title) replaced by its translation; longest first,
    in one pass, so a translation is never translated again. Returns the text and the messages placed."""
    if not messages:
        return text, set()
    ordered = sorted(messages, key=len, reverse=True)
    # a message starts a block (after white space, a table's bar or the start) and ends one (before the
    # end of the line, or a table's bar)
    pattern = re.compile(r"(?<![^\s|])(?:" + "|".join(f"(?P<m{i}>{_pattern(m)})" for i, m in enumerate(ordered))
                         + r")(?=[ \t]*(?:\||$))", re.M)
    used: set[str] = set()

    def replace(match: re.Match) -> str:
        msgid = ordered[int(match.lastgroup[1:])]
        used.add(msgid)
        return messages[msgid]

    return pattern.sub(replace, text), used


def _plain_claim(line: str, claim, messages: dict[str, str]) -> str:
    """A ``checked: <claim> (<values>)`` line with its claim translated: the longest message the line
    starts with (a claim may hold parentheses of its own), followed by the end or the values."""
    if not line.startswith("checked: "):
        return line
    said = line[len("checked: "):]
    known = [m for m in messages if said == m or said.startswith(m + " (")]
    if not known:
        return line
    sentence = max(known, key=len)
    return f"checked: {claim(sentence)}{said[len(sentence):]}"


def _translate_outputs(cell, messages: dict[str, str]) -> set[str]:
    """Translate what a code cell's stored outputs show as text of the page: its claim lines (HTML and
    plain) and the markdown it displays (a table of results); returns the messages placed."""
    used: set[str] = set()

    def claim(sentence: str) -> str:
        if sentence in messages:
            used.add(sentence)
            return messages[sentence]
        return sentence

    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "text/html" in data:
            data["text/html"] = CLAIM.sub(lambda m: m.group(1) + html.escape(claim(html.unescape(m.group(2))))
                                          + m.group(3), data["text/html"])
        if "text/plain" in data and data["text/plain"].startswith("checked: "):
            data["text/plain"] = "\n".join(_plain_claim(line, claim, messages)
                                           for line in data["text/plain"].split("\n"))
        if "text/markdown" in data:
            data["text/markdown"], placed = translate_text(data["text/markdown"], messages)
            used |= placed
    return used


_DIAGRAM = re.compile(r"(\]\((?:\.\./)?(?:book/)?diagrams/)([a-z0-9_]+\.svg\))")


def _twin_diagrams(text: str, twins: set[str], language: str) -> str:
    return _DIAGRAM.sub(lambda m: m.group(1) + (f"{language}/" if m.group(2)[:-5] in twins else "") + m.group(2), text)


UI = {"ko": {"nb_code_prompt_show": "코드 셀 보기", "nb_code_prompt_hide": "코드 셀 숨기기"}}

NOTE = {
    "ko": {
        "missing": ":::{{note}}\n이 페이지는 아직 한국어로 옮기지 않아 영어 원문을 그대로 싣습니다. "
                   "한국어로 옮긴 쪽은 {{doc}}`{intro}`에 있습니다.\n:::\n",
        "partial": ":::{{note}}\n이 페이지는 제목과 표, 첫머리 요약만 한국어로 옮겼고, 긴 방법 설명은 아직 영어 "
                   "원문 그대로입니다.\n:::\n",
    },
}


def _with_note(text: str, note: str) -> str:
    """``text`` with ``note`` just below its first heading."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("# "):
            return "".join(lines[:i + 1]) + "\n" + note + "".join(lines[i + 1:])
    return note + "\n" + text


def _bare_titles(messages: dict[str, str]) -> dict[str, str]:
    """sphinx-proof gives Sphinx a theorem's title in parentheses, "(The Gaussian PMI is quadratic)", while
    the page writes it bare after the directive: the bare title -> its bare translation."""
    return {m[1:-1]: s[1:-1] for m, s in messages.items()
            if m.startswith("(") and m.endswith(")") and s.startswith("(") and s.endswith(")")}


def _translate_page(source: Path, messages: dict[str, str], twins: set[str], language: str,
                    note: str | None) -> tuple[str, set[str], dict[Path, str]]:
    """The translated text of one page (a notebook's JSON or a MyST file), the messages it placed, and the
    translated text of each file it includes."""
    titles = _bare_titles(messages)
    text, used, includes = _translate_source(source, {**titles, **messages}, twins, language, note)
    return text, {m for m in messages if m in used or (m[1:-1] in titles and m[1:-1] in used)}, includes


def _translate_source(source: Path, messages: dict[str, str], twins: set[str], language: str,
                      note: str | None) -> tuple[str, set[str], dict[Path, str]]:
    used: set[str] = set()
    if source.suffix == ".md":
        text, used = translate_text(source.read_text(encoding="utf-8"), messages)
        text = _twin_diagrams(text, twins, language)
        includes, placed = _included(source, messages)
        return (_with_note(text, note) if note else text), used | placed, includes
    notebook = nbformat.read(source, as_version=4)
    translated = copy.deepcopy(notebook)
    noted = note is None
    for cell in translated.cells:
        slide = cell.metadata.get("slide", {})
        for field in SLIDE_FIELDS:
            if slide.get(field) in messages:
                used.add(slide[field])
                slide[field] = messages[slide[field]]
        if cell.cell_type == "markdown":
            text, placed = translate_text(cell.source, messages)
            used |= placed
            cell.source = _twin_diagrams(text, twins, language)
            if not noted and cell.source.lstrip().startswith("# "):
                cell.source, noted = _with_note(cell.source, note), True
        elif cell.cell_type == "code":
            used |= _translate_outputs(cell, messages)
            for group, field in FIGURE_FIELDS:
                part = cell.metadata.get("mystnb", {}).get(group, {})
                if part.get(field) in messages:
                    used.add(part[field])
                    part[field] = messages[part[field]]
    translated.metadata.setdefault("language_info", {})
    translated.metadata["course_language"] = language
    return json.dumps(translated, ensure_ascii=False, indent=1) + "\n", used, {}


_INCLUDE = re.compile(r"^```\{include\}\s+(\S+)", re.M)


def _included(source: Path, messages: dict[str, str]) -> tuple[dict[Path, str], set[str]]:
    """The files a MyST page includes, translated with the page's catalog (Sphinx extracts their messages
    into it), and the messages placed."""
    texts, used = {}, set()
    for name in _INCLUDE.findall(source.read_text(encoding="utf-8")):
        texts[source.parent / name], placed = translate_text((source.parent / name).read_text(encoding="utf-8"),
                                                             messages)
        used |= placed
    return texts, used


def build_tree(root: Path = Path("."), out: Path | None = None, language: str = "ko") -> list[str]:
    """Write the ``language`` edition's source tree into ``out`` (``_build/<language>``): the book's files,
    every page (translated where listed), a ``_config.yml`` and ``_toc.yml`` in that language. Returns the
    problems found (a translated page with a message that could not be placed); empty when all is well."""
    root = root.resolve()
    out = (out or root / "_build" / language).resolve()
    entry = translations(root, language)
    problems: list[str] = []
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in ("Makefile", "_toc.yml", "_config.yml"):
        shutil.copy2(root / name, out / name)
    shutil.copytree(root / "book", out / "book", ignore=shutil.ignore_patterns("locales", "__pycache__"))
    shutil.copytree(root / "chapters", out / "chapters", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    twins = {p.stem for p in (root / "book" / "diagrams" / language).glob("*.svg")}
    intro = "book/intro"
    pages = toc_pages(root)
    for docname in pages:
        source = _docname_source(root, docname)
        target = out / source.relative_to(root)
        if docname in entry["translated"] or docname in entry["partial"]:
            messages = catalog(docname, root, language)
            note = NOTE[language]["partial"].format() if docname in entry["partial"] else None
            text, used, includes = _translate_page(source, messages, twins, language, note)
            if docname in entry["translated"]:
                unplaced = sorted(set(messages) - used - set(_unplaced_by_design(messages)))
                problems += [f"{catalog_path(docname, root, language)}: not found in {source.relative_to(root)}: "
                             f"{m[:70]!r}" for m in unplaced]
        else:
            note = NOTE[language]["missing"].format(intro="/" + intro)
            text, _, includes = _translate_page(source, {}, twins, language, note)
        target.write_text(text, encoding="utf-8")
        for included, included_text in includes.items():
            (out / included.relative_to(root)).write_text(included_text, encoding="utf-8")
    makefile = catalog(MAKEFILE, root, language)
    (out / "Makefile").write_text(translate_makefile_comments((root / "Makefile").read_text(encoding="utf-8"),
                                                              makefile), encoding="utf-8")
    site = catalog(SITE, root, language)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = site.get(config["title"], config["title"])
    settings = config.setdefault("sphinx", {}).setdefault("config", {})
    settings["language"] = language
    settings.update(UI[language])   # what myst-nb writes on its own: the code-cell toggles
    (out / "_config.yml").write_text("# Generated by coursekit.i18n from ../../_config.yml: do not edit.\n"
                                     + yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    for part in toc.get("parts", []):
        if part.get("caption"):
            part["caption"] = site.get(part["caption"], part["caption"])
    (out / "_toc.yml").write_text("# Generated by coursekit.i18n from ../../_toc.yml: do not edit.\n"
                                  + yaml.safe_dump(toc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    _claims_catalog(root, language).save_as_mofile(str(out / "claims.mo"))
    _lab_font(out)
    return problems


# JupyterLab's own font stacks (its variables --jp-ui-font-family and --jp-content-font-family), with the
# Hangul font first: it covers Hangul only (unicode-range), so every other letter keeps JupyterLab's font.
_LAB_CSS = """/* make lab-ko: Hangul from the font the course ships (coursekit.i18n writes this file). */
{face}
:root:root {{   /* above JupyterLab's theme, which sets these on :root */
  --jp-ui-font-family: "{family}", system-ui, -apple-system, blinkmacsystemfont, "Segoe UI", helvetica,
    arial, sans-serif;
  --jp-content-font-family: "{family}", system-ui, -apple-system, blinkmacsystemfont, "Segoe UI", helvetica,
    arial, sans-serif;
}}
"""


def _lab_font(out: Path) -> None:
    """JupyterLab shows Hangul with the course's font too, as the site does: the font beside the Korean
    notebooks, and a custom stylesheet in the Jupyter configuration ``make lab-ko`` points at."""
    font = write_web_font(out / "book" / "_static" / "fonts" / "NanumGothic.woff")
    css = out / ".jupyter" / "custom" / "custom.css"
    css.parent.mkdir(parents=True, exist_ok=True)
    css.write_text(_LAB_CSS.format(face=font_face(f"../files/{font.relative_to(out).as_posix()}"), family=FAMILY),
                   encoding="utf-8")


def _claims_catalog(root: Path, language: str) -> polib.POFile:
    """Every translated checked-claim line of the chapters in one catalog: the one a Korean notebook's run
    reads (``COURSE_CLAIMS_CATALOG``, :mod:`attention_course.claims`) to show its claims in Korean."""
    merged = polib.POFile()
    merged.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": language}
    seen = set()
    for path in sorted((root / LOCALES / language / "LC_MESSAGES" / "chapters").glob("*.po")):
        for entry in polib.pofile(str(path)):
            if ("checked-claim line" in (entry.comment or "") and entry.msgstr and not entry.obsolete
                    and "fuzzy" not in entry.flags and entry.msgid not in seen):
                merged.append(polib.POEntry(msgid=entry.msgid, msgstr=entry.msgstr))
                seen.add(entry.msgid)
    return merged


def _unplaced_by_design(messages: dict[str, str]) -> list[str]:
    """Messages a page's text never holds as a block: an image's alt text (Sphinx extracts it besides the
    paragraph of the image, which carries it)."""
    return [m for m in messages if any(f"![{m}](" in other for other in messages)]


# --- the checks ------------------------------------------------------------------------------------------

def _statistics(pot: Path, po: Path, partial: bool = False) -> list[str]:
    """What a translator still owes: the messages of the template ``pot`` that ``po`` lacks, leaves empty
    or marks fuzzy; of a ``partial`` page, only its headings, captions, table cells and summary."""
    if not po.is_file():
        return [f"{po}: missing (run make translations)"]
    entries = {e.msgid: e for e in polib.pofile(str(po)) if not e.obsolete}
    lines = []
    for wanted in polib.pofile(str(pot)):
        if partial and not any(kind in (wanted.comment or "") for kind in PARTIAL_KINDS):
            continue
        entry = entries.get(wanted.msgid)
        state = ("untranslated" if entry is None or not entry.msgstr
                 else "fuzzy" if "fuzzy" in entry.flags else None)
        if state:
            lines.append(f"{po}: {state}: {wanted.msgid[:70]!r}")
    return lines


def problems(root: Path = Path("."), pot_dir: Path | None = None, language: str = "ko") -> list[str]:
    """Every message of a page, diagram module or site string marked translated that its catalog lacks,
    leaves empty or marks fuzzy (of a page marked partial: every heading, caption, table cell and summary
    message), against the templates in ``pot_dir`` (made by :func:`extract`)."""
    pot_dir = pot_dir or root / POT_DIR
    entry = translations(root, language)
    names = [*entry["translated"], *entry["partial"], *[f"{DIAGRAM_CATALOGS}/{d}" for d in entry["diagrams"]], SITE]
    if "book/setup" in entry["translated"]:
        names.append(MAKEFILE)
    lines = []
    for name in names:
        pot = pot_dir / f"{name}.pot"
        if not pot.is_file():
            lines.append(f"{pot}: no such template (is {name!r} a page of the book?)")
            continue
        lines += _statistics(pot, catalog_path(name, root, language), partial=name in entry["partial"])
    return lines


def needs_translator(root: Path = Path("."), pot_dir: Path | None = None, language: str = "ko") -> dict[str, int]:
    """For every catalog: how many of its messages are untranslated or fuzzy."""
    pot_dir = pot_dir or root / POT_DIR
    partial = translations(root, language)["partial"]
    counts = {}
    for pot in sorted(pot_dir.rglob("*.pot")):
        name = pot.relative_to(pot_dir).with_suffix("").as_posix()
        counts[name] = len(_statistics(pot, catalog_path(name, root, language), partial=name in partial))
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.i18n", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "check", "build"],
                        help="update: extract the English and merge it into the catalogs, then list what needs a "
                             "translator; check: fail on any page marked translated that is not; build: write "
                             "the translated source tree")
    parser.add_argument("--language", default="ko")
    parser.add_argument("--out", type=Path, help="build: where the tree goes (default _build/<language>)")
    args = parser.parse_args(argv)
    root = Path(".")
    if args.command == "build":
        found = build_tree(root, args.out, args.language)
        print(f"wrote {args.out or Path('_build') / args.language}")
    else:
        extract(root)
        if args.command == "update":
            update(root, language=args.language)
            entry = translations(root, args.language)
            marked = {*entry["translated"], *entry["partial"], *[f"{DIAGRAM_CATALOGS}/{d}" for d in entry["diagrams"]],
                      SITE,
                      *([MAKEFILE] if "book/setup" in entry["translated"] else [])}
            for name, owed in needs_translator(root, language=args.language).items():
                if owed:
                    print(f"{owed:5d} to translate  {catalog_path(name, root, args.language)}"
                          + ("   (marked translated: make test fails until done)" if name in marked else ""))
        found = problems(root, language=args.language)
    for line in found:
        print(line, file=sys.stderr)
    if found and args.command != "update":
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
