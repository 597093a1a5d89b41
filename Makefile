# One place for setup. The portable llama.cpp flags matter: a native build (GGML_NATIVE=ON, the
# default) enables the AMX matmul path, which segfaults at the first generation on these Xeons.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: setup setup-test audit test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip wheel

setup: $(PY)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e .

setup-test: $(PY)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e ".[test]"

audit: setup
	$(PY) -m audit

# pytest exits 5 when it collects no test; that is not a failure of the suite.
test: setup-test
	$(PY) -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc
