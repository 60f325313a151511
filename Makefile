# acp-agent: one plain GNU Makefile. `make help` lists the targets.
.DELETE_ON_ERROR:
.DEFAULT_GOAL := all

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
V ?= 0
WERROR ?= -Werror
DEPS_PKGS := build-essential pkg-config libjansson-dev libev-dev check libcurl4-openssl-dev git libedit-dev tmux
# make lint's tools: cppcheck, clang-tidy, scan-build (clang-tools) and the clang it drives.
LINT_PKGS := cppcheck clang-tidy clang-tools clang

STD := -std=c11 -D_GNU_SOURCE
WARN := -Wall -Wextra $(WERROR) -pedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wwrite-strings -Wundef -Wpointer-arith -Wvla -fno-common
OPT ?= -O2 -g
# libcurl's headers are used at build time; the library itself is dlopen()ed by base/curl_dl.c.
PKG_CFLAGS = $(shell pkg-config --cflags jansson libcurl 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs jansson 2>/dev/null) -lev -ldl
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

VARIANT ?= release
BUILD := build/$(VARIANT)
ifeq ($(VARIANT),asan)
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDEXTRA := -fsanitize=address,undefined
endif
ifeq ($(VARIANT),valgrind)
# The portable (word-at-a-time) JSON string scan instead of SSE2: every test runs both ways.
OPT := -O0 -g -DJENC_PORTABLE
endif

CFLAGS_ALL = $(STD) $(WARN) $(OPT) -I. $(PKG_CFLAGS) -MMD -MP
ifeq ($(V),0)
Q := @
say = @printf '  %-6s %s\n' $(1) $(2);
else
Q :=
say :=
endif

