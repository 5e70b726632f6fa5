# SPDX-License-Identifier: GPL-2.0
#
# The VM harness's own tests, and the suite on the debug kernel
# (docs/vm-harness.md).
#
#   make check-debug       the whole suite on the debug kernel: KASAN,
#                          lockdep, kmemleak, UBSAN... (tools/debug-kernel
#                          builds it once, about 10 minutes, then reuses it)
#   make check-debug VM_TESTS=t-10   only some tests (kmemleak still runs)
#   make check-debug VM_TESTS=pcap   only tests/vm/host-pcap.sh
#   make check-debug VM_TESTS=lockdown   only the lockdown=integrity run
#   make check-debug-core  CI's share of it (below)
#   make vm-check-lockdown the lockdown=integrity run alone
#   make vm-shell-debug    a shell on the debug kernel
#   make check-debug-rt    the suite on a PREEMPT_RT debug kernel (below)

# What a direct tests/vm/run call (no MAGNET_GUEST_FILES) stages.
print-guest-files:
	@echo $(GUEST_FILES)

# Host-side: the kernel-problem patterns and the kmemleak judge, fed real
# lines; make unit runs it with the unit tests. (tests/vm/selftest-harness,
# which boots the VM, runs at the start of vm-check.)
UNIT_TESTS += tests/vm/selftest-patterns

# --- the debug kernel --------------------------------------------------------
# tools/debug-kernel builds linux-source-6.1 with tests/vm/debug.config
# (cached in ~/.cache/magnet/debug-kernel), and kmod/ + samples/ against it
# in $(DEBUG_SRC), a mirror of their sources: `make module` builds kmod/ in
# place for Debian's kernel, and 6.1's Kbuild cannot put an external
# module's objects elsewhere. The guest gets the usual GUEST_FILES, each .ko
# taken from $(DEBUG_SRC) instead. KASAN, lockdep and kmemleak under TCG
# make the suite several times slower than on Debian's kernel, and KASAN's
# shadow and quarantine want memory: hence the timeout and --mem.
DEBUG_SRC := $(BUILD)/debug/src
VM_DEBUG_TIMEOUT ?= 2400
VM_DEBUG_TEST_TIMEOUT ?= 1200
VM_DEBUG_BOOT_TIMEOUT ?= 900
VM_DEBUG_MEM ?= 2048
vm_debug_guest_files = $(foreach p,$(GUEST_FILES),$(if $(filter %.ko,$(firstword \
	$(subst :, ,$(p)))),$(DEBUG_SRC)/$(p),$(p)))
vm_debug_env = MAGNET_GUEST_FILES='$(strip $(vm_debug_guest_files))'
vm_debug_opts = --kernel "$$(tools/debug-kernel --image)" \
	--module $(DEBUG_SRC)/kmod/magnet.ko --mem $(VM_DEBUG_MEM)
vm_debug_run = $(vm_debug_env) $(VM_RUN) $(vm_debug_opts)

check-debug:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) vm-check-debug

# CI's share of it (.ci/run, make check-debug-core), about 17 minutes of
# its 46: the tests that drive the module's own paths (records, delivery,
# captures, unload, a failing load, wake-ups, the control plane and its
# add/remove cycles, every handler, fairness, the idle path, contexts,
# resizes, reads, devices) and both lockdown boots, kmemleak's scan last.
# The daemon's own tests (magnetd, its clients, MUNGE, Slurm), user space
# the debug kernel checks nothing more of, the module parameters' parsing,
# the crash boots and host-pcap run on Debian's kernel in make check.
# make check-debug runs everything: before resolving kernel work.
VM_DEBUG_CORE_TESTS ?= t-00 t-10 t-11 t-12 t-13 t-15 t-16 t-17 t-20 t-21 t-22 \
	t-24 t-25 t-26 t-27 t-28 t-32 t-33 t-34 t-35 t-36 t-41 t-42 lockdown

check-debug-core:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) vm-check-debug VM_TESTS="$(VM_DEBUG_CORE_TESTS)"

# Like vm-guest-files, but no module for Debian's kernel: the user-space
# files, then the debug kernel (built when not cached) and the modules.
vm-debug-files: vm-user-files
	$(Q)V=$(V) tools/debug-kernel module >/dev/null

# The guest's files but the modules (built per kernel).
vm-user-files: user
	$(Q)$(if $(filter-out %.ko,$(vm_guest_hosts)),$(MAKE) -s $(filter-out %.ko,$(vm_guest_hosts)))

