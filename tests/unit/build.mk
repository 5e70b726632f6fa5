# SPDX-License-Identifier: GPL-2.0
# Unit tests of libmagnet (Check, linked statically; dynamically with
# SANITIZE=1, see the top Makefile) and the end-to-end test
# of magnet-read/magnet-dump on synthetic rings (t-tools.sh).
LIB_UNIT_TESTS := $(addprefix $(BUILD)/tests/unit/, \
	test_record test_trace test_print test_escape test_cgmap test_tasks test_slurm \
	test_seqtrack test_reorder)

# Static Check needs its private deps spelled out; pkg-config knows them.
CHECK_LIBS := $(or $(shell pkg-config --libs --static check 2>/dev/null),\
	-lcheck -lsubunit -lm -lrt) -lpthread

$(LIB_UNIT_TESTS): $(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o \
		   $(BUILD)/tests/unit/testutil.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CHECK_LIBS)

$(BUILD)/tests/unit/gen-stream: $(BUILD)/tests/unit/gen-stream.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^

# make unit runs each UNIT_TESTS entry as ./ENTRY: a tiny wrapper tells the
# script where this build's binaries are.
$(BUILD)/tests/unit/t-tools: tests/unit/t-tools.sh $(MAGNET_TOOLS) $(MAGNET_CLIENT_BINS) \
			     $(BUILD)/tests/unit/gen-stream
	@$(if $(Q),echo "  GEN     $@")
	$(Q)printf '#!/bin/sh\nMAGNET_BUILD=%s exec sh %s "$$@"\n' \
		'$(abspath $(BUILD))' '$(abspath tests/unit/t-tools.sh)' > $@
	$(Q)chmod +x $@

UNIT_TESTS += $(LIB_UNIT_TESTS) $(BUILD)/tests/unit/t-tools

# magnet-dump --pcap read back by the real tshark and tcpdump (t-pcap.sh),
# on a trace of known packets from gen-pcap.
$(BUILD)/tests/unit/gen-pcap: $(BUILD)/tests/unit/gen-pcap.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^

$(BUILD)/tests/unit/t-pcap: tests/unit/t-pcap.sh $(MAGNET_TOOLS) $(BUILD)/tests/unit/gen-pcap
	@$(if $(Q),echo "  GEN     $@")
	$(Q)printf '#!/bin/sh\nMAGNET_BUILD=%s exec sh %s "$$@"\n' \
		'$(abspath $(BUILD))' '$(abspath tests/unit/t-pcap.sh)' > $@
	$(Q)chmod +x $@

UNIT_TESTS += $(BUILD)/tests/unit/t-pcap

# lib/pcap.c's corner cases, parsed back from the format's definition.
$(BUILD)/tests/unit/test_pcap: $(BUILD)/tests/unit/test_pcap.o \
			      $(BUILD)/tests/unit/testutil.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CHECK_LIBS)

UNIT_TESTS += $(BUILD)/tests/unit/test_pcap
