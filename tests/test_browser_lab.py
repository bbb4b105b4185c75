"""`make lab` opens the chapters in a real JupyterLab: start it headless on 127.0.0.1 through the
Makefile, open Chapter 1 in Chromium, see the notebook render with its prose and stored outputs,
its bookkeeping cells collapsed as on the site and its diagrams loaded, and let its kernel start;
then stop the server. `make lab-ko` does the same with the Korean notebooks: chapter 1 in Korean, its
Hangul drawn with the course's font, its Korean diagrams loaded, and its first code cells run."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
from browser_support import ROOT, SHOTS, Watch, chromium, require_browser

sync_playwright = require_browser()
CHAPTER = "chapters/01_seq2seq_bottleneck.ipynb"


def hidden_cells(path) -> list[bool]:
    """For each cell of the notebook: is its input hidden (jupyter.source_hidden)?"""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return [bool(c.metadata.get("jupyter", {}).get("source_hidden")) for c in nb.cells]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _serve(target: str):
    """`make <target>` (lab or lab-ko) in its own process group; yields (base URL, token), then stops the
    whole group."""
    port, token = free_port(), secrets.token_hex(16)
    flags = f"--no-browser --ServerApp.port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    log_path = SHOTS.parent / f"{target}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(["make", "--no-print-directory", target, f"LAB_FLAGS={flags}"], cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                log.flush()
                tail = log_path.read_text()[-2000:]
                pytest.fail(f"make {target} exited with status {proc.returncode} before serving:\n{tail}",
                            pytrace=False)
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"make {target}: JupyterLab did not answer on 127.0.0.1 within 180 s", pytrace=False)
            time.sleep(0.5)
        yield base, token
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


@pytest.fixture(scope="module")
def lab():
    with _serve("lab") as served:
        yield served


def test_make_lab_serves_only_this_machine(lab):
    base, _ = lab
    assert base.startswith("http://127.0.0.1:")


def test_make_lab_opens_a_chapter(lab):
    base, token = lab
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium(sync_playwright) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watch = Watch(page, base)
        page.goto(f"{base}/lab/tree/{CHAPTER}?reset&token={token}")   # reset: no other notebook restored
        page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell", timeout=90_000)
        # The chapter's title is rendered Markdown, and stored outputs are displayed.
        heading = page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell h1", timeout=60_000)
        assert "bottleneck" in heading.inner_text().lower()
        page.wait_for_selector(".jp-OutputArea-output", timeout=60_000)
        # The kernel from .venv starts: the status bar names it and reports it idle.
        status = page.locator(".jp-StatusBar-Widget", has_text="Idle")
        try:
            status.first.wait_for(timeout=120_000)
        finally:
            page.screenshot(path=str(SHOTS / "lab-chapter-01.png"))
        assert "Python 3" in page.locator("#jp-main-statusbar").inner_text()
        # The lesson's bookkeeping cells are collapsed here as on the site, and only those: their
        # input shows as JupyterLab's placeholder (cell metadata jupyter.source_hidden).
        hidden = hidden_cells(ROOT / CHAPTER)
        cells = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell"       # the open notebook's, not a hidden tab's
        page.wait_for_function(f"document.querySelectorAll('{cells}').length >= 10", timeout=60_000)
        rendered = page.evaluate("""(cells) => Array.from(document.querySelectorAll(cells))
            .map((cell, i) => ({index: Number(cell.dataset.windowedListIndex ?? i),
                                collapsed: cell.querySelector(".jp-InputPlaceholder") !== null}))""", cells)
        assert len(rendered) >= 10, f"only {len(rendered)} cells rendered"
        wrong = [r["index"] for r in rendered if r["collapsed"] != hidden[r["index"]]]
        assert not wrong, f"cells whose input JupyterLab collapses, or not, against their metadata: {wrong}"
        assert any(hidden[r["index"]] for r in rendered), "no hidden cell was among those rendered"
        # The diagrams load from the repository (book/diagrams), as on the site.
        # (JupyterLab renders and re-renders cells as they scroll: ask the page, never hold an element.)
        page.wait_for_function("""() => Array.from(document.querySelectorAll("img[src*='ch01_encoder_decoder']"))
                                          .some(img => img.complete && img.naturalWidth > 0)""", timeout=30_000)
        assert not watch.blocked, f"JupyterLab tried to reach the network: {watch.blocked}"
        page.close()


def test_a_claim_that_does_not_hold_shows_a_box_and_the_notebook_goes_on(lab):
    """A student's run (make lab is not strict): a failed claim is a box with the claim, this run's values
    and a link to the chapter's evidence page, and the next cell still runs."""
    import nbformat

    base, token = lab
    folder = ROOT / "_build" / "lab-claims"
    folder.mkdir(parents=True, exist_ok=True)
    name = "07_attention_explanation.ipynb"        # named as a chapter, so the box links its evidence page
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from attention_course.claims import expect\n"
                                  "expect('this run meets a claim it cannot meet', 0.3 > 0.5, measured=0.3)"),
        nbformat.v4.new_code_cell("print('the notebook went on')")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, folder / name)
    with chromium(sync_playwright) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/lab/tree/_build/lab-claims/{name}?reset&token={token}")   # reset: only this notebook
        shown = ".jp-NotebookPanel:not(.lm-mod-hidden)"
        page.wait_for_selector(f"{shown} .jp-Cell", timeout=90_000)
        page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(timeout=120_000)
        try:
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()      # as a student: Run > Run All
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            box = page.wait_for_selector(f"{shown} .jp-OutputArea-output .claim-not-held", timeout=60_000)
            page.wait_for_selector(f"{shown} .jp-OutputArea-output:has-text('the notebook went on')", timeout=60_000)
        finally:
            page.screenshot(path=str(SHOTS / "lab-claim-not-held.png"))
        text = box.inner_text()
        assert "this run meets a claim it cannot meet" in text and "measured = 0.3" in text
        assert "did not hold in this run" in text and "goes on" in text
        link = box.query_selector("a")
        # JupyterLab resolves the link next to the open notebook: the chapter's evidence page in the same folder
        href = link.get_attribute("href") if link else ""
        assert "/_build/lab-claims/07_attention_explanation_evidence.ipynb" in href
        error = page.query_selector(f"{shown} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert error is None, "the claim raised an error instead of showing the box"
        page.close()


def test_make_lab_ko_opens_chapter_1_in_korean_and_runs_it():
    """`make lab-ko`: the Korean chapter 1 opens with Hangul from the course's font (no Korean system font
    is needed), its Korean diagrams loaded and the English code cells; Run All runs it to its first claim,
    shown in Korean."""
    with _serve("lab-ko") as (base, token), chromium(sync_playwright) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watch = Watch(page, base)
        page.goto(f"{base}/lab/tree/{CHAPTER}?reset&token={token}")
        shown = ".jp-NotebookPanel:not(.lm-mod-hidden)"
        heading = page.wait_for_selector(f"{shown} .jp-Cell h1", timeout=90_000)
        assert re.search("[\uac00-\ud7a3]", heading.inner_text()), heading.inner_text()
        page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(timeout=120_000)
        family = heading.evaluate("h => getComputedStyle(h).fontFamily")
        assert "Course Hangul" in family, f"the heading is set in {family}"
        page.wait_for_function("""() => Array.from(document.fonts)
            .some(f => f.family.includes('Course Hangul') && f.status === 'loaded')""", timeout=30_000)
        page.screenshot(path=str(SHOTS / "lab-ko-chapter-01-top.png"))
        page.wait_for_function("""() => Array.from(document.querySelectorAll("img[src*='ko/ch01_encoder_decoder']"))
                                          .some(img => img.complete && img.naturalWidth > 0)""", timeout=30_000)
        try:
            page.locator(".lm-MenuBar-itemLabel", has_text="Edit").first.click()     # the stored outputs out
            page.locator(".lm-Menu-itemLabel", has_text="Clear Outputs of All Cells").first.click()
            page.wait_for_function(f"document.querySelectorAll('{shown} details.claim').length === 0")
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()      # as a student: Run > Run All
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            claim = page.wait_for_selector(f"{shown} .jp-OutputArea-output details.claim summary", timeout=240_000)
        finally:
            page.screenshot(path=str(SHOTS / "lab-ko-chapter-01.png"))
        assert re.search("[\uac00-\ud7a3]", claim.text_content()), claim.text_content()
        assert not watch.blocked, f"JupyterLab tried to reach the network: {watch.blocked}"
        page.close()
