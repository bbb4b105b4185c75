# Attention from the bottleneck up: build, test and run the course.
#   make book   build the website into _build/html (creates .venv on first use)
#   make test   run every check: lint, unit tests, notebook validation, build, browser test
# GNU make. Everything runs inside .venv, installed from the pinned requirements.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BUILD  := _build

# Deterministic, single-threaded numerics on a small shared CPU; no GUI for matplotlib.
export PYTHONHASHSEED := 0
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export MPLBACKEND := Agg
# Use platformdirs for Jupyter paths (silences jupyter_core's deprecation warning).
export JUPYTER_PLATFORM_DIRS := 1

JB_FLAGS := -n -W --keep-going --all --builder html

.PHONY: help book test lint unit platforms notebooks nbval nbval-robust nbval-shift2 build-book browser execute bench student slides coursemap diagrams translations lab lab-ko clean distclean

help:
	@echo "make book       build the website into $(BUILD)/html (creates $(VENV) on first use)"
	@echo "make test       lint, unit tests, notebook validation, book build, browser test"
	@echo "make nbval-robust    validate the notebooks on a second numeric path at seed shift 1 (part of make test)"
	@echo "make platforms  check that the lock resolves for the Pythons and platforms of book/platforms.md"
	@echo "make lab        open the chapters in JupyterLab (from $(VENV), on 127.0.0.1)"
	@echo "make lab-ko     open the Korean chapters (made from the catalogs) in JupyterLab"
	@echo "make translations  update the Korean catalogs after an English edit; list what needs a translator"
	@echo "make execute    re-run every chapters/*.ipynb in place (for authors)"
	@echo "make bench      time the heavy steps; writes $(BUILD)/bench.json"
	@echo "make student    write the student edition (solutions removed) into $(BUILD)/student (Korean: $(BUILD)/student/ko)"
	@echo "make slides     build each chapter's slide deck (offline reveal.js, notes on s) in $(BUILD)/slides (Korean: $(BUILD)/slides/ko)"
	@echo "make coursemap  rewrite book/course_map.md from the chapters' metadata"
	@echo "make diagrams   redraw the diagrams (code/coursekit/diagrams) into book/diagrams/*.svg"
	@echo "make clean      remove $(BUILD)/ (keeps $(VENV)/); make distclean also removes $(VENV)/"

# (Re)install the pinned environment whenever a pin or the package metadata changes.
$(STAMP): requirements.txt requirements-nodeps.txt constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -r requirements.txt -c constraints.txt -e .
	$(BIN)/python -m pip install --no-deps -r requirements-nodeps.txt -c constraints.txt
	touch $@

book: build-book
	@echo "Website: $(BUILD)/html/index.html (Korean: $(BUILD)/html/ko/index.html)"

# Build the website with Jupyter Book; any warning (a broken reference, a missing citation) fails it.
# The notebooks are not executed here: the site shows their stored outputs, which nbval has checked.
# The Korean site is built the same way from the Korean source tree coursekit.i18n makes in _build/ko out
# of the same notebooks and the catalogs in book/locales/ko (it fails if a translated page's message
# cannot be placed), and goes into _build/html/ko.
KO := $(BUILD)/ko
build-book: $(STAMP)
	$(BIN)/jupyter-book build . $(JB_FLAGS)
	test -f $(BUILD)/html/index.html
	$(BIN)/python -m coursekit.i18n build --language ko --out $(KO)
	$(BIN)/jupyter-book build $(KO) $(JB_FLAGS)
	rm -rf $(BUILD)/html/ko && cp -r $(KO)/_build/html $(BUILD)/html/ko
	test -f $(BUILD)/html/ko/index.html

# After an English edit: extract the English (Sphinx's gettext builder), merge it into the catalogs
# (sphinx-intl; a changed sentence comes back fuzzy) and list what needs a translator.
translations: $(STAMP)
	$(BIN)/python -m coursekit.i18n update --language ko

# make test records how long each of its steps took (make bench reports them).
STEP_TIMES := $(BUILD)/test_steps.json
TIMED := $(BIN)/python -m coursekit.steps --log $(STEP_TIMES) --

# Lint the package, tests, notebooks and Sphinx extensions; the course map and the diagrams must match
# their sources (book/course_map.md from the chapters' metadata, book/diagrams/*.svg from coursekit.diagrams),
# and every page marked translated (book/translations.yml) must have its Korean for every English message.
lint: $(STAMP)
	$(BIN)/ruff check code tests chapters book/_ext
	$(BIN)/python -m coursekit.coursemap --check
	$(BIN)/python -m coursekit.diagrams --check
	$(BIN)/python -m coursekit.i18n check --language ko

# The unit and property tests of the package and the book's tooling (the browser tests come last).
# Spread over both cores (pytest-xdist); a claim that does not hold fails them (COURSE_STRICT_CLAIMS=1).
unit: $(STAMP)
	COURSE_STRICT_CLAIMS=1 $(BIN)/pytest -n 2 tests --ignore-glob='tests/test_browser*.py'

# nbval compares every untagged cell exactly. Cells whose output depends on training carry the tag
# nbval-ignore-output and check the chapter's claims in code (attention_course.claims.expect), which in
# strict mode (COURSE_STRICT_CLAIMS=1) fail the test when a claim does not hold.
NBVAL := COURSE_STRICT_CLAIMS=1 $(BIN)/pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg chapters

nbval: $(STAMP)
	$(NBVAL)

