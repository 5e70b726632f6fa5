# SPDX-License-Identifier: GPL-2.0
#
# The benchmark (bench/run): not part of `make` / `make all` / CI.
#
#   make bench        build the bench binaries, then run bench/run: native
#                     ring core timings here, the probe-cost, drain-rate,
#                     consumer-cost (magnetd, magnet-read, ftrace-read),
#                     UDP-capture (magnet vs tcpdump) and loss-vs-record-
#                     size (magnet, ftrace, LTTng) comparisons in the VM;
#                     prints one table and writes it
#                     to $(BUILD)/bench/results.txt
#   make bench-bins   only build them
#
# BENCH_BINS are built only by these targets. BENCH_GUEST_FILES are the
# HOST:GUEST pairs bench/run gives tests/vm/run with --file (bench/run adds
# magnet-read, magnet-ctl, magnet-dump, magnetd, magnet-cat and mdtest,
# which `user` builds, the host's tcpdump, perf, lttng-tools and munged
# (tests/vm/run stages their libraries), and LTTng's modules, which bench/lttng-build builds for the
# guest's kernel and caches in ~/.cache/magnet/lttng).
BENCH_DIR := $(BUILD)/bench

# The ring core once more, at -O2 whatever CFLAGS says: the bench times the
# module's own code as the kernel builds it (-O2).
$(BENCH_DIR)/ring_core.o: kmod/ring_core.c | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) -O2 -Ikmod -MMD -MP -c -o $@ $<

$(BENCH_DIR)/ring_bench.o: CFLAGS += -O2 -Ikmod

# Native, so dynamic: valgrind and perf like it better.
$(BENCH_DIR)/ring_bench: $(BENCH_DIR)/ring_bench.o $(BENCH_DIR)/ring_core.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ -lpthread

# Guest side: static (the initramfs has no loader).
$(BENCH_DIR)/ftrace-read: $(BENCH_DIR)/ftrace-read.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ -lpthread

$(BENCH_DIR)/loadgen: $(BENCH_DIR)/loadgen.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^

$(BENCH_DIR)/udpflood: $(BENCH_DIR)/udpflood.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ -lpthread

# The libbpf peer of rows 2, 3 and 7: its BPF object (clang for the BPF
# target; no vmlinux.h: the kprobe reads pt_regs as the UAPI defines it, the
# fentry programs their arguments as u64) and its loader and consumer,
# static with Debian's libbpf.a (libbpf-dev), libelf and zlib. Built here,
# never shipped.
BPF_MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
$(BENCH_DIR)/bpf-ring.bpf.o: bench/bpf-ring.bpf.c include/uapi/linux/magnet.h | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CLANG   $@")
	$(Q)clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -Iinclude/uapi \
		$(if $(BPF_MULTIARCH),-I/usr/include/$(BPF_MULTIARCH)) -c -o $@ $<

$(BENCH_DIR)/bpf-ring: $(BENCH_DIR)/bpf-ring.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ -lbpf -lelf -lz

# Native: magnet-dump's cost against a trace's probe table (bench/dump-probes).
$(BENCH_DIR)/hostile-trace: $(BENCH_DIR)/hostile-trace.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^

BENCH_BINS := $(BENCH_DIR)/ring_bench $(BENCH_DIR)/ftrace-read $(BENCH_DIR)/loadgen \
	      $(BENCH_DIR)/udpflood $(BENCH_DIR)/hostile-trace \
	      $(BENCH_DIR)/bpf-ring $(BENCH_DIR)/bpf-ring.bpf.o
BENCH_GUEST_FILES := $(BENCH_DIR)/ftrace-read:/magnet/bin/ftrace-read \
		     $(BENCH_DIR)/loadgen:/magnet/bin/loadgen \
		     $(BENCH_DIR)/udpflood:/magnet/bin/udpflood \
		     $(BENCH_DIR)/bpf-ring:/magnet/bin/bpf-ring \
		     $(BENCH_DIR)/bpf-ring.bpf.o:/magnet/bin/bpf-ring.bpf.o \
		     bench/vm-bench.sh:/magnet/bench/vm-bench.sh

bench-bins: $(BENCH_BINS)

# bench/run builds what it needs itself when run by hand; under make it is
# all built already (module and user for magnet.ko and magnet-read).
bench: module user bench-bins
	$(Q)MAGNET_BENCH_BUILT=1 MAGNET_BUILD='$(BUILD)' \
		MAGNET_BENCH_FILES='$(strip $(BENCH_GUEST_FILES))' bench/run

.PHONY: bench bench-bins
