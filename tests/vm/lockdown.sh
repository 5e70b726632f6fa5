#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run by `make vm-check-lockdown` (check-debug) in a guest of the debug
# kernel booted with lockdown=integrity, as a Secure Boot node runs: not
# part of the suite, it needs its own command line.
#
#   sh /magnet/tests/vm/lockdown.sh [PATTERN...]
#
# First it proves lockdown is really on, so that the tests after it cannot
# pass by its absence: the level is [integrity]; an unsigned copy of
# magnet.ko is refused (the signed one loads); debugfs refuses the cpuN
# files (EPERM) and still serves the read-only control files. A ring whose
# device is gone fails with a message naming both refusals. Then the suite
# runs the tests PATTERN names, which find /dev/magnet/cpuN by themselves.
# shellcheck source=tests/vm/lib.sh
. /magnet/tests/vm/lib.sh

S=/sys/kernel/security
grep -q " $S securityfs " /proc/mounts || mount -t securityfs none $S || fail "mount securityfs"
echo "lockdown: $(cat $S/lockdown)"
grep -q '\[integrity\]' $S/lockdown || fail "lockdown is not integrity: $(cat $S/lockdown)"

# An unsigned copy: the signature, its 12-byte trailer (sig_len last, big
# endian) and the 28-byte marker cut off.
ko=/magnet/magnet.ko
size=$(stat -c %s $ko)
[ "$(tail -c 28 $ko)" = "~Module signature appended~" ] || fail "$ko is not signed"
siglen=$(tail -c 32 $ko | head -c 4 | od -An -tu1 |
	awk '{ print (($1 * 256 + $2) * 256 + $3) * 256 + $4 }')
head -c $((size - 28 - 12 - siglen)) $ko >/tmp/unsigned.ko
insmod /tmp/unsigned.ko 2>/tmp/e && { rmmod magnet; fail "an unsigned magnet.ko loaded"; }
echo "unsigned magnet.ko: $(cat /tmp/e)"
load
echo "signed magnet.ko: loaded"

# debugfs: cpuN refused, the control files served.
for f in /sys/kernel/debug/magnet/cpu*; do
	# dd count=0 opens and reads nothing: it never waits for records.
	dd if="$f" of=/dev/null count=0 2>/tmp/e && fail "$f opened under lockdown"
	grep -q "Operation not permitted" /tmp/e || fail "$f: $(cat /tmp/e), want EPERM"
done
echo "debugfs cpuN: $(cat /tmp/e)"
for f in version probes stats buffers jobs; do
	cat /sys/kernel/debug/magnet/$f >/dev/null || fail "control file $f refused under lockdown"
done
echo "debugfs version, probes, stats, buffers, jobs: readable"
ls /dev/magnet/cpu0 >/dev/null || fail "no /dev/magnet/cpu0"

# Neither name: the tools say why for each.
rm /dev/magnet/cpu0
magnet-read -t 1 -o /tmp/x.mgt 2>/tmp/e && fail "magnet-read ran without a ring to open"
grep -q "cpu0: Operation not permitted (kernel lockdown?); /dev/magnet/cpu0: No such file" /tmp/e ||
	fail "magnet-read with neither: $(cat /tmp/e)"
echo "neither name: $(cat /tmp/e)"
unload	# and the device comes back with the next load

# The suite's tests, on their own.
exec /magnet/tests/vm/suite "$@"
