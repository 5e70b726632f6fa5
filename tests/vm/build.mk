# SPDX-License-Identifier: GPL-2.0
#
# VM tests: everything kernel-side runs in QEMU booting Debian's kernel
# (tests/vm/run; see docs/vm-harness.md).
#
#   make vm-check          build, then run tests/vm/suite in the VM
#   make vm-check VM_TESTS=t-10   only the t-*.sh whose name contains t-10
#   make vm-check VM_TESTS="t-10 t-30"   ... either
#   make vm-check VM_TESTS=pcap   only tests/vm/host-pcap.sh
#   make vm-check VM_TESTS=t-37   a test with boots of its own (tests/vm/boots)
#   make vm-shell          interactive busybox shell in the VM (^A x quits)
#   make vm-shell-host     interactive bash among the host's programs (--root host)
#   make vm-check-hostroot tests/vm/hostroot.sh: --root host in one boot
#   make vm-check-net2     tests/vm/net2.sh: two --root host nodes on one LAN
#   make check-debug       the suite on the debug kernel (tests/vm/harness.mk)
#
# GUEST_FILES: other fragments append "HOST:GUEST" pairs (HOST relative to
# the top directory; GUEST absolute, "dir/" keeps the basename, no ":GUEST"
# means /magnet/bin/), e.g.
#   GUEST_FILES += $(BUILD)/tools/magnet-read:/magnet/bin/magnet-read
# Every VM target gets them through MAGNET_GUEST_FILES, and depends on
# vm-guest-files, which builds them. kmod/magnet.ko and tests/vm/ are always
# in the guest (as /magnet/magnet.ko and /magnet/tests/vm/).

VM_RUN := tests/vm/run
VM_TESTS ?=

# Debian's MUNGE (tests/vm/munged.sh starts a munged of a test's own):
# dynamic programs, which tests/vm/run stages with their libraries.
MUNGE_GUEST_BINS := /usr/sbin/munged /usr/sbin/mungekey /usr/bin/munge \
	/usr/bin/unmunge
GUEST_FILES += $(foreach b,$(MUNGE_GUEST_BINS),$(b):$(b))

# Recursively expanded and exported: recipes see every later "+=" too.
export MAGNET_GUEST_FILES = $(strip $(GUEST_FILES))

# Host side of each pair, expanded when a recipe runs (fragments included
# after this one append to GUEST_FILES).
vm_guest_hosts = $(foreach p,$(GUEST_FILES),$(firstword $(subst :, ,$(p))))

# Builds whatever GUEST_FILES names. Prerequisites are expanded while the
# makefile is read, before later fragments add to GUEST_FILES, hence the
# sub-make, which sees the complete list.
vm-guest-files: module user
	$(Q)$(if $(strip $(vm_guest_hosts)),$(MAKE) -s $(vm_guest_hosts))

# The whole suite in one guest: about 6 minutes under TCG on 2 cores; the
# limit leaves room for a slow machine, well inside CI's 90 minutes.
VM_SUITE_TIMEOUT ?= 1500
# One test's, in the suite: a hung test fails alone and the rest still run.
VM_TEST_TIMEOUT ?= 600
# First the harness's own test (tests/vm/selftest-harness: one boot).
# Then one short boot with debugfs=off: a load that cannot create its
# files fails cleanly (it needs its own kernel command line).
#
# tests/vm/host-pcap.sh (its own boot, about 25 s) runs after the suite
# when VM_TESTS is empty or part of its name ("pcap"): magnet-dump's
# captures of packets sent in the guest, read here by tshark and tcpdump.
# A VM_TESTS that names it and no t-*.sh skips the suite.
#
# A t-*.sh with "# vm-boot:" lines needs boots of its own (it crashes its
# guest, or reads a disk in a second boot): tests/vm/boots runs those
# selected, after the suite, which skips them. VM_TESTS may hold several
# patterns: a test runs if its name contains any.
vm_boot_tests := $(shell grep -l '^\# vm-boot:' tests/vm/t-*.sh 2>/dev/null)
vm_pick = $(strip $(foreach p,$(VM_TESTS),$(findstring $(p),$(1))))
vm_suite_selected = $(if $(VM_TESTS),$(strip $(foreach t,$(notdir $(filter-out \
	$(vm_boot_tests),$(wildcard tests/vm/t-*.sh))),$(call vm_pick,$(t)))),all)
vm_boots_selected = $(strip $(foreach t,$(vm_boot_tests),$(if $(VM_TESTS),$(if \
	$(call vm_pick,$(notdir $(t))),$(t)),$(t))))
vm_pcap_selected = $(if $(VM_TESTS),$(call vm_pick,host-pcap),all)
vm_suite_runs = $(or $(vm_suite_selected),$(if $(vm_pcap_selected)$(vm_boots_selected),,none matched))
vm-check: vm-guest-files
	$(Q)$(if $(VM_TESTS),true,tests/vm/selftest-harness)
	$(Q)$(if $(vm_suite_runs),$(VM_RUN) --timeout $(VM_SUITE_TIMEOUT) -- /magnet/tests/vm/suite --timeout $(VM_TEST_TIMEOUT) $(VM_TESTS),true)
	$(Q)$(if $(vm_boots_selected),tests/vm/boots -- $(vm_boots_selected),true)
	$(Q)$(if $(vm_pcap_selected),tests/vm/host-pcap.sh,true)
	$(Q)$(if $(VM_TESTS),true,$(VM_RUN) --timeout 120 --append debugfs=off -- \
		sh /magnet/tests/vm/boot-debugfs-off.sh)

vm-shell: vm-guest-files
	$(Q)$(VM_RUN) -i -- sh

# Nodes that run the host's own Debian programs (tests/vm/run --root host),
# proven in one boot (about 11 s); two such nodes at once on one LAN of
# their own (--node, --lan), reaching each other and reached from the host
# through their forwards (about 20 s). Not in vm-check: the kernel suite
# keeps the initramfs.
vm-check-hostroot: vm-guest-files
	$(Q)tests/vm/hostroot.sh

vm-check-net2: vm-guest-files
	$(Q)tests/vm/net2.sh

# A shell among the host's programs (bash; ^A x quits).
vm-shell-host: vm-guest-files
	$(Q)$(VM_RUN) --root host -i -- bash

.PHONY: vm-guest-files vm-check vm-shell vm-check-hostroot vm-check-net2 vm-shell-host

# The harness's own tests, make check-debug (the debug kernel).
include tests/vm/harness.mk