LIB_SRC := $(wildcard base/*.c session/*.c model/*.c workspace/*.c mcp/*.c agent/*.c tools/*.c chat/*.c record/*.c) $(filter-out acp/main.c,$(wildcard acp/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/acp/main.o
# `acp-agent scenario run` (scenario/): in the agent binary only.
SCENARIO_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard scenario/*.c))
TEST_SRC := $(wildcard tests/check_*.c) tests/helpers.c
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCHES := $(BENCH_SRC:bench/%.c=$(BUILD)/bin/%)

AGENT := $(BUILD)/bin/acp-agent
MOCK := $(BUILD)/bin/mock-openai
MCP_MOCK := $(BUILD)/bin/mock-mcp
CHECKS := $(BUILD)/bin/check_all
# The scenario runner is the agent itself: `acp-agent scenario run` (docs/contract.md §21).
RUNNER := $(AGENT) scenario run

FUZZ_TARGETS := line inspect replay toolargs delta scan consumers path mcp frontmatter compose
FUZZ_SRC := $(filter-out acp/main.c,$(wildcard base/*.c session/*.c model/*.c workspace/*.c mcp/*.c record/*.c agent/*.c tools/*.c acp/*.c))
FUZZ_CC := clang
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -I. $(PKG_CFLAGS)

.PHONY: all deps lint-deps check asan-unit fuzz fuzz-deps fuzz-smoke crash-loop test check-unit scenarios schema-check asan valgrind lint demo run docs clean install help bench

all: bin/acp-agent

bin/acp-agent: $(AGENT)
	@mkdir -p bin
	$(Q)cp $(AGENT) $@

$(BUILD)/%.o: %.c
	$(call say,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) $(if $(findstring tests/,$<),$(CHECK_CFLAGS)) -c $< -o $@

$(AGENT): $(LIB_OBJ) $(MAIN_OBJ) $(SCENARIO_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(PKG_LIBS)

$(CHECKS): $(LIB_OBJ) $(TEST_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(CHECK_LIBS) $(PKG_LIBS)

$(BUILD)/bin/bench_%: $(BUILD)/bench/bench_%.o $(BUILD)/bench/util.o $(LIB_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(PKG_LIBS)

$(BUILD)/bin/state-check: $(BUILD)/tests/state_check.o $(LIB_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(PKG_LIBS)

$(BUILD)/bin/ws-search: $(BUILD)/tests/ws_search.o $(LIB_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(PKG_LIBS)

# mcp/http.c alone against a real server: tests/mcp_http_everything.sh (not in make test).
$(BUILD)/bin/mcp-http-probe: $(BUILD)/tests/mcp_http_probe.o $(LIB_OBJ)
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(PKG_LIBS)

$(MOCK): $(BUILD)/tests/mock_openai.o $(BUILD)/base/buf.o $(BUILD)/base/xmalloc.o
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(PKG_LIBS)

$(MCP_MOCK): $(BUILD)/tests/mock_mcp.o $(BUILD)/base/buf.o $(BUILD)/base/xmalloc.o
	$(call say,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(OPT) $(LDEXTRA) -o $@ $^ $(PKG_LIBS)

# $(call apt_need,PKGS): installs those of the Debian packages PKGS that are missing.
apt_need = missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# Installs the Debian packages the build needs, only when one is missing.
deps:
	@$(call apt_need,$(DEPS_PKGS))

# Installs make lint's tools, only when one is missing (a skipped lint would hide problems).
lint-deps:
	@$(call apt_need,$(LINT_PKGS))

check-unit: $(CHECKS) $(MCP_MOCK)
	$(Q)$(CHECKS)

# UPDATE_SNAPSHOTS=1 make scenarios rewrites every expected/ (review the diff like code).
SCENARIO_UPDATE = $(if $(filter-out 0,$(UPDATE_SNAPSHOTS)),--update)
scenarios: $(AGENT) $(MOCK) $(MCP_MOCK)
	$(Q)$(RUNNER) $(SCENARIO_UPDATE) --mock $(MOCK) --mock-mcp $(MCP_MOCK) --traces $(BUILD)/traces scenarios/*/
	$(Q)sh tests/parity.sh

schema-check: scenarios
	$(Q)sh tests/acp-schema/run.sh $(BUILD)/traces

# Builds run JOBS compilers at once (the gate's machine has 2 cores); the tests themselves run
# one at a time, so none of them shares the machine with another.
JOBS ?= 2

# Both README commands leave bin/acp-agent, which its "By hand" section and Zed snippet run.
test: deps
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) bin/acp-agent $(CHECKS) $(MOCK) $(MCP_MOCK) $(BUILD)/bin/state-check $(BUILD)/bin/ws-search
	$(Q)$(MAKE) --no-print-directory check-unit
	$(Q)$(MAKE) --no-print-directory schema-check
	$(Q)sh tests/mock_mcp.sh $(MCP_MOCK) $(AGENT)
	$(Q)sh tests/cli.sh $(AGENT)
	$(Q)sh tests/scenario_run.sh $(AGENT)
	$(Q)sh tests/chat.sh $(AGENT)
	$(Q)sh tests/chat_tty.sh $(AGENT) $(MOCK)
	$(Q)sh tests/readme.sh bin/acp-agent
	$(Q)sh tests/docs.sh bin/acp-agent
	$(Q)sh tests/two_process.sh $(AGENT)
	$(Q)sh tests/session_delete.sh $(AGENT)
	$(Q)sh tests/images.sh $(AGENT)
	$(Q)sh tests/enospc.sh $(AGENT)
	$(Q)sh tests/readonly.sh $(AGENT)
	$(Q)sh tests/worktree_readonly.sh $(AGENT)
	$(Q)sh tests/load_race.sh $(AGENT)
	$(Q)sh tests/load_replay.sh $(AGENT)
	$(Q)sh tests/long_session.sh $(AGENT) $(MOCK)
	$(Q)sh tests/children_slow_reader.sh $(AGENT) $(MOCK)
	$(Q)sh tests/children_held_ask.sh $(AGENT) $(MOCK)
	$(Q)sh tests/agents_cmd.sh $(AGENT)
	$(Q)sh tests/crash_compact.sh $(AGENT) $(MOCK)
	$(Q)$(MAKE) --no-print-directory $(BUILD)/lib/nocurl.so && sh tests/nocurl.sh $(AGENT) $(BUILD)/lib/nocurl.so
	$(Q)sh tests/record.sh $(AGENT) $(MOCK)
	$(Q)sh tests/list_index.sh $(AGENT)
	$(Q)sh tests/churn.sh $(AGENT)
	$(Q)sh tests/procgroups.sh $(AGENT) $(MCP_MOCK)
	$(Q)sh tests/grep_hostile.sh $(AGENT)
	$(Q)sh tests/clients.sh $(AGENT)
	$(Q)sh tests/mcp_servers.sh $(AGENT)
	$(Q)$(MAKE) --no-print-directory $(BUILD)/bin/ws-search && sh tests/search_diff.sh $(BUILD)/bin/ws-search
	$(Q)$(MAKE) --no-print-directory crash-loop

