#!/bin/sh
# Records tell the truth about their context. A kprobe that traps (an offset
# past ftrace's call site) runs its handler inside the int3 trap's NMI-like
# entry; its records of a syscall are still task context, and those of a
# softirq still interrupt context. A probed function that magnet's own
# record path calls (the capture's nofault copy) is not recorded as the
# user's. Sampling by interval lets the first hit through.
. ./lib.sh

# The first instruction boundary past ftrace's call site that kprobes takes
# without ftrace: prints the probe's name.
trap_probe() { # function
	off=1
	while [ $off -le 24 ]; do
		if magnet-ctl probe add kprobe "$1+$off" >/dev/null 2>&1; then
			if grep -q "$1+0x$(printf %x $off) .*FTRACE" /sys/kernel/debug/kprobes/list; then
				magnet-ctl probe del "$1+$off"
			else
				echo "$1+$off"
				return 0
			fi
		fi
		off=$((off + 1))
	done
	return 1
}

read_for() { # seconds out
	magnet-read -t "$1" -o "$2" 2>/tmp/read.err || fail "magnet-read: $(cat /tmp/read.err)"
}

# Every hit a trap: as kprobes are before the optimizer's delay has passed,
# or where it is switched off. (Ours are never optimized: checked below.)
opt=/proc/sys/debug/kprobes-optimization
[ -e $opt ] && echo 0 >$opt
load buf_size=1048576
sys=$(trap_probe __x64_sys_getpid) || fail "no trapping offset in __x64_sys_getpid"
soft=$(trap_probe run_timer_softirq) || fail "no trapping offset in run_timer_softirq"
grep "__x64_sys_getpid\|run_timer_softirq" /sys/kernel/debug/kprobes/list
magnet-read -o /tmp/ctx.mgt 2>/tmp/read.err &
rpid=$!
written /tmp/ctx.mgt /tmp/read.err "magnet-read wrote no header"
mgtest fire-n 2000 >/dev/null &
fpid=$!
wait $fpid
sleep 1	# timers tick meanwhile
# Disarmed before the rings must be empty: ticks (and any task's getpid)
# would refill them faster than a slow guest's reader wakes.
magnet-ctl probe disable "$soft" || fail "probe disable $soft"
magnet-ctl probe disable "$sys" || fail "probe disable $sys"
rings_empty "magnet-read left records in the rings" $rpid
kill -INT $rpid
wait $rpid || fail "magnet-read: $(cat /tmp/read.err)"
magnet-ctl probe enable "$soft" || fail "probe enable $soft"
magnet-ctl probe enable "$sys" || fail "probe enable $sys"
magnet-dump -j /tmp/ctx.mgt >/tmp/ctx.json
n=$(grep -c "\"tgid\":$fpid,.*\"event\":\"$sys\"" /tmp/ctx.json)
intr=$(grep "\"tgid\":$fpid,.*\"event\":\"$sys\"" /tmp/ctx.json | grep -c '"intr":true')
echo "$sys in a syscall: $n records, $intr flagged interrupt"
[ "$n" = 2000 ] || fail "$sys: $n of 2000 records"
[ "$intr" = 0 ] || fail "$sys: $intr of $n syscall records flagged interrupt context"
n=$(grep -c "\"event\":\"$soft\"" /tmp/ctx.json)
task=$(grep "\"event\":\"$soft\"" /tmp/ctx.json | grep -c '"intr":false')
echo "$soft in the timer softirq: $n records, $task flagged task"
[ "$n" -gt 0 ] || fail "$soft: no record in a second of timer ticks"
[ "$task" = 0 ] || fail "$soft: $task of $n softirq records not flagged interrupt context"
# The optimizer on again: it acts within a few jiffies; ours stay traps.
if [ -e $opt ]; then
	echo 1 >$opt
	mgtest fire-n 1000 >/dev/null
	sleep 1
	grep "OPTIMIZED" /sys/kernel/debug/kprobes/list &&
		fail "a trapping kprobe was jump-optimized"
fi
unload

# A capture's nofault copy, itself probed: the capture's records only.
load buf_size=1048576
magnet-ctl probe add fentry vfs_write args 3 capture 16@1 >/dev/null || fail "fentry vfs_write"
magnet-ctl probe add fentry copy_from_user_nofault >/dev/null ||
	fail "fentry copy_from_user_nofault"
magnet-read -o /tmp/self.mgt 2>/tmp/read.err &
rpid=$!
# Not the reader's own writes: each would make a record for it to write.
magnet-ctl filter add vfs_write exclude tgid $rpid >/dev/null || fail "filter add"
magnet-ctl filter add copy_from_user_nofault exclude tgid $rpid >/dev/null || fail "filter add"
written /tmp/self.mgt /tmp/read.err "magnet-read wrote no header"
sh -c 'i=0; while [ $i -lt 500 ]; do echo magnet >/dev/null; i=$((i + 1)); done' &
wpid=$!
wait $wpid
# Other tasks' writes would refill the rings: disarmed first.
magnet-ctl probe disable vfs_write || fail "probe disable vfs_write"
magnet-ctl probe disable copy_from_user_nofault || fail "probe disable copy_from_user_nofault"
rings_empty "magnet-read left records in the rings" $rpid
kill -INT $rpid
wait $rpid || fail "magnet-read: $(cat /tmp/read.err)"
magnet-dump -j /tmp/self.mgt >/tmp/self.json
w=$(grep "\"tgid\":$wpid,.*\"event\":\"vfs_write\"" /tmp/self.json | grep -c '"len":16')
c=$(grep -c "\"tgid\":$wpid,.*\"event\":\"copy_from_user_nofault\"" /tmp/self.json)
missed=$(counter copy_from_user_nofault missed)
echo "500 writes: $w captured, $c nofault copies recorded for the writer, $missed skipped"
[ "$w" = 500 ] || fail "$w of 500 writes captured"
[ "$c" = 0 ] || fail "magnet's own nofault copies recorded as the writer's: $c"
[ "$missed" -ge 500 ] || fail "copy_from_user_nofault: missed $missed, want >= 500 (each capture's copy)"
unload

# An interval longer than the guest's uptime: the first hit passes. (getppid:
# each shell calls it once as it starts, and magnet-ctl never does.)
load probes=kprobe:__x64_sys_getppid
magnet-ctl sample set __x64_sys_getppid interval 1000s || fail "sample set interval"
i=0
while [ $i -lt 50 ]; do sh -c : ; i=$((i + 1)); done
r=$(counter __x64_sys_getppid recorded)
s=$(counter __x64_sys_getppid sampled)
echo "interval 1000 s: $r recorded, $s sampled of 50 shells' getppid"
if [ "$r" != 1 ] || [ "$s" -lt 49 ]; then
	fail "interval 1000 s: recorded $r sampled $s, want 1 and >= 49"
fi
unload
