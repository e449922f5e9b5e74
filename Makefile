# `make demo`: set up everything and render every seed sample into build/demo/.
# `make test`: set up everything and run the whole test suite (CI runs this).
# `make docs`: build the documentation into build/docs/html (CI: with -W).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
IRVIZ := $(VENV)/bin/irviz
DEMO := build/demo

.PHONY: setup graphviz demo test docs rule-docs bad-input-doc clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip
	# the CPU build of torch; a bare `torch` would pull a multi-GB CUDA build
	$(PY) -m pip install -qq torch==2.13.0
	$(PY) -m pip install -qq -e '.[test]'
	touch $@

# irviz draws with graphviz-pure, which pip installs with it: rendering needs nothing from
# apt. Debian's Graphviz is installed (when we are root and apt works) only so that the
# tests can check `--engine dot` against it; without it those tests skip, nothing fails.
graphviz:
	@if command -v dot >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (apt-get update -qq && apt-get install -y -qq graphviz librsvg2-bin >/dev/null) \
	  || echo "apt-get failed: the tests of --engine dot will be skipped"; \
	else echo "no dot binary and not root: the tests of --engine dot will be skipped"; fi

setup: $(VENV)/.installed graphviz

demo: setup
	rm -rf $(DEMO)
	mkdir -p $(DEMO)/script $(DEMO)/trace $(DEMO)/archive
	$(IRVIZ) render samples/my_cell.py -o $(DEMO)/script/
	$(IRVIZ) render samples/decision_gate.py -o $(DEMO)/script/
	$(IRVIZ) render samples/rnn_loop.py -o $(DEMO)/script/
	$(IRVIZ) render samples/fork_basics.py -o $(DEMO)/script/
	$(IRVIZ) render samples/lstm_ensemble.py -o $(DEMO)/script/
	$(IRVIZ) render samples/my_cell.py --mode trace -o $(DEMO)/trace/
	$(IRVIZ) render samples/decision_gate.py --mode trace -o $(DEMO)/trace/
	$(IRVIZ) render samples/rnn_loop.py --mode trace -o $(DEMO)/trace/
	$(IRVIZ) render samples/fork_basics.py --mode trace -o $(DEMO)/trace/
	$(IRVIZ) render samples/lstm_ensemble.py --mode trace -o $(DEMO)/trace/
	$(PY) samples/make_archive.py $(DEMO)/archive/wrapped_rnn.pt
	$(IRVIZ) render $(DEMO)/archive/wrapped_rnn.pt -o $(DEMO)/archive/wrapped_rnn.svg
	$(IRVIZ) render $(DEMO)/archive/wrapped_rnn.pt --inputs "torch.rand(10, 3, 4)" -o $(DEMO)/archive/wrapped_rnn.shapes.svg
	$(IRVIZ) render samples/rnn_loop.py:WrapRNN --format json -o $(DEMO)/WrapRNN.json
	$(IRVIZ) render samples/decision_gate.py:MyCell --mode trace --lint -o $(DEMO)/trace/decision_gate.MyCell.lint.svg
	$(IRVIZ) report samples/lstm_ensemble.py -o $(DEMO)/parallelism.md
	$(IRVIZ) report samples/lstm_ensemble.py:LSTMEnsemble --format html -o $(DEMO)/parallelism.html
	$(IRVIZ) lint samples/ --exit-zero -o $(DEMO)/lint.txt
	$(IRVIZ) lint samples/ --exit-zero --format sarif -o $(DEMO)/lint.sarif
	$(IRVIZ) trace samples/decision_gate.py:MyCell -o $(DEMO)/archive/MyCell.pt
	$(IRVIZ) trace samples/rnn_loop.py:MyRNNLoop -o $(DEMO)/archive/MyRNNLoop.pt
	@echo "demo pictures are in $(DEMO)/"

test: setup
	$(PY) -m pytest -q

# irviz's documentation into build/docs/html (models drawn by irviz.sphinxext, cached in
# build/docs/_irviz_cache); SPHINXOPTS=-W makes warnings errors (CI)
SPHINXOPTS ?=
$(VENV)/.docs-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[docs]'
	touch $@

docs: setup $(VENV)/.docs-installed
	$(PY) -m sphinx -b html -q $(SPHINXOPTS) docs build/docs/html
	@echo "docs are in build/docs/html/index.html"

# docs/rules/*.rst from the rule classes' docstrings (a test checks they are current)
rule-docs: setup
	$(PY) -c "from irviz.lint import rules; from irviz.lint.registry import write_rule_docs; write_rule_docs('docs/rules')"

# docs/bad-input.md: the bad-input table with the messages irviz prints (a test checks it)
bad-input-doc: setup
	$(PY) tests/bad_inputs.py

clean:
	rm -rf build $(VENV)

# `make bench`: irviz next to torchview, TensorBoard, torchviz and the bare jit, plus the
# scaling benchmark (~10 min on 2 CPUs); tables go into benchmarks/RESULTS.md.
# The anchor tools are benchmark-only dependencies, not runtime or test ones.
.PHONY: bench bench-deps
bench-deps: setup
	$(PY) -m pip install -q torchview==0.2.7 torchviz==0.0.3 tensorboard==2.21.0

bench: bench-deps
	$(PY) benchmarks/harness.py
	$(PY) benchmarks/scaling.py

# `make corpus`: every torchvision model drawn scripted and traced and checked (shapes
# against forward hooks, warning files, quantized sizes, stage order; ~45 min on 2 CPUs);
# summary in benchmarks/RESULTS-corpus.md. torchvision goes into build/corpus-site, not the
# venv: the wheel this index serves is a CUDA build that imports only beside stand-ins for
# its two CUDA libraries (TORCHVISION_CPU builds them), and a torchvision that cannot import
# breaks transformers in the test suite.
TORCHVISION_CPU ?= ../shared/tools/torchvision-cpu/build.sh
.PHONY: corpus
corpus: setup
	$(PY) -m pip install -q --no-deps --target build/corpus-site torchvision==0.28.0 pillow
	eval "$$($(TORCHVISION_CPU) build/cudastub)" && \
	  PYTHONPATH=build/corpus-site $(PY) benchmarks/torchvision_corpus.py $(CORPUS_ARGS)

# `make lint-corpus`: `irviz lint` on the transformers corpus, the detection-style model and a
# torchvision subset (benchmarks/torchvision_lint_models.py): findings per model (errors and
# warnings, info, counterexamples, certainties) and the wall time per corpus. torchvision is
# set up as for `corpus`; LINT_CORPUS_ARGS passes options, e.g. `--label after --markdown`.
.PHONY: lint-corpus
lint-corpus: setup
	$(PY) -m pip install -q --no-deps --target build/corpus-site torchvision==0.28.0 pillow
	eval "$$($(TORCHVISION_CPU) build/cudastub)" && \
	  $(PY) benchmarks/lint_corpus.py $(LINT_CORPUS_ARGS)
