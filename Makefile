# Queen - a message broker whose state lives in PostgreSQL.
# Non-recursive: `make` builds build/queen; `make run` starts it; `make test`
# runs every test. See README.md.

CC       ?= cc
PKGS     := libzmq msgpack libsodium openssl libcurl
LLHTTP   := /usr/share/llhttp
CFLAGS_COMMON := -std=c11 -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread \
                 -I. -I/usr/share/include/llhttp -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
CFLAGS   ?= -O2
LDLIBS   := -lpq -lzmq -lmsgpackc -lsodium -lssl -lcrypto -lcurl -lm -pthread \
            -lz -lsnappy -llz4 -lzstd

BUILD    ?= build
NPROC    := $(shell nproc 2>/dev/null || echo 2)
ASAN_FLAGS := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined

BASE_SRC   := $(sort $(wildcard base/*.c))
WIRE_SRC   := $(sort $(wildcard wire/*.c))
KERNEL_SRC := $(sort $(wildcard kernel/*.c))
ACTOR_SRC  := $(sort $(wildcard actors/*.c actors/*/*.c))
SCHEMA_SQL := schema/bootstrap.sql $(sort $(wildcard schema/migrations/*.sql)) $(sort $(wildcard schema/functions/*.sql))
LIB_SRC    := $(BASE_SRC) $(WIRE_SRC) $(KERNEL_SRC) $(ACTOR_SRC)
DASHBOARD  := $(sort $(wildcard dashboard/*.html dashboard/*.js dashboard/*.css))
LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/schema_sql.o $(BUILD)/obj/dashboard_files.o \
              $(BUILD)/obj/llhttp/llhttp.o $(BUILD)/obj/llhttp/api.o $(BUILD)/obj/llhttp/http.o
UNIT_SRC   := $(sort $(wildcard test/unit/test_*.c))
UNIT_BIN   := $(UNIT_SRC:test/unit/%.c=$(BUILD)/test/%)
SUPPORT_SRC := $(filter-out test/support/fake_kernel.c,$(sort $(wildcard test/support/*.c)))
SUPPORT_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)
# Unit tests that include test/support/fake_kernel.h link it in place of the
# kernel runtime (every kernel/ object but config, envelope and schema) and
# of the clocks (base/clock.o: the fake's clock is manual).
FAKE_UNIT_SRC := $(shell grep -l '"test/support/fake_kernel.h"' $(UNIT_SRC) /dev/null)
FAKE_UNIT_BIN := $(FAKE_UNIT_SRC:test/unit/%.c=$(BUILD)/test/%)
KERNEL_RUNTIME_OBJ := $(filter-out %/config.o %/envelope.o %/schema.o %/errors.o,$(KERNEL_SRC:%.c=$(BUILD)/obj/%.o)) \
                      $(BUILD)/obj/base/clock.o
CMD_BINS   := $(BUILD)/queen $(if $(wildcard cmd/queen-verify/main.c),$(BUILD)/queen-verify) \
              $(BUILD)/queen-proxy $(BUILD)/queen-sink
# libqueen (issue 18, opscli): the C client library, queenctl on it, and the
# C test programs test/integration/libqueen.test.mjs runs against a broker.
CLIENT_SRC := $(sort $(wildcard client/*.c)) base/buf.c wire/json_parse.c wire/json_write.c
CLIENT_LIBS := -lcurl -lm -pthread
CLIENT_TEST_BINS := $(patsubst test/client/%.c,$(BUILD)/test-client/%,$(sort $(wildcard test/client/test_*.c)))
CMD_BINS   += $(BUILD)/libqueen-client.a $(BUILD)/libqueen-client.so $(CLIENT_TEST_BINS) \
              $(BUILD)/test-client/test_libqueen_so \
              $(if $(wildcard cmd/queenctl/main.c),$(BUILD)/queenctl)

# A build needs what `make deps` installs. Say so in one line instead of a
# make error deep in the tree. `run`, `test`, `bench`, `fuzz` and
# `compose-test` install first, then build in a make of their own, which
# reads the directories only after the install (the first `make run` on a
# fresh machine).
NEEDS_DEPS := $(if $(wildcard $(LLHTTP)/llhttp.c),,node-llhttp) \
              $(if $(wildcard /usr/include/zmq.h),,libzmq3-dev) \
              $(if $(wildcard dashboard/node_modules/uplot/dist/uPlot.iife.min.js),,uplot)
BUILD_GOALS := $(filter-out deps deps-test run test test-unit fresh-test compose-test bench fuzz clean help,$(or $(MAKECMDGOALS),all))
ifneq ($(and $(strip $(NEEDS_DEPS)),$(BUILD_GOALS)),)
$(error missing $(strip $(NEEDS_DEPS)): run `make deps` first (or `make run`, which installs what is missing))
endif

.PHONY: all deps deps-test run test test-unit fresh-test integration-lanes unit integration integration-asan asan check-asan bench clean help fuzz compose-test
.DEFAULT_GOAL := all
.SECONDARY:

all: $(CMD_BINS) $(BUILD)/test/sink-files $(BUILD)/test/s3-tool

help:
	@echo "make           build build/queen"
	@echo "make deps      install what building and running needs (make deps-test: what the tests need too)"
	@echo "make run       install what is missing, build, start the broker on :6632"
	@echo "make test      install, build, run unit + integration tests (also under ASan/UBSan)"
	@echo "make bench     benchmarks (see docs/benchmarks.md)"
	@echo "make compose-test  the cell of compose.yaml in containers (see docs/deploy.md)"

# ---------------------------------------------------------------- deps
deps:
	@sh scripts/deps.sh build

deps-test:
	@sh scripts/deps.sh test

# ---------------------------------------------------------------- build
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/llhttp/%.o: $(LLHTTP)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -g $(CFLAGS) -w -I/usr/share/include/llhttp -c $< -o $@

$(BUILD)/schema_sql.c: $(SCHEMA_SQL) scripts/embed-sql.sh
	@mkdir -p $(dir $@)
	sh scripts/embed-sql.sh $@ broker $(SCHEMA_SQL)

$(BUILD)/obj/schema_sql.o: $(BUILD)/schema_sql.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

# The dashboard (dashboard/ plus uPlot from node_modules), embedded like the schema
$(BUILD)/dashboard_files.c: $(DASHBOARD) scripts/embed-dashboard.sh dashboard/package-lock.json
	@mkdir -p $(dir $@)
	sh scripts/embed-dashboard.sh $@ $(DASHBOARD)

$(BUILD)/obj/dashboard_files.o: $(BUILD)/dashboard_files.c actors/http/dashboard.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

# Binaries link the objects themselves (no archive): every actor and route
# area is named explicitly by the code that uses it, so a missing file is a
# link error.
$(BUILD)/queen: $(BUILD)/obj/cmd/queen/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS)

# queen-proxy (docs/tenancy.md): its own schema (schema/proxy/: bootstrap.sql
# and migrations) embedded, applied by the broker's runner (kernel/schema.c).
PROXY_SQL  := $(sort $(wildcard schema/proxy/*.sql))
PROXY_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard cmd/queen-proxy/*.c))) $(BUILD)/obj/proxy_sql.o

$(BUILD)/proxy_sql.c: $(PROXY_SQL) scripts/embed-sql.sh
	@mkdir -p $(dir $@)
	sh scripts/embed-sql.sh $@ proxy $(PROXY_SQL)

$(BUILD)/obj/proxy_sql.o: $(BUILD)/proxy_sql.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

$(BUILD)/queen-proxy: $(PROXY_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS)

VERIFY_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard cmd/queen-verify/*.c)))

$(BUILD)/queen-verify: $(VERIFY_OBJ) $(LIB_OBJ) $(BUILD)/libqueen-client.a
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS)

# sink: sample-file writer read back by DuckDB in test/integration/sink_files.test.mjs
$(BUILD)/test/sink-files: $(BUILD)/obj/test/tools/sink_files.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS)

# sink: the S3 client from the command line, for test/integration/sink_s3.test.mjs
$(BUILD)/test/s3-tool: $(BUILD)/obj/test/tools/s3_tool.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS)

# queen-sink: the same kernel and actors, its own main (docs/sink.md)
$(BUILD)/queen-sink: $(BUILD)/obj/cmd/queen-sink/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libqueen-client.a: $(CLIENT_SRC:%.c=$(BUILD)/obj/%.o)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -fPIC -MMD -MP -c $< -o $@

$(BUILD)/libqueen-client.so: $(CLIENT_SRC:%.c=$(BUILD)/pic/%.o)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -shared -Wl,-soname,libqueen-client.so -o $@ $^ $(CLIENT_LIBS)

$(BUILD)/test-client/%: $(BUILD)/obj/test/client/%.o $(BUILD)/libqueen-client.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(CLIENT_LIBS) -lcmocka

# The same test program linked against the shared library
$(BUILD)/test-client/test_libqueen_so: $(BUILD)/obj/test/client/test_libqueen.o $(BUILD)/libqueen-client.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< -L$(BUILD) -lqueen-client -Wl,-rpath,'$$ORIGIN/..' $(CLIENT_LIBS) -lcmocka

QUEENCTL_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard cmd/queenctl/*.c)))

$(BUILD)/queenctl: $(QUEENCTL_OBJ) $(BUILD)/libqueen-client.a
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(CLIENT_LIBS)

$(BUILD)/test/%: $(BUILD)/obj/test/unit/%.o $(SUPPORT_OBJ) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(FAKE_UNIT_BIN): $(BUILD)/test/%: $(BUILD)/obj/test/unit/%.o $(BUILD)/obj/test/support/fake_kernel.o \
                  $(SUPPORT_OBJ) $(filter-out $(KERNEL_RUNTIME_OBJ),$(LIB_OBJ))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

-include $(shell find $(BUILD)/obj $(BUILD)/pic -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------- run
run:
	@sh scripts/deps.sh build
	@$(MAKE) --no-print-directory -j$(NPROC) $(BUILD)/queen
	@sh scripts/run.sh

# ---------------------------------------------------------------- tests
unit: $(UNIT_BIN)
	@sh scripts/run-unit.sh $(UNIT_BIN)

asan:
	@$(MAKE) --no-print-directory -j$(NPROC) BUILD=build-asan CFLAGS="$(ASAN_FLAGS)" all $(UNIT_SRC:test/unit/%.c=build-asan/test/%)

check-asan: asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  sh scripts/run-unit.sh $(UNIT_SRC:test/unit/%.c=build-asan/test/%)

integration: all
	@sh test/integration/run.sh $(BUILD)

# `make test`: install, then stages, each timed (scripts/stage.sh), ending
# with a table of the stages and the runner's counts over all of them:
#   unit         the append-only check of the migrations
#                (scripts/check-migrations.sh and its test), build
#                everything, unit tests (also `make test-unit`, which
#                `make fresh-test` runs in a bare Debian root)
#   asan         the sanitizer build, unit tests under ASan/UBSan
#   fuzz         every libFuzzer harness for FUZZ_SECONDS, two at a time
#   integration  SQL tests and test/integration/*.test.mjs in IT_LANES
#                parallel lanes, each on a PostgreSQL of its own; the files
#                of IT_ASAN drive the sanitizer build of the broker (memory
#                errors and leaks in real flows fail the run: a broker that
#                leaks exits non-zero under LeakSanitizer), the others the
#                normal build.
IT_LANES ?= 3
IT_ASAN  := broker push pop ack ack_merge transaction txn_riders badinput sqs_sdk \
            sqs_badinput kafka kafka_groups spool proxy mesh ephemeral kv timers streams
IT_ASAN_FILES := $(IT_ASAN:%=test/integration/%.test.mjs)
SAN_ENV  := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

test:
	@sh scripts/deps.sh test
	@sh scripts/stage.sh --reset
	@sh scripts/stage.sh unit $(MAKE) --no-print-directory test-unit
	@sh scripts/stage.sh asan $(MAKE) --no-print-directory check-asan
	@sh scripts/stage.sh fuzz $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$${FUZZ_SECONDS:-10}
	@sh scripts/stage.sh integration $(MAKE) --no-print-directory integration-lanes
	@sh scripts/stage.sh --summary

test-unit:
	@sh scripts/deps.sh test
	@sh scripts/check-migrations.sh
	@sh test/scripts/check_migrations.sh
	@$(MAKE) --no-print-directory -j$(NPROC) all $(UNIT_BIN)
	@sh scripts/run-unit.sh $(UNIT_BIN)

integration-lanes:
	@$(SAN_ENV) sh test/integration/lanes.sh $(BUILD) build-asan $(IT_LANES) $(IT_ASAN_FILES)

# Every integration file on the sanitizer build, one after the other.
integration-asan: asan
	@$(SAN_ENV) sh test/integration/run.sh build-asan

# The cell of compose.yaml in real containers (podman + docker-compose):
# images built, cell up, tested, always taken down. See docs/deploy.md.
compose-test:
	@sh scripts/deps.sh test
	@sh test/compose/run.sh

# The README's first command on a bare Debian 12 root (a container of the
# compose base image): make run until /health, then make test-unit. Not yet
# in compose-test: Debian's npm (hundreds of packages) takes too long there.
fresh-test:
	@sh scripts/deps.sh test
	@sh test/compose/fresh.sh

bench:
	@sh scripts/deps.sh test
	@$(MAKE) --no-print-directory all
	@sh bench/run.sh $(BUILD)

# ---------------------------------------------------------------- fuzzing
# libFuzzer harnesses for every decoder in wire/ (test/fuzz/fuzz_*.c), seed
# corpora in test/fuzz/corpus/<name>. `make fuzz FUZZ_SECONDS=N` runs each
# for N seconds under ASan/UBSan; findings are written to build-fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 2
FUZZ_NAMES := $(patsubst test/fuzz/fuzz_%.c,%,$(sort $(wildcard test/fuzz/fuzz_*.c)))
FUZZ_BINS  := $(FUZZ_NAMES:%=build-fuzz/fuzz_%)
FUZZ_CFLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -I. -I/usr/share/include/llhttp \
               -fno-sanitize-recover=undefined -Wall -Wextra -Werror
FUZZ_SRC   := $(BASE_SRC) $(WIRE_SRC) kernel/envelope.c client/decode.c
FUZZ_OBJ   := $(FUZZ_SRC:%.c=build-fuzz/obj/%.o)

build-fuzz/llhttp.a: $(wildcard $(LLHTTP)/*.c)
	@mkdir -p build-fuzz
	cd build-fuzz && clang -g -O1 -w -fsanitize=address,undefined -I/usr/share/include/llhttp -c $(addprefix $(LLHTTP)/,llhttp.c api.c http.c)
	ar rcs $@ build-fuzz/llhttp.o build-fuzz/api.o build-fuzz/http.o

# The sources the harnesses test, compiled once (instrumented for coverage)
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@

build-fuzz/libfuzzsrc.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

build-fuzz/fuzz_%: test/fuzz/fuzz_%.c build-fuzz/libfuzzsrc.a build-fuzz/llhttp.a
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< build-fuzz/libfuzzsrc.a build-fuzz/llhttp.a \
	    -lmsgpackc -lsodium -lssl -lcrypto -lz -lsnappy -llz4 -lzstd

-include $(shell find build-fuzz/obj -name '*.d' 2>/dev/null)

fuzz:
	@sh scripts/deps.sh test
	@$(MAKE) --no-print-directory -j$(NPROC) $(FUZZ_BINS)
	@FUZZ_JOBS=$(FUZZ_JOBS) sh scripts/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)

clean:
	rm -rf build build-asan build-fuzz
