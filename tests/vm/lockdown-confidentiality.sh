#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run by `make vm-check-lockdown` in a guest of the debug kernel booted
# with lockdown=confidentiality (its own command line: not in the suite).
# What magnet can do at that level, and what the kernel refuses there,
# each asserted (docs/magnet.md, Lockdown):
#   - refused: tracefs (the kernel's own kprobe events, ftrace), as at this
#     level only; debugfs's cpuN (EPERM), as at integrity;
#   - refused: tracepoint probes, found in the event list that tracing's
#     setup makes, which the kernel skips at this level (magnet's EPERM);
#   - served: the signed module; the other probe types of magnet-ctl
#     (kprobe, kretprobe, fentry) and memory captures, kernel and user,
#     since register_kprobe(), ftrace_ops and the nofault copies check no
#     lockdown reason (LOCKDOWN_KPROBES guards tracefs's kprobe_events
#     and perf's kprobe PMU, not the in-kernel API); the records, through
#     /dev/magnet.
# shellcheck source=tests/vm/lib.sh
. /magnet/tests/vm/lib.sh

S=/sys/kernel/security
grep -q " $S securityfs " /proc/mounts || mount -t securityfs none $S || fail "mount securityfs"
echo "lockdown: $(cat $S/lockdown)"
grep -q '\[confidentiality\]' $S/lockdown || fail "lockdown is not confidentiality: $(cat $S/lockdown)"

# tracefs: the kernel creates none of its files at this level
# (tracefs_create_file() checks LOCKDOWN_TRACEFS), kprobe_events included.
TR=/sys/kernel/tracing
for f in kprobe_events trace available_filter_functions; do
	[ -e $TR/$f ] && fail "tracefs has $f under confidentiality"
done
echo 'p:mgld __x64_sys_getpid' 2>/tmp/e >$TR/kprobe_events && fail "tracefs took a kprobe event"
n=$(find $TR -mindepth 1 | wc -l)
echo "tracefs: $n entries; kprobe_events: $(cat /tmp/e)"

load
dd if=/sys/kernel/debug/magnet/cpu0 of=/dev/null count=0 2>/tmp/e && fail "debugfs cpu0 opened"
grep -q "Operation not permitted" /tmp/e || fail "debugfs cpu0: $(cat /tmp/e)"
echo "debugfs cpu0: $(cat /tmp/e)"

# Every probe type, and captures of kernel and user memory.
add() { # name, then magnet-ctl probe add's words
	n=$1; shift
	magnet-ctl probe add "$@" name "$n" >/tmp/add 2>&1 || fail "probe add $*: $(cat /tmp/add)"
	echo "probe add $*: ok"
}
add kp kprobe __x64_sys_getpid
add krp kretprobe __x64_sys_getpid
add fe fentry __do_sys_getpid
add kcap kprobe vfs_read args 3 capture 16@0
add ucap kprobe vfs_write args 3 capture 16@1
# Tracepoints are found in the kernel's event list, which tracing's setup
# makes, and at this level the kernel does not set tracing up at all.
magnet-ctl probe add tracepoint raw_syscalls:sys_enter 2>/tmp/e >/dev/null
rc=$?
[ $rc = 2 ] || fail "probe add tracepoint: exit $rc, want the kernel's refusal (2): $(cat /tmp/e)"
grep -q "lockdown=confidentiality: the kernel set up no event list" /tmp/e ||
	fail "probe add tracepoint: $(cat /tmp/e)"
echo "probe add tracepoint: refused: $(cat /tmp/e)"

magnet-read -o /tmp/ld.mgt 2>/tmp/ld.err &
rpid=$!
written /tmp/ld.mgt /tmp/ld.err "magnet-read wrote no header"
mgtest fire-n 1000 >/dev/null &
fpid=$!
wait $fpid
echo "lockdown test" >/tmp/w
cat /tmp/w >/dev/null
# vfs_read and vfs_write fire at every step (this shell's too): quiet
# them, so the rings can drain.
magnet-ctl probe disable kcap || fail "probe disable kcap"
magnet-ctl probe disable ucap || fail "probe disable ucap"
rings_empty "magnet-read left records in the rings"
kill -INT $rpid
wait $rpid || fail "magnet-read: $(cat /tmp/ld.err)"
magnet-dump -j /tmp/ld.mgt >/tmp/ld.json || fail "magnet-dump"
for p in kp krp fe kcap ucap; do
	got=$(grep -c "\"event\":\"$p\"" /tmp/ld.json)
	[ "$got" -gt 0 ] || fail "no record of probe $p: $(magnet-ctl probe list)"
	echo "probe $p: $got records"
done
for p in kp krp fe; do
	got=$(grep "\"event\":\"$p\"" /tmp/ld.json | grep -c "\"tgid\":$fpid,")
	[ "$got" = 1000 ] || fail "probe $p: $got records of mgtest's, want its 1000 getpid() calls"
done
echo "kprobe, kretprobe, fentry: 1000 of 1000 getpid() calls each"
# A capture's len is 0 when the memory could not be read (UAPI header).
grep '"event":"kcap"' /tmp/ld.json | grep -q '"capture":{"arg":0,"len":16,' ||
	fail "no kernel memory captured: $(grep '"event":"kcap"' /tmp/ld.json | head -n 3)"
echo "kernel-memory capture: 16 bytes of vfs_read's struct file"
# "lockdown test", in hex.
grep '"event":"ucap"' /tmp/ld.json | grep -q '"len":16,"hex":"6c6f636b646f776e2074657374' ||
	fail "the user capture lacks what was written: $(grep '"event":"ucap"' /tmp/ld.json | head -n 3)"
echo "user-memory capture: the bytes written"
unload
