#!/bin/sh
# Unload safety: rmmod while probes fire at full rate succeeds cleanly; while
# a reader holds a ring (blocked in read, in poll, with AIO pending, by a
# mapping alone, or magnet-read draining) it is refused with EBUSY and the
# reader is unaffected; once readers are gone it succeeds, and no ring
# memory leaks.
. ./lib.sh

vmalloc_count() { wc -l </proc/vmallocinfo; }

vm0=$(vmalloc_count)

for _ in 1 2 3 4 5; do
	load probes=kprobe:__x64_sys_getpid,kretprobe:vfs_read:3,kprobe:vfs_write:2:64@1
	mgtest fire 3 >/dev/null &
	firer=$!
	cat /sys/kernel/debug/magnet/cpu0 >/dev/null &
	cat=$!
	sleep 1
	kill $cat
	wait $cat
	unload			# while the firer is still going at full rate
	kill $firer 2>/dev/null
	wait $firer
done
echo "rmmod under full-rate firing: 5 cycles ok"

load probes=kprobe:__x64_sys_getpid
for mode in read poll aio mmap; do
	mgtest hold $mode &
	holder=$!
	sleep 1
	if rmmod magnet 2>/tmp/rmmod.err; then
		fail "rmmod succeeded with a $mode reader attached"
	fi
	grep -qi "in use\|busy\|resource" /tmp/rmmod.err || fail "rmmod: unexpected error: $(cat /tmp/rmmod.err)"
	grep -q "^magnet " /proc/modules || fail "module gone after a refused rmmod"
	mgtest fire-n 100 >/dev/null
	kill -0 $holder 2>/dev/null || fail "the $mode reader died"
	kill $holder
	wait $holder 2>/dev/null
	echo "rmmod refused with a $mode reader attached; reader unharmed"
done

magnet-read -o /tmp/unload.trace 2>/tmp/read.err &
reader=$!
sleep 1
mgtest fire-n 500 >/dev/null
rmmod magnet 2>/dev/null && fail "rmmod succeeded while magnet-read runs"
kill -INT $reader
wait $reader || fail "magnet-read failed: $(cat /tmp/read.err)"
magnet-dump /tmp/unload.trace >/dev/null || fail "trace not decodable after the refused rmmod"
echo "rmmod refused while magnet-read runs; its trace is complete"
unload

# Leaks: ring memory is vmalloc'ed, so a leaked ring shows here exactly.
# (kmalloc objects are checked where they can be: t-21 compares them over
# 1000 cycles of one process; across the process churn of this test they
# swing by hundreds either way with per-CPU slabs and RCU-deferred frees.)
vm1=$(vmalloc_count)
echo "vmalloc areas $vm0 -> $vm1"
[ "$vm1" -le "$vm0" ] || fail "vmalloc areas grew by $((vm1 - vm0)): ring memory leaked"