# Secure Boot's lockdown: the debug kernel booted with lockdown=integrity
# (signed modules only; debugfs opens no file with an ioctl or mmap).
# tests/vm/lockdown.sh proves it is on (the level, an unsigned module
# refused, debugfs's cpuN refused with EPERM), then runs these tests of the
# suite, which must find /dev/magnet/cpuN by themselves. A second boot with
# lockdown=confidentiality: what magnet does there and what the kernel
# refuses (tests/vm/lockdown-confidentiality.sh). Part of check-debug when
# VM_TESTS is empty or names "lockdown".
VM_LOCKDOWN_TESTS ?= t-00 t-12 t-30 t-41 t-42
vm_lockdown_selected = $(if $(VM_TESTS),$(call vm_pick,lockdown),all)
vm_lockdown_run = t0=$$(date +%s); \
	$(vm_debug_run) --timeout $(VM_DEBUG_TIMEOUT) --append lockdown=integrity -- \
	sh /magnet/tests/vm/lockdown.sh --timeout $(VM_DEBUG_TEST_TIMEOUT) $(VM_LOCKDOWN_TESTS) || rc=$$?; \
	echo "check-debug: lockdown=integrity ($(VM_LOCKDOWN_TESTS)) took $$(($$(date +%s) - t0)) s"; \
	t0=$$(date +%s); \
	$(vm_debug_run) --timeout $(VM_DEBUG_BOOT_TIMEOUT) --append lockdown=confidentiality -- \
	sh /magnet/tests/vm/lockdown-confidentiality.sh || rc=$$?; \
	echo "check-debug: lockdown=confidentiality took $$(($$(date +%s) - t0)) s";

vm_debug_suite_runs = $(or $(vm_suite_selected),$(if \
	$(vm_pcap_selected)$(vm_boots_selected)$(vm_lockdown_selected),,none matched))

vm-check-lockdown: vm-debug-files
	$(Q)rc=0; $(vm_lockdown_run) exit $$rc

# Then the tests with boots of their own (tests/vm/boots),
# tests/vm/host-pcap.sh and the lockdown run on the debug kernel, selected
# as in vm-check.
vm-check-debug: vm-debug-files
	$(Q)t0=$$(date +%s); rc=0; \
	$(if $(vm_debug_suite_runs),$(vm_debug_run) --timeout $(VM_DEBUG_TIMEOUT) -- /magnet/tests/vm/suite --timeout $(VM_DEBUG_TEST_TIMEOUT) $(VM_TESTS) || rc=$$?; \
	echo "check-debug: the suite on $$(tools/debug-kernel --release) took $$(($$(date +%s) - t0)) s";) \
	$(if $(vm_boots_selected),t0=$$(date +%s); \
	$(vm_debug_env) tests/vm/boots $(vm_debug_opts) --timeout $(VM_DEBUG_BOOT_TIMEOUT) -- $(vm_boots_selected) || rc=1; \
	echo "check-debug: the tests with boots of their own took $$(($$(date +%s) - t0)) s";) \
	$(if $(vm_pcap_selected),t0=$$(date +%s); \
	$(vm_debug_env) tests/vm/host-pcap.sh $(vm_debug_opts) --timeout $(VM_DEBUG_TIMEOUT) || rc=1; \
	echo "check-debug: host-pcap on $$(tools/debug-kernel --release) took $$(($$(date +%s) - t0)) s";) \
	$(if $(vm_lockdown_selected),$(vm_lockdown_run)) \
	exit $$rc

vm-shell-debug: vm-debug-files
	$(Q)$(vm_debug_run) -i -- sh

.PHONY: print-guest-files check-debug check-debug-core vm-debug-files vm-user-files vm-check-debug \
	vm-check-lockdown vm-shell-debug

# --- the PREEMPT_RT debug kernel ---------------------------------------------
# tools/debug-kernel --rt builds Debian's linux-source-6.12 (the version of
# the matrix's 6.12-rt) with tests/vm/debug-rt.config: PREEMPT_RT, lockdep
# with PROVE_RAW_LOCK_NESTING, DEBUG_ATOMIC_SLEEP, DEBUG_PREEMPT, PROVE_RCU
# (no KASAN, kmemleak or UBSAN: check-debug has them). On RT a spinlock_t
# sleeps: a probe handler that takes one, or sleeps, fails here at once
# ("BUG: Invalid wait context", "BUG: sleeping function called from invalid
# context") where Debian's 6.12-rt fails only when contended. The modules
# are built in $(DEBUG_RT_SRC). Not in CI (.ci/run): run it before resolving
# kernel work.
#   make check-debug-rt                 the whole suite, the tests with
#                                       boots of their own and host-pcap
#   make check-debug-rt VM_TESTS=t-10   only some (as in check-debug)
#   make vm-shell-debug-rt              a shell on it
# VM_DEBUG_RT_TESTS: what runs when VM_TESTS is empty (empty: everything).
DEBUG_RT_SRC := $(BUILD)/debug-rt/src
VM_DEBUG_RT_TESTS ?=
VM_DEBUG_RT_MEM ?= 1536
vm_debug_rt_guest_files = $(foreach p,$(GUEST_FILES),$(if $(filter %.ko,$(firstword \
	$(subst :, ,$(p)))),$(DEBUG_RT_SRC)/$(p),$(p)))
vm_debug_rt_env = MAGNET_GUEST_FILES='$(strip $(vm_debug_rt_guest_files))'
vm_debug_rt_opts = --kernel "$$(tools/debug-kernel --rt --image)" \
	--module $(DEBUG_RT_SRC)/kmod/magnet.ko --mem $(VM_DEBUG_RT_MEM)
