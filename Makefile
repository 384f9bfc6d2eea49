# The README's commands. Each installs what is missing first.
#   make serve   - build and run `sqlbus serve --demo` on sqlite:./sqlbus.db:
#                  the dashboard at http://127.0.0.1:8080/ with a built-in
#                  workload filling it, until Ctrl-C
#   make run     - build and run a short end-to-end CLI demo on
#                  sqlite:./sqlbus.db
#   make check   - build and run the whole test suite (SQLite and PostgreSQL)
# Others: build, check-asan, check-tsan, check-mssql (SQLBUS_TEST_MSSQL),
# format, install (PREFIX=/usr/local), bench, clean.

PREFIX ?= /usr/local
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps test-deps build serve run check check-asan check-tsan check-mssql format install bench clean

all: build

# What building needs; the tests' own (PostgreSQL, chromium, ...) come
# with `check`.
deps:
	@bash scripts/install-deps.sh --build

test-deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

serve: build
	$(BUILD)/sqlbus --db sqlite:./sqlbus.db serve --demo

run: build
	@bash scripts/demo.sh $(BUILD)/sqlbus

check: test-deps build
	@bash tests/run-check $(BUILD)

check-asan:
	@$(MAKE) --no-print-directory check BUILD=build-asan BUILD_TYPE=Debug \
	    CMAKE_FLAGS="-DSB_SANITIZE=ON -DSB_WERROR=ON"

# ThreadSanitizer over the tests whose threads share state: the worker,
# the channel, the server's loops, sampler, metrics and HTTP threads.
TSAN_TESTS = test_worker|test_channel|test_bus_metrics|test_counts_table|test_statement_timeout|test_recovery|api_cases|cli_serve$$|serve_counts
check-tsan:
	@SB_TEST_REGEX='$(TSAN_TESTS)' \
	    TSAN_OPTIONS='halt_on_error=1 suppressions=$(CURDIR)/tests/tsan-odbc.supp' \
	    $(MAKE) --no-print-directory check \
	    BUILD=build-tsan BUILD_TYPE=Debug CMAKE_FLAGS="-DSB_TSAN=ON -DSB_WERROR=ON"

# The SQL Server suite against the server SQLBUS_TEST_MSSQL names (an
# mssql:// or odbc: URL); without one it says so and runs nothing.
check-mssql: test-deps build
	@if [ -z "$${SQLBUS_TEST_MSSQL:-}" ]; then \
	    echo "check-mssql: skipped: no SQL Server configured (set SQLBUS_TEST_MSSQL)"; \
	else \
	    cd $(BUILD) && ctest --output-on-failure -L mssql; \
	fi

# Lay out every C file with the committed .clang-format (style rule 21;
# tests/once/format.sh checks it).
format:
	@find src include tests bench examples -name '*.[ch]' \
	    -not -path '*/node_modules/*' -print0 | xargs -0 clang-format -i

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	@bash scripts/install-deps.sh --bench
	@bash bench/run all

clean:
	rm -rf build build-asan build-tsan
