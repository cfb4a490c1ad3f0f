VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo lint generate check bench bench-capture bench-realkafka clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,captures]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m kipwire.generator check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q

demo: $(STAMP)
	$(PY) -m kipwire.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

generate: $(STAMP)
	$(PY) -m kipwire.generator build

check: $(STAMP)
	$(PY) -m kipwire.generator check

bench: $(STAMP)
	$(PY) benchmarks/codec_bench.py
	$(PY) benchmarks/records_bench.py
	$(PY) benchmarks/controller_bench.py
	$(PY) benchmarks/mock_bench.py

bench-capture: $(STAMP)
	$(PY) benchmarks/capture_bench.py

bench-realkafka: $(STAMP)
	$(PY) benchmarks/realkafka_bench.py

clean:
	rm -rf $(VENV)