# tests/nocurl.sh's shim: dlopen of libcurl fails (a machine without it).
$(BUILD)/lib/nocurl.so: tests/nocurl.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -fPIC -O2 -o $@ $< -ldl

crash-loop: $(AGENT) $(BUILD)/bin/state-check $(MCP_MOCK)
	$(Q)sh tests/crash_loop.sh $(AGENT) $(BUILD)/bin/state-check $(MCP_MOCK)

asan:
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) VARIANT=asan build/asan/bin/check_all build/asan/bin/acp-agent \
		build/asan/bin/mock-openai build/asan/bin/mock-mcp
	$(Q)SCENARIO_NO_RSS_LIMIT=1 $(MAKE) --no-print-directory VARIANT=asan check-unit scenarios

# The Check suites alone under ASan+UBSan (build/asan), run once.
asan-unit:
	$(Q)$(MAKE) --no-print-directory VARIANT=asan check-unit

# The one gate (CI's .ci/run): every test, the lint, and ASan+UBSan over the unit suites and
# every scenario. About 10 minutes on 2 cores (test 3, lint 4.5, asan 2.5; docs/architecture.md, "The gate").
check: deps lint-deps
	$(Q)t0=$$(date +%s) && $(MAKE) --no-print-directory test && t1=$$(date +%s) && \
		$(MAKE) --no-print-directory lint && t2=$$(date +%s) && \
		$(MAKE) --no-print-directory asan && t3=$$(date +%s) && \
		echo "check: ok (test $$((t1 - t0)) s, lint $$((t2 - t1)) s, asan $$((t3 - t2)) s)"

valgrind:
	$(Q)$(MAKE) --no-print-directory VARIANT=valgrind $(BUILD:release=valgrind)/bin/check_all $(BUILD:release=valgrind)/bin/acp-agent build/valgrind/bin/mock-openai build/valgrind/bin/mock-mcp
	$(Q)CK_FORK=no CK_DEFAULT_TIMEOUT=120 valgrind -q --error-exitcode=1 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect build/valgrind/bin/check_all
	$(Q)SCENARIO_NO_RSS_LIMIT=1 VALGRIND=1 build/valgrind/bin/acp-agent scenario run \
		--mock build/valgrind/bin/mock-openai --mock-mcp build/valgrind/bin/mock-mcp scenarios/*/

lint: deps lint-deps
	$(Q)sh tests/lint.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory bin/acp-agent
	$(Q)bin/acp-agent scenario run --pretty scenarios/demo/

run: all
	$(Q)./bin/acp-agent

docs: all
	$(Q)(./bin/acp-agent --print-tools-markdown && echo && \
		./bin/acp-agent --profile team --print-tools-markdown) > docs/tools.md
	$(Q)sh tests/gen/errcodes_md.sh > docs/errors.md

bench: deps all $(BENCHES) $(MOCK) $(MCP_MOCK)
	$(Q)sh bench/run.sh

# One binary: the agent, `acp-agent scenario run` and the other subcommands; and the user docs.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/acp-agent
	install -m 0755 bin/acp-agent $(DESTDIR)$(PREFIX)/bin/acp-agent
	install -m 0644 README.md docs/scenarios.md $(DESTDIR)$(PREFIX)/share/doc/acp-agent/

clean:
	rm -rf build bin

fuzz-deps:
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || { echo "fuzz: installing clang"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq clang >/dev/null; }

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SRC) | fuzz-deps
	$(call say,FUZZ,$@)
	@mkdir -p build/fuzz
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SRC) $(PKG_LIBS)

fuzz: deps $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)

fuzz-smoke: fuzz
	$(Q)sh tests/fuzz/run.sh

help:
	@echo "targets: all deps check test asan asan-unit valgrind lint demo run docs bench fuzz-smoke install clean"

-include $(shell find build -name '*.d' 2>/dev/null)
