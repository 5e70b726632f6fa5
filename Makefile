# SPDX-License-Identifier: GPL-2.0
#
# magnet top-level build.
#   make            module (kmod/magnet.ko) and all user space
#   make check      unit tests, the man pages, the VM suite (boots Debian's
#                   kernel in QEMU), the monitors (Ganglia, Supermon,
#                   Prometheus) against it, then the packages (as root:
#                   installs, DKMS-builds, boots and purges them)
#   make install    user space, headers, unit, config, man pages (DESTDIR, PREFIX)
#   make deb        magnet, magnet-dkms, libmagnet-dev (packaging/build.mk)
#   make lint       sparse, checkpatch, shellcheck, scan-build (tools/lint.mk)
#   make demo       the main job: a live node (magnet + magnetd) in magnet-top
#   make bench      the benchmark table (native ring + in-VM comparisons)
#   V=1             show full commands

# Debian's headers matching the installed linux-image-amd64; the running
# kernel's build dir wins when there is one (a module-capable host).
KVER_RUNNING := $(shell uname -r)
ifneq ($(wildcard /lib/modules/$(KVER_RUNNING)/build/Makefile),)
KDIR ?= /lib/modules/$(KVER_RUNNING)/build
else
KDIR ?= $(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
endif
KVER ?= $(patsubst linux-headers-%,%,$(notdir $(KDIR)))
export KDIR KVER

ifeq ($(V),1)
Q :=
else
Q := @
MAKEFLAGS += --no-print-directory
endif

CC ?= cc
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	  -D_GNU_SOURCE -Iinclude/uapi -Iinclude -Ilib
# Everything that goes into the VM is linked statically so the initramfs needs
# no loader or shared libraries.
LDFLAGS_STATIC := -static

# SANITIZE=1: AddressSanitizer and UBSan, every report fatal. Their runtimes
# are shared libraries, so nothing is linked statically; `make unit` builds
# such a tree in $(BUILD)/asan (see unit-asan), never in the VM's $(BUILD).
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
	     -fno-omit-frame-pointer
ifeq ($(SANITIZE),1)
CFLAGS += $(SAN_FLAGS)
LDFLAGS_STATIC :=
endif

BUILD := build
USER_BINS :=
UNIT_TESTS :=
GUEST_FILES :=

all: module user

include lib/build.mk
include kmod/user.mk
include tools/build.mk
include tools/ctl.mk
include tools/client/build.mk
include tests/unit/build.mk
include tests/vm/build.mk
include tests/vm/progs.mk
include bench/build.mk
include daemon/build.mk
include tests/fuzz/build.mk
include tests/monitors/build.mk
include tests/cluster/build.mk
include monitors/ganglia/build.mk
# Packaging (make install, uninstall, deb), man pages, static checks.
-include packaging/build.mk
-include man/build.mk
-include tools/lint.mk

$(BUILD):
	$(Q)mkdir -p $@

$(BUILD)/%.o: %.c | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# This tree's dependency files only: the trees nested in it (ASan's, lint's,
# the packages', the kernels') are other builds, which may be writing theirs
# while this make starts (make check's host lane, CI's kernel prepare).
BUILD_NESTED := asan lint deb kernels debug
-include $(shell find $(BUILD) \( $(foreach d,$(BUILD_NESTED),-path '$(BUILD)/$(d)' -o) \
	-false \) -prune -o -name '*.d' -type f -print 2>/dev/null)

module:
	@test -n "$(KDIR)" || { echo "no kernel headers: run tools/bootstrap" >&2; exit 1; }
	$(Q)$(MAKE) -C $(KDIR) M=$(CURDIR) $(if $(Q),,V=1) modules

user: $(USER_BINS)

# Both README commands start with the bootstrap (idempotent, quiet when the
# machine is ready), then re-enter make so KDIR sees freshly installed headers.
check:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) check-lanes

# Two lanes at once. The VM's tests run one TCG guest at a time, which
# keeps one core busy; the host's own tests (unit, man pages, fuzzing) take
# the other at a lower priority, logged to $(CHECK_HOST_LOG) and printed
# when both are done. What both lanes use is built first; after that the
# host lane builds only trees of its own (ASan's, the fuzzers').
CHECK_HOST := unit man-check fuzz-check
CHECK_VM := vm-check monitors-check cluster-check pkg-check
CHECK_HOST_LOG := $(BUILD)/check/host.log
check-lanes: vm-guest-files $(UNIT_RUN) man
	@mkdir -p $(dir $(CHECK_HOST_LOG))
	@echo "  LANE    $(CHECK_HOST) beside the VM (log: $(CHECK_HOST_LOG))"
	$(Q)nice -n 10 $(MAKE) $(CHECK_HOST) >$(CHECK_HOST_LOG) 2>&1 & host=$$!; \
	$(MAKE) $(CHECK_VM); vm=$$?; \
	wait $$host; rc=$$?; \
	echo "  LANE    $(CHECK_HOST): $$([ $$rc = 0 ] && echo ok || echo "FAILED (exit $$rc)")"; \
	sed 's/^/  host: /' $(CHECK_HOST_LOG); \
	[ $$vm = 0 ] && [ $$rc = 0 ]

# The real monitors on this host against magnetd in the VM (tests/monitors).
# MON_TESTS=t-ganglia runs only some.
monitors-check: user vm-guest-files
	$(Q)tests/monitors/run $(MON_TESTS)

demo:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) demo-run

demo-run: vm-guest-files
	$(Q)tools/demo

GUEST_FILES += tools/demo.sh:/magnet/tools/demo.sh

# make unit: the tests as built for the VM, then all of them again under
# ASan+UBSan (leaks included), slower: hence Check's longer timeouts there.
# A sanitizer's report exits 86, a status no test expects of a tool.
unit: unit-run
ifneq ($(SANITIZE),1)
	$(Q)$(MAKE) unit-asan
endif

# Sanitized, only what that tree built: host scripts ran the first time.
UNIT_RUN := $(if $(filter 1,$(SANITIZE)),$(filter $(BUILD)/%,$(UNIT_TESTS)),$(UNIT_TESTS))
unit-run: $(UNIT_RUN)
	$(Q)set -e; for t in $(UNIT_RUN); do echo "  UNIT    $$t"; CK_FORK=yes ./$$t; done

unit-asan:
	$(Q)CK_TIMEOUT_MULTIPLIER=4 ASAN_OPTIONS=detect_leaks=1:exitcode=86 \
		UBSAN_OPTIONS=print_stacktrace=1:exitcode=86 \
		$(MAKE) SANITIZE=1 BUILD=$(BUILD)/asan unit-run

clean:
	$(Q)rm -rf $(BUILD)
	$(Q)$(MAKE) -C $(KDIR) M=$(CURDIR) clean >/dev/null 2>&1 || true

.PHONY: all module user check check-lanes unit unit-run unit-asan clean demo demo-run bench vm-check \
	monitors-check man man-check

# The sample custom module is built with magnet.ko (same Kbuild tree).
samples/magnet_sample.ko kmod/magnet.ko: module
GUEST_FILES += samples/magnet_sample.ko:/magnet/magnet_sample.ko