vm_debug_rt_run = $(vm_debug_rt_env) $(VM_RUN) $(vm_debug_rt_opts)

check-debug-rt:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) vm-check-debug-rt VM_TESTS="$(or $(VM_TESTS),$(VM_DEBUG_RT_TESTS))"

vm-debug-rt-files: vm-user-files
	$(Q)V=$(V) tools/debug-kernel --rt module >/dev/null

vm-check-debug-rt: vm-debug-rt-files
	$(Q)t0=$$(date +%s); rc=0; rel=$$(tools/debug-kernel --rt --release); \
	$(if $(vm_suite_runs),$(vm_debug_rt_run) --timeout $(VM_DEBUG_TIMEOUT) -- /magnet/tests/vm/suite --timeout $(VM_DEBUG_TEST_TIMEOUT) $(VM_TESTS) || rc=$$?; \
	echo "check-debug-rt: the suite on $$rel took $$(($$(date +%s) - t0)) s";) \
	$(if $(vm_boots_selected),t0=$$(date +%s); \
	$(vm_debug_rt_env) tests/vm/boots $(vm_debug_rt_opts) --timeout $(VM_DEBUG_BOOT_TIMEOUT) -- $(vm_boots_selected) || rc=1; \
	echo "check-debug-rt: the tests with boots of their own took $$(($$(date +%s) - t0)) s";) \
	$(if $(vm_pcap_selected),t0=$$(date +%s); \
	$(vm_debug_rt_env) tests/vm/host-pcap.sh $(vm_debug_rt_opts) --timeout $(VM_DEBUG_TIMEOUT) || rc=1; \
	echo "check-debug-rt: host-pcap on $$rel took $$(($$(date +%s) - t0)) s";) \
	exit $$rc

vm-shell-debug-rt: vm-debug-rt-files
	$(Q)$(vm_debug_rt_run) -i -- sh

.PHONY: check-debug-rt vm-debug-rt-files vm-check-debug-rt vm-shell-debug-rt

# --- the kernel matrix -------------------------------------------------------
# tools/kernels fetches Debian's other kernels (5.10, 6.12, 6.12-rt; 6.1 is
# the installed one) into ~/.cache/magnet/kernels; tests/vm/kernels builds
# magnet.ko against each one's headers, boots it, runs the suite and prints
# the table.
#   make check-kernels                          all four
#   make check-kernels KERNELS="5.10 6.12-rt" VM_TESTS=t-10
KERNELS ?=
# CI's share of it (.ci/run, make check-kernels-core): on the kernels other
# than 6.1 (which make check and make check-debug run whole), the build, a
# load, each probe type (kprobe, kretprobe, fentry, tracepoint; the sock,
# skb and switch handlers and the probe sets), each delivery mode, the
# control plane and magnetd.
KERNELS_CORE ?= 5.10 6.12 6.12-rt
VM_CORE_TESTS ?= t-00 t-10 t-12 t-20 t-22 t-24 t-25 t-27 t-30 t-42
# DKMS, in both: magnet-dkms's tree built by `dkms build -k` for each kernel
# of the run (about 15 s each), and KERNELS_DKMS_TESTS on KERNELS_DKMS_BOOT
# (default: the first kernel other than 6.1, whose DKMS build make check's
# package test boots) with the magnet.ko dkms built. KERNELS_DKMS=0: none.
KERNELS_DKMS ?= 1
KERNELS_DKMS_BOOT ?=
KERNELS_DKMS_TESTS ?= t-00 t-10

check-kernels-core:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) vm-check-kernels KERNELS="$(KERNELS_CORE)" VM_TESTS="$(VM_CORE_TESTS)"

# What check-kernels-core and check-debug-core boot, made ready without
# booting it. .ci/run runs each command in the background during the other
# stages: print-prepare-kernels prints one line per command, the target
# that needs it, a tab, the command.
prepare_matrix = tools/kernels fetch $(KERNELS_CORE)
prepare_debug_kernel = tools/debug-kernel >/dev/null
prepare-kernels:
	$(Q)$(prepare_matrix)
	$(Q)$(prepare_debug_kernel)
print-prepare-kernels:
	@printf '%s\t%s\n' check-kernels-core '$(prepare_matrix)' \
		check-debug-core '$(prepare_debug_kernel)'

check-kernels:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) vm-check-kernels

vm-check-kernels: vm-user-files
	$(Q)MAGNET_GUEST_FILES='$(strip $(GUEST_FILES))' VM_TESTS='$(VM_TESTS)' \
		VM_TEST_TIMEOUT=$(VM_TEST_TIMEOUT) VM_KERNELS_DKMS='$(KERNELS_DKMS)' \
		VM_KERNELS_DKMS_BOOT='$(KERNELS_DKMS_BOOT)' \
		VM_KERNELS_DKMS_TESTS='$(KERNELS_DKMS_TESTS)' tests/vm/kernels $(KERNELS)

.PHONY: check-kernels check-kernels-core prepare-kernels print-prepare-kernels vm-check-kernels
