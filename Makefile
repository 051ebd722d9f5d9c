# One command to set up and run, one to set up and test. Everything installs from PyPI / Maven Central.
#   make run     the runtime only (serve and the CLI: no dev tools, no PySpark, no Maven), then the demo serve
#   make broker  a real Kafka broker whose authorizer is the plugin, asking the `make run` serve
#   make test    the dev tools, PySpark, the plugin and the Kafka and Spark jars, then lint, types, every test
PY ?= python3
comma := ,
VENV := .venv
BIN := $(VENV)/bin
# uv (from PyPI, into .venv by its pip) installs the packages: it downloads in parallel and skips compiling every
# .pyc up front, which halves the install of a first `make run` against pip's on a busy 2-core machine
# (BENCHMARKS.md, "The first hour"). pip stays in .venv for the user.
UV := $(BIN)/uv
# Two stamps: the runtime install (`make run`) and the full one (`make setup`, `make test`); the full one builds
# on the runtime one, so a `make run` after `make test` installs nothing.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
# what a step prints first: `kraft-acl: <what>`, so a user sees what the minutes go to
say = @echo "kraft-acl: $(1)"
# the installers' own output (and the build backend's warnings) go to a log, shown only when the step fails
INSTALL_LOG := $(VENV)/install.log
quietly = $(1) >$(INSTALL_LOG) 2>&1 || { cat $(INSTALL_LOG); exit 1; }
uv_install = $(call quietly,$(UV) pip install --python $(BIN)/python $(1))

.PHONY: setup run demo test lint typecheck unit kafka-jars kafka-tools plugin spark-jars broker broker-stop clean

$(UV):
	$(call say,creating $(VENV) (Python virtual environment, $(shell $(PY) --version 2>&1)) and installing uv into it)
	@$(PY) -m venv $(VENV)
	@$(call quietly,$(BIN)/pip --disable-pip-version-check install --quiet uv)

# Every module is compiled to bytecode once at install (uv skips it, pip would do it). Where PYTHONDONTWRITEBYTECODE
# is set (as on the machines this project is built on), each Python process would otherwise compile all it imports
# again: serve, what it imports late on its event loop (stalls of 21-52 ms seen as it started); the suite, in each of
# the hundreds of processes it starts (tests/cli: 51 s, 34 s compiled). About 1 s for the runtime. The folders
# kraftacl/ links to are named (compileall does not follow links); a file that does not compile fails at its import,
# as without this.
PROJECT_DIRS := kraftacl metadata_log authorizer snapshots shell schemas server pipeline
bytecode = @$(BIN)/python -m compileall -q -j 0 $(VENV)/lib $(PROJECT_DIRS) $(1) >/dev/null 2>&1 || true

# rows.py and bulk_rows.py are compiled by setup.py (mypyc, about 10 s): an edit to either rebuilds the extension.
$(RUN_STAMP): $(UV) pyproject.toml setup.py metadata_log/codec/rows.py authorizer/index/bulk_rows.py
	$(call say,installing kraft-acl and its runtime dependencies from PyPI and compiling its two hot loops with mypyc)
	@$(call uv_install,-e .)
	$(call bytecode)
	@touch $@

$(DEV_STAMP): $(RUN_STAMP)
	$(call say,installing the dev tools (pytest ruff mypy ...) and PySpark (the audit jobs) from PyPI)
	@$(call uv_install,-e '.[dev$(comma)spark]')
	$(call bytecode,tests)
	@touch $@

## setup: everything `make test` needs: the full .venv, the plugin jar and the Spark Kafka connector jars
setup: $(DEV_STAMP) plugin
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

