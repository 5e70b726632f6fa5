#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Smoke test: the guest is what every other VM test assumes, and magnet.ko
# (when it has been built) loads and unloads cleanly.

fail() { echo "FAIL: $*"; exit 1; }

mounted() { # type mountpoint
	grep -q "^[^ ]* $2 $1 " /proc/mounts || fail "$1 not mounted on $2"
}

mounted debugfs /sys/kernel/debug
mounted tmpfs /tmp
mounted cgroup2 /sys/fs/cgroup

# kprobes: the core's debugfs switch (writable: lockdown refuses it), and
# the symbol for modules to link to.
if enabled=$(cat /sys/kernel/debug/kprobes/enabled 2>/dev/null); then
	[ "$enabled" = 1 ] || fail "kprobes are disabled"
else
	grep -qw register_kprobe /proc/kallsyms || fail "no kprobes in this kernel"
fi

ip link show lo | grep -q '[<,]UP[,>]' || fail "lo is not up"
echo "kernel $(uname -r), $(nproc) CPUs"

if [ ! -e /magnet/magnet.ko ]; then
	echo "no /magnet/magnet.ko (module not built): skipping insmod/rmmod"
	exit 0
fi
insmod /magnet/magnet.ko || fail "insmod magnet.ko"
[ -d /sys/module/magnet ] || fail "magnet not in /sys/module after insmod"
[ -r /sys/kernel/debug/magnet/version ] && sed 's/^/magnet\/version: /' /sys/kernel/debug/magnet/version
rmmod magnet || fail "rmmod magnet"
[ ! -d /sys/module/magnet ] || fail "magnet still loaded after rmmod"
echo "insmod/rmmod magnet.ko ok"
