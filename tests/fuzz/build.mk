# SPDX-License-Identifier: GPL-2.0
# libFuzzer targets (tests/fuzz/). They are built with clang, whose
# libFuzzer, AddressSanitizer and UBSan they need, from the sources
# themselves rather than the gcc objects, so the code under test is
# instrumented too:
#   fuzz_proto     daemon/proto.c and daemon/expr.c, the parsers of
#                  everything a magnetd client sends
#   fuzz_http      daemon/prom.c's requests and responses (Prometheus)
#   fuzz_supermon  daemon/supermon.c's requests and replies
# Each has its seeds in tests/fuzz/corpus/NAME/ (NAME without fuzz_).
#   make fuzz-check        a short run of each over a copy of its seeds
#                          (FUZZ_SECONDS each, default 15); part of make check
#   bench/fuzz [-t SECS]   a long one (default 10 minutes)
# A crash, leak, sanitizer report or broken invariant fails the run and
# leaves the input in build/tests/fuzz/ (crash-*, leak-*, timeout-*):
# reproduce with build/tests/fuzz/fuzz_NAME FILE.
FUZZ_CC ?= clang
FUZZ_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-D_GNU_SOURCE -Iinclude/uapi -Iinclude -Ilib -Idaemon -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_DIR := $(BUILD)/tests/fuzz
FUZZ_TARGETS := proto http supermon
FUZZ_proto_SRCS := tests/fuzz/fuzz_proto.c daemon/proto.c daemon/expr.c
FUZZ_http_SRCS := tests/fuzz/fuzz_http.c daemon/prom.c daemon/proto.c lib/slurm.c
FUZZ_supermon_SRCS := tests/fuzz/fuzz_supermon.c daemon/supermon.c daemon/proto.c lib/slurm.c
# Lines past the 4096-byte limit need inputs longer than libFuzzer's
# default 4096; each target's dictionary is tests/fuzz/NAME.dict. bench/fuzz
# reads these too.
FUZZ_OPTS := -max_len=12288 -timeout=10
FUZZ_SECONDS ?= 15

define fuzz_target
$(FUZZ_DIR)/fuzz_$(1): $(FUZZ_$(1)_SRCS) daemon/proto.h daemon/expr.h \
		daemon/prom.h daemon/supermon.h daemon/totals.h lib/util.h \
		include/uapi/linux/magnet.h tests/fuzz/build.mk
	@command -v $(FUZZ_CC) >/dev/null || \
		{ echo "$(FUZZ_CC) not found: run tools/bootstrap" >&2; exit 1; }
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  FUZZCC  $$@")
	$$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $$@ $(FUZZ_$(1)_SRCS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target,$(t))))
FUZZ_PROTO := $(FUZZ_DIR)/fuzz_proto

# A fresh copy of the seeds each time: the run must not depend on what
# earlier runs added, nor add to tests/fuzz/corpus/.
fuzz-check: $(foreach t,$(FUZZ_TARGETS),$(FUZZ_DIR)/fuzz_$(t))
	$(Q)for t in $(FUZZ_TARGETS); do \
		echo "  FUZZ    $(FUZZ_DIR)/fuzz_$$t ($(FUZZ_SECONDS) s)"; \
		rm -rf $(FUZZ_DIR)/check-corpus-$$t && mkdir -p $(FUZZ_DIR)/check-corpus-$$t; \
		cp tests/fuzz/corpus/$$t/* $(FUZZ_DIR)/check-corpus-$$t/; \
		$(FUZZ_DIR)/fuzz_$$t -dict=tests/fuzz/$$t.dict $(FUZZ_OPTS) \
			-max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/check-corpus-$$t \
			>$(FUZZ_DIR)/check-$$t.log 2>&1 || { \
			tail -n 40 $(FUZZ_DIR)/check-$$t.log >&2; \
			echo "fuzz-check: FAILED (log $(FUZZ_DIR)/check-$$t.log; the input is the" \
			     "artifact named above: $(FUZZ_DIR)/fuzz_$$t FILE reproduces it)" >&2; \
			exit 1; }; \
		sed -n 's/^Done \(.*\)/  FUZZ    ok: '"$$t"': \1/p' $(FUZZ_DIR)/check-$$t.log; \
	done

.PHONY: fuzz-check

# fuzz_ganglia is monitors/ganglia/totals.c: how the gmond module
# assembles and parses magnetd's TOTALS reply, and the names it hands
# gmond (its totals.h, not the daemon's: first in the path). Its first
# line may be 64 KiB: inputs reach past that.
FUZZ_GANGLIA := $(FUZZ_DIR)/fuzz_ganglia
FUZZ_GANGLIA_SRCS := tests/fuzz/fuzz_ganglia.c monitors/ganglia/totals.c \
	monitors/ganglia/auth.c tools/client/mgauth.c
FUZZ_GANGLIA_OPTS := -dict=tests/fuzz/ganglia.dict -max_len=70000 -timeout=10

# The fetch's AUTH MUNGE is linked (never called: the target parses).
$(FUZZ_GANGLIA): $(FUZZ_GANGLIA_SRCS) monitors/ganglia/totals.h tests/fuzz/build.mk
	@command -v $(FUZZ_CC) >/dev/null || \
		{ echo "$(FUZZ_CC) not found: run tools/bootstrap" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) -Imonitors/ganglia -Itools/client $(FUZZ_CFLAGS) -o $@ \
		$(FUZZ_GANGLIA_SRCS) -lmunge

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
