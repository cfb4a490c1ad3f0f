VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The compiled codec's extensions, rebuilt when the generated C or its runtime changes.
COMPILED := $(VENV)/.compiled

.PHONY: test test-deep asan demo lint generate check bench bench-capture bench-realkafka clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,captures]'
	touch $(STAMP) $(COMPILED)

$(COMPILED): $(STAMP) setup.py $(wildcard codec/_compiled/*.h codec/_compiled/*.c captures/*/*.[ch])
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(COMPILED)

test: $(STAMP) $(COMPILED)
	$(PY) -m kipwire.generator check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q

# The deep search: 5,000 fault schedules on the mock cluster and 5,000 controller invariant runs
# (KIPWIRE_EXAMPLES), with a fresh Hypothesis seed printed first so a failure can be replayed
# with --hypothesis-seed; then the mock cluster at 10,000 partitions (KIPWIRE_SCALE_PARTITIONS);
# then 100 MB through a topic with retention.bytes=1 MB under 200 MB of RSS (KIPWIRE_RSS_MB);
# then 1,000,000 mutated frames through the compiled decoders and record loops
# (KIPWIRE_FUZZ_FRAMES) and 5,000 mutated copies of each test capture through the compiled packet
# walker and the Python readers (KIPWIRE_FUZZ_CAPTURES); then the capture job on Spark's own
# daemons, a standalone cluster and a Connect server (KIPWIRE_SPARK_CLUSTER); 30 drawn values per message version through the round
# trip and Kafka 4.4's codec; and every tool of the tool matrix, the slow ones included
# (KIPWIRE_TOOL_MATRIX).
test-deep: $(STAMP) $(COMPILED)
	@seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); \
	echo "test-deep: 5000 schedules, hypothesis seed $$seed"; \
	KIPWIRE_EXAMPLES=5000 $(PY) -m pytest -q -p no:cacheprovider --hypothesis-seed=$$seed \
		tests/mockbroker/test_stateful_cluster.py tests/mockbroker/controller/test_invariants.py
	KIPWIRE_SCALE_PARTITIONS=10000 $(PY) -m pytest -q -p no:cacheprovider tests/mockbroker/test_scale.py
	KIPWIRE_RSS_MB=100 $(PY) -m pytest -q -p no:cacheprovider \
		tests/mockbroker/broker/test_log_cleaner.py -k bounds_a_serving_broker_memory
	KIPWIRE_FUZZ_FRAMES=1000000 $(PY) -m pytest -q -p no:cacheprovider tests/codec/test_compiled.py \
		tests/codec/records/test_records_compiled.py
	KIPWIRE_FUZZ_CAPTURES=5000 $(PY) -m pytest -q -p no:cacheprovider \
		tests/captures/reading/test_capture_walk.py
	KIPWIRE_SPARK_CLUSTER=1 $(PY) -m pytest -q -p no:cacheprovider \
		tests/captures/engines/test_capture_spark_cluster.py
	KIPWIRE_EXAMPLES=30 $(PY) -m pytest -q -p no:cacheprovider tests/codec/test_roundtrip.py \
		tests/codec/test_kafka44_conformance.py
	KIPWIRE_TOOL_MATRIX=full $(PY) -m pytest -q -p no:cacheprovider tests/realkafka/test_tool_matrix.py

# The compiled decoders, record loops, capture bodies' JSON writer and packet walker built with
# AddressSanitizer, run on the mutated-frame, mutated-batch, mutated-blob and mutated-capture fuzz
# and the value comparisons; then built again without it.
asan: $(STAMP)
	KIPWIRE_ASAN=1 $(PY) -m pip install --quiet --no-deps -e .
	ldd codec/_compiled/shard_0.*.so | grep -q libasan
	ldd codec/_compiled/records.*.so | grep -q libasan
	ldd codec/_compiled/jsontext.*.so | grep -q libasan
	ldd captures/reading/compiled.*.so | grep -q libasan
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 \
		KIPWIRE_FUZZ_FRAMES=$${KIPWIRE_FUZZ_FRAMES:-100000} \
		KIPWIRE_FUZZ_CAPTURES=$${KIPWIRE_FUZZ_CAPTURES:-2000} \
		$(PY) -m pytest -q -p no:cacheprovider tests/codec/test_compiled.py \
		tests/codec/records/test_records_compiled.py \
		tests/captures/decoding/test_capture_bodies_compiled.py tests/captures/reading/test_capture_walk.py \
		tests/captures/decoding/test_capture_frames_compiled.py tests/captures/decoding/test_capture_rows_compiled.py \
		tests/captures/engines/test_capture_columns.py \
		tests/captures/reading/test_capture_reassembly_compiled.py \
		tests/captures/decoding/test_capture_framing_compiled.py \
		tests/captures/engines/test_capture_fragments_compiled.py; \
		status=$$?; $(PY) -m pip install --quiet --no-deps -e . && touch $(COMPILED); exit $$status

demo: $(STAMP)
	$(PY) -m kipwire.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

generate: $(STAMP)
	$(PY) -m kipwire.generator build

check: $(STAMP)
	$(PY) -m kipwire.generator check

bench: $(STAMP) $(COMPILED)
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
