#!/bin/sh
# Run by `make vm-check` in a guest booted with debugfs=off (not part of the
# suite: it needs its own boot). magnet cannot create its files there: the
# load must fail with a log line that says why, leave nothing behind, and
# not oops (the harness fails the run on any kernel problem).
# shellcheck source=tests/vm/lib.sh
. /magnet/tests/vm/lib.sh
dmesg -c >/dev/null
if insmod /magnet/magnet.ko 2>/dev/null; then
	rmmod magnet
	fail "insmod succeeded with debugfs=off"
fi
grep -q magnet /proc/modules && fail "module left loaded"
dmesg | grep -q "cannot create /sys/kernel/debug/magnet.*disabled" ||
	fail "no log line saying debugfs is disabled"
echo "debugfs=off: $(dmesg | grep 'cannot create' | sed 's/^\[[^]]*\] //')"
# Twice: the first failure must have unwound everything it set up.
insmod /magnet/magnet.ko 2>/dev/null && fail "second insmod succeeded"
echo "debugfs=off: refused twice, nothing left behind"