# The robustness pass: the same notebooks on a second numeric code path (ATen's portable kernels, MKL's
# compatible branch: training ends with other last bits, as on a CPU of another vendor) and with every
# training seed moved by one (COURSE_SEED_SHIFT=1). Every claim must hold; every cell whose output depends
# on neither is compared exactly (cells tagged nbval-seed-dependent are compared only at the course's seeds).
nbval-robust: $(STAMP)
	ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE COURSE_SEED_SHIFT=1 $(NBVAL)

# Both passes side by side, one core each (every kernel runs on one thread).
notebooks: $(STAMP)
	$(MAKE) --no-print-directory -j2 --output-sync=target nbval nbval-robust

# The claims once more at seed shift 2 on the default path (outputs not compared); not part of make test.
nbval-shift2: $(STAMP)
	COURSE_SEED_SHIFT=2 COURSE_STRICT_CLAIMS=1 $(BIN)/pytest --nbval-lax --nbval-current-env chapters

# Serve the built site, the slides and JupyterLab on 127.0.0.1 and read them in headless Chromium with
# every other network access blocked: maths typeset, images and diagrams loaded, links resolve, nothing
# clipped, no answer readable before its solution is opened, no console error; screenshots in _build/.
browser: $(STAMP)
	$(BIN)/pytest $(wildcard tests/test_browser*.py)

# Check that the lock resolves, wheels only, for every Python version and platform book/platforms.md
# lists (uv's resolver, metadata only, nothing installed). It runs only when the lock changed since the
# last check that passed on this machine, and without a network it says so and is skipped.
PLATFORMS_CHECKED := ~/.cache/attention-course/platforms
platforms: $(STAMP)
	$(BIN)/python -m coursekit.platforms --check --unless-checked $(PLATFORMS_CHECKED)

# Each step runs only if the one before it passed; make stops at the first failure.
test: $(STAMP)
	@mkdir -p $(BUILD) && rm -f $(STEP_TIMES)
	$(TIMED) $(MAKE) --no-print-directory lint
	$(TIMED) $(MAKE) --no-print-directory unit
	$(TIMED) $(MAKE) --no-print-directory platforms
	$(TIMED) $(MAKE) --no-print-directory notebooks
	$(TIMED) $(MAKE) --no-print-directory build-book
	$(TIMED) $(MAKE) --no-print-directory browser

execute: $(STAMP)
	export COURSE_STRICT_CLAIMS=1; unset COURSE_SEED_SHIFT; for nb in chapters/*.ipynb; do \
	  echo "executing $$nb"; \
	  $(BIN)/jupyter-execute --inplace --timeout=600 --kernel_name=python3 "$$nb"; \
	done

bench: $(STAMP)
	mkdir -p $(BUILD)
	COURSE_STRICT_CLAIMS=1 $(BIN)/python tests/bench.py

# The Korean student edition comes from the Korean lessons (the tree coursekit.i18n makes in _build/ko).
student: $(STAMP)
	$(BIN)/python -m coursekit.student --chapters chapters --out $(BUILD)/student
	$(BIN)/python -m coursekit.i18n build --language ko --out $(KO)
	$(BIN)/python -m coursekit.student --chapters $(KO)/chapters --out $(BUILD)/student/ko

# The Korean decks come from the Korean lessons (the tree coursekit.i18n makes in _build/ko).
slides: $(STAMP)
	$(BIN)/python -m coursekit.slides --chapters chapters --out $(BUILD)/slides
	$(BIN)/python -m coursekit.i18n build --language ko --out $(KO)
	$(BIN)/python -m coursekit.slides --chapters $(KO)/chapters --out $(BUILD)/slides/ko

coursemap: $(STAMP)
	$(BIN)/python -m coursekit.coursemap --chapters chapters --out book/course_map.md

diagrams: $(STAMP)
	$(BIN)/python -m coursekit.diagrams

# JupyterLab from the pinned environment, on this machine only and offline (no news feed, no
# extension downloads); LAB_FLAGS adds options (for example LAB_FLAGS="--no-browser --ServerApp.port=8899").
LAB_FLAGS ?=
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_OVERRIDES): $(STAMP)
	mkdir -p $(dir $@)
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $@

# A student's run: a claim that does not hold is shown in a box and the notebook goes on (not strict).
lab: $(STAMP) $(LAB_OVERRIDES)
	COURSE_STRICT_CLAIMS=0 $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(CURDIR) \
	  --LabApp.default_url=/lab/tree/chapters --LabApp.news_url=None --LabApp.extension_manager=readonly \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_FLAGS)

# The Korean notebooks: made from the catalogs (markdown translated, code cells the English ones byte for
# byte, outputs copied) into $(KO)/chapters, opened in JupyterLab; claims a run checks are shown in Korean,
# and Hangul comes from the course's font (a custom stylesheet in the Korean tree's Jupyter configuration).
lab-ko: $(STAMP) $(LAB_OVERRIDES)
	$(BIN)/python -m coursekit.i18n build --language ko --out $(KO)
	COURSE_STRICT_CLAIMS=0 COURSE_CLAIMS_CATALOG=$(CURDIR)/$(KO)/claims.mo JUPYTER_CONFIG_DIR=$(CURDIR)/$(KO)/.jupyter \
	  $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(CURDIR)/$(KO) --LabApp.custom_css=True \
	  --LabApp.default_url=/lab/tree/chapters --LabApp.news_url=None --LabApp.extension_manager=readonly \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_FLAGS)

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(VENV)