## run: the runtime install, then the main job: `kraft-acl serve` on the embedded log with the demo config and ACLs
DEMO_LOG := data/serve-demo
DEMO_CONFIG := examples/serve/server.properties
# the demo's bearer tokens (DEMO_CONFIG's auth.token.file): git keeps no mode 600, so a fresh clone has them 644 and
# serve would warn that others can read them (a warning kept for real token files); run makes them the owner's first
DEMO_TOKENS := examples/serve/tokens
# the demo's CLIENT listener, for the hints make run prints (the port is written once, in DEMO_CONFIG)
DEMO_URL = http://$(shell sed -n 's|^listeners=.*CLIENT://\([^,]*\).*|\1|p' $(DEMO_CONFIG))
run: $(RUN_STAMP)
	@chmod 600 $(DEMO_TOKENS)
	$(call say,loading the demo ACLs of examples/serve/acls.json into $(DEMO_LOG))
	@$(BIN)/kraft-acl import --from-json examples/serve/acls.json --log-dir $(DEMO_LOG)
	@$(BIN)/kraft-acl serve --config $(DEMO_CONFIG) --check-config -o table
	$(call say,starting serve in the foreground (Ctrl-C stops it). In another terminal:)
	@echo "  source .venv/bin/activate"
	@echo "  kraft-acl acls --server $(DEMO_URL) --token-file examples/serve/admin.token --list"
	@echo "  make broker    # a Kafka broker whose authorizer is this serve (README: '3. A Kafka broker authorized by serve')"
	@exec $(BIN)/kraft-acl serve --config $(DEMO_CONFIG)

## broker: a real Kafka broker (the release of scripts/kafka/pom.xml) in the background, its authorizer the plugin
## asking the `make run` serve; prints BOOTSTRAP=host:port and the client property files. broker-stop stops it.
BROKER_PORT ?= 9092
broker: $(RUN_STAMP) plugin kafka-tools
	@$(BIN)/python -m kraftacl.harness.demo_broker start --port $(BROKER_PORT) --serve-config $(DEMO_CONFIG) \
	  --plugin-jar $(PLUGIN_JAR) data/broker

broker-stop: $(RUN_STAMP)
	@$(BIN)/python -m kraftacl.harness.demo_broker stop data/broker

## demo: the what-if demo (decisions without a running service)
demo: $(RUN_STAMP)
	$(BIN)/kraft-acl authorize --acls examples/demo/acls.json --requests examples/demo/requests.jsonl \
	  --config examples/demo/server.properties --explain --output table

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check metadata_log authorizer snapshots shell server kraftacl pipeline schemas
	$(BIN)/lint-imports

# mypy --strict (pyproject.toml [tool.mypy]) on the package and the tests: packages named here replace the config's
# `packages`, so kraftacl is named again
typecheck: $(DEV_STAMP)
	$(BIN)/mypy -p kraftacl -p tests

## kafka-jars: fetch the Apache Kafka broker jars of every supported release from Maven Central (kafka-marked tests)
kafka-jars:
	bash scripts/kafka-broker.sh fetch --all

## kafka-tools: Kafka's own command-line tools (kafka-acls, kafka-topics, console producer and consumer) from Maven
## Central, run by the wrappers in scripts/kafka/bin/
kafka-tools:
	@bash scripts/kafka-tools.sh fetch

## spark-jars: fetch Spark's Kafka connector (at pyspark's version) from Maven Central into .spark/jars
spark-jars:
	bash scripts/spark-jars.sh fetch

## test: set up, lint, type-check, then run every test (Kafka tests included: the broker jars come from
## Maven Central; in CI they are fetched first so the download never counts against a test's timeout)
test: setup lint typecheck
	@if [ "$$CI" = "true" ] || command -v mvn >/dev/null 2>&1; then \
	  bash scripts/kafka-broker.sh fetch --all && bash scripts/kafka-tools.sh fetch; fi
	$(BIN)/pytest -q

clean:
	rm -rf kafka-plugin/target
	rm -rf $(VENV) .spark .mypy_cache .pytest_cache .ruff_cache build *.egg-info metadata_log/codec/_rows_native* authorizer/index/_bulk_rows_native* *.so
