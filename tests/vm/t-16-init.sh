#!/bin/sh
# A load that fails (a bad probes= entry) while readers hammer the data
# files: the files appear only once nothing can fail any more, so no open
# file outlives the module's text (the guest oopses otherwise).
. ./lib.sh
rm -f /tmp/stop-hammer
hammer() {
	# (2> first: a failed < is the shell's message, sent where 2 goes then;
	# thousands on the console make the serial port's interrupt thread on
	# PREEMPT_RT under TCG fall behind until the kernel disables its IRQ)
	while [ ! -e /tmp/stop-hammer ]; do
		{ sleep 0.05; } 2>/dev/null </sys/kernel/debug/magnet/cpu0
		{ :; } 2>/dev/null </sys/kernel/debug/magnet/cpu1
	done
}
hammer &
h1=$!
hammer &
h2=$!
# 30 loads; 5 on the debug kernel, where each takes 10 s and KASAN
# catches an open file that outlives the module's text at once.
n=30
! debug_kernel || n=5
i=0
while [ $i -lt $n ]; do
	insmod /magnet/magnet.ko probes=kprobe:vfs_read,kretprobe:vfs_write,kprobe:nope_nope \
		2>/dev/null && fail "a load with a bad probe succeeded"
	i=$((i + 1))
done
touch /tmp/stop-hammer
wait $h1 $h2
grep -q magnet /proc/modules && fail "module left loaded"
echo "$n failed loads under open() hammering: no oops"
# And a good load still works afterwards.
load probes=kprobe:__x64_sys_getpid
mgtest getpid 100 || fail "records after the failed loads"
unload
