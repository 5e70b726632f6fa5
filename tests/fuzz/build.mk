# SPDX-License-Identifier: GPL-2.0
# libFuzzer targets (tests/fuzz/). They are built with clang, whose
# libFuzzer, AddressSanitizer and UBSan they need, from the sources
# themselves rather than the gcc objects, so the code under test is
# instrumented too: fuzz_proto is daemon/proto.c and daemon/expr.c, the
# parsers of everything a magnetd client sends.
#   make fuzz-check        a short run over a copy of the seed corpus
#                          (FUZZ_SECONDS, default 15); part of make check
#   bench/fuzz [-t SECS]   a long one (default 10 minutes)
# A crash, leak, sanitizer report or broken invariant fails the run and
# leaves the input in build/tests/fuzz/ (crash-*, leak-*, timeout-*):
# reproduce with build/tests/fuzz/fuzz_proto FILE.
FUZZ_CC ?= clang
FUZZ_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-D_GNU_SOURCE -Iinclude/uapi -Iinclude -Ilib -Idaemon -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_DIR := $(BUILD)/tests/fuzz
FUZZ_PROTO := $(FUZZ_DIR)/fuzz_proto
FUZZ_PROTO_SRCS := tests/fuzz/fuzz_proto.c daemon/proto.c daemon/expr.c
# Lines past the 4096-byte limit need inputs longer than libFuzzer's
# default 4096; bench/fuzz reads these too.
FUZZ_PROTO_OPTS := -dict=tests/fuzz/proto.dict -max_len=12288 -timeout=10
FUZZ_SECONDS ?= 15

$(FUZZ_PROTO): $(FUZZ_PROTO_SRCS) daemon/proto.h daemon/expr.h lib/util.h \
	       include/uapi/linux/magnet.h tests/fuzz/build.mk
	@command -v $(FUZZ_CC) >/dev/null || \
		{ echo "$(FUZZ_CC) not found: run tools/bootstrap" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_PROTO_SRCS)

# A fresh copy of the seeds each time: the run must not depend on what
# earlier runs added, nor add to tests/fuzz/corpus/.
fuzz-check: $(FUZZ_PROTO)
	@echo "  FUZZ    $(FUZZ_PROTO) ($(FUZZ_SECONDS) s)"
	$(Q)rm -rf $(FUZZ_DIR)/check-corpus && mkdir -p $(FUZZ_DIR)/check-corpus
	$(Q)cp tests/fuzz/corpus/proto/* $(FUZZ_DIR)/check-corpus/
	$(Q)$(FUZZ_PROTO) $(FUZZ_PROTO_OPTS) -max_total_time=$(FUZZ_SECONDS) \
		-artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/check-corpus \
		>$(FUZZ_DIR)/check.log 2>&1 || { \
		tail -n 40 $(FUZZ_DIR)/check.log >&2; \
		echo "fuzz-check: FAILED (log $(FUZZ_DIR)/check.log; the input is the" \
		     "artifact named above: $(FUZZ_PROTO) FILE reproduces it)" >&2; \
		exit 1; }
	@sed -n 's/^Done \(.*\)/  FUZZ    ok: \1/p' $(FUZZ_DIR)/check.log

.PHONY: fuzz-check

# fuzz_ganglia is monitors/ganglia/totals.c: how the gmond module
# assembles and parses magnetd's TOTALS reply, and the names it hands
# gmond (its totals.h, not the daemon's: first in the path). Its first
# line may be 64 KiB: inputs reach past that.
FUZZ_GANGLIA := $(FUZZ_DIR)/fuzz_ganglia
FUZZ_GANGLIA_SRCS := tests/fuzz/fuzz_ganglia.c monitors/ganglia/totals.c
FUZZ_GANGLIA_OPTS := -dict=tests/fuzz/ganglia.dict -max_len=70000 -timeout=10

$(FUZZ_GANGLIA): $(FUZZ_GANGLIA_SRCS) monitors/ganglia/totals.h tests/fuzz/build.mk
	@command -v $(FUZZ_CC) >/dev/null || \
		{ echo "$(FUZZ_CC) not found: run tools/bootstrap" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) -Imonitors/ganglia $(FUZZ_CFLAGS) -o $@ $(FUZZ_GANGLIA_SRCS)

# As fuzz-check, its own copy of its seeds (tests/fuzz/corpus/ganglia/).
fuzz-check: fuzz-check-ganglia
fuzz-check-ganglia: $(FUZZ_GANGLIA)
	@echo "  FUZZ    $(FUZZ_GANGLIA) ($(FUZZ_SECONDS) s)"
	$(Q)rm -rf $(FUZZ_DIR)/check-ganglia && mkdir -p $(FUZZ_DIR)/check-ganglia
	$(Q)cp tests/fuzz/corpus/ganglia/* $(FUZZ_DIR)/check-ganglia/
	$(Q)$(FUZZ_GANGLIA) $(FUZZ_GANGLIA_OPTS) -max_total_time=$(FUZZ_SECONDS) \
		-artifact_prefix=$(FUZZ_DIR)/ganglia- $(FUZZ_DIR)/check-ganglia \
		>$(FUZZ_DIR)/check-ganglia.log 2>&1 || { \
		tail -n 40 $(FUZZ_DIR)/check-ganglia.log >&2; \
		echo "fuzz-check: FAILED (log $(FUZZ_DIR)/check-ganglia.log; the input is the" \
		     "artifact named above: $(FUZZ_GANGLIA) FILE reproduces it)" >&2; \
		exit 1; }
	@sed -n 's/^Done \(.*\)/  FUZZ    ok: \1/p' $(FUZZ_DIR)/check-ganglia.log

.PHONY: fuzz-check-ganglia
