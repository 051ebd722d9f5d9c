# One command to set up and run, one to set up and test. Everything installs from PyPI / Maven Central.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run demo test lint typecheck unit kafka-jars plugin spark-jars clean

# codec_rows.py and bulk_rows.py are compiled by setup.py (mypyc): an edit to either rebuilds the extension.
$(STAMP): pyproject.toml setup.py metadata_log/codec/rows.py authorizer/index/bulk_rows.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

setup: $(STAMP) plugin
	@if command -v mvn >/dev/null 2>&1; then bash scripts/spark-jars.sh fetch; fi

## plugin: the Kafka broker plugin jar (kafka-plugin/, Maven; its JUnit tests run in the build). Without
## mvn it is skipped with a note, except in CI.
PLUGIN_JAR := kafka-plugin/target/kraft-acl-kafka-plugin-0.1.0.jar
PLUGIN_SOURCES := kafka-plugin/pom.xml $(shell find kafka-plugin/src -name '*.java' 2>/dev/null)
plugin:
	@if command -v mvn >/dev/null 2>&1; then \
	  $(MAKE) -s --no-print-directory $(PLUGIN_JAR) && echo "kraft-acl: Kafka broker plugin: $(PLUGIN_JAR)"; \
	elif [ "$$CI" = "true" ]; then echo "kraft-acl: mvn is needed to build kafka-plugin/" >&2; exit 1; \
	else echo "kraft-acl: no mvn on PATH: the Kafka broker plugin (kafka-plugin/) is not built" >&2; fi

$(PLUGIN_JAR): $(PLUGIN_SOURCES)
	@mkdir -p kafka-plugin/target
	@echo "kraft-acl: building the Kafka broker plugin (mvn package, with its unit tests)"
	@mvn -B -q -f kafka-plugin/pom.xml package >kafka-plugin/target/build.log 2>&1 \
	  || { cat kafka-plugin/target/build.log; exit 1; }
	@touch $@ kafka-plugin/target/test-classes

## run: set up, then run the main job: `kraft-acl serve` on the embedded log with a demo config and demo ACLs
DEMO_LOG := data/serve-demo
run: setup
	@$(BIN)/kraft-acl import --from-json examples/serve/acls.json --log-dir $(DEMO_LOG)
	@echo "Demo ACLs are in $(DEMO_LOG). Try, once serve says ready:"
	@echo "  curl -s -H 'Authorization: Bearer broker-demo-token-0123456789' http://127.0.0.1:9191/v1/authorize \\"
	@echo "    -d '{\"principal\":\"User:alice\",\"client_address\":\"10.0.0.1\",\"explain\":true,\"actions\":[{\"operation\":\"READ\",\"resource_type\":\"TOPIC\",\"resource_name\":\"orders-eu\"}]}'"
	@echo "  curl -s http://127.0.0.1:9191/v1/status"
	$(BIN)/kraft-acl serve --config examples/serve/server.properties

## demo: the what-if demo (decisions without a running service)
demo: setup
	$(BIN)/kraft-acl authorize --acls examples/demo/acls.json --requests examples/demo/requests.jsonl \
	  --config examples/demo/server.properties --explain --output table

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check metadata_log authorizer snapshots shell server kraftacl pipeline schemas
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy

## kafka-jars: fetch the Apache Kafka broker jars of every supported release from Maven Central (kafka-marked tests)
kafka-jars:
	bash scripts/kafka-broker.sh fetch --all

## spark-jars: fetch Spark's Kafka connector (at pyspark's version) from Maven Central into .spark/jars
spark-jars:
	bash scripts/spark-jars.sh fetch

## test: set up, lint, type-check, then run every test (Kafka tests included: the broker jars come from
## Maven Central; in CI they are fetched first so the download never counts against a test's timeout)
test: setup lint typecheck
	@if [ "$$CI" = "true" ] || command -v mvn >/dev/null 2>&1; then bash scripts/kafka-broker.sh fetch --all; fi
	$(BIN)/pytest -q

clean:
	rm -rf kafka-plugin/target
	rm -rf $(VENV) .spark .mypy_cache .pytest_cache .ruff_cache build *.egg-info metadata_log/codec/_rows_native* authorizer/index/_bulk_rows_native* *.so
