#!/bin/sh
# Probes on the idle path: arch_cpu_idle and default_idle run after
# ct_idle_enter(), where RCU is not watching, so grace periods do not wait
# for them. Their hits must be skipped (counted as missed), never write into
# a ring a resize is freeing or read a filter set a filter change is
# freeing, while filters come and go and the rings are resized in a loop:
# the debug kernel (lockdep's RCU checks, KASAN) reports any such access.
. ./lib.sh

# 60 s on the debug kernel (kmemleak is one of its debugging options).
secs=20
[ -e /sys/kernel/debug/kmemleak ] && secs=60

load buf_size=65536
# On the debug kernel, only fentry probes: there 6.1's kprobes core itself
# walks RCU lists where RCU is not watching (get_kprobe() from
# kprobe_ftrace_handler(), aggr_pre_handler(), rethook: lockdep reports
# kernel/kprobes.c:382 and :1196, kernel/trace/rethook.c:88 before any
# handler of ours runs), as it would for any kprobe user.
types="kprobe kretprobe fentry"
[ -e /sys/kernel/debug/kmemleak ] && types=fentry
for f in arch_cpu_idle default_idle; do
	for t in $types; do
		magnet-ctl probe add $t $f name "$t-$f" >/dev/null || fail "$t $f"
	done
done
magnet-ctl probe list

end=$(($(date +%s) + secs))
sizes="131072 65536 262144 65536"
n=0
while [ "$(date +%s)" -lt $end ]; do
	for f in arch_cpu_idle default_idle; do
		for t in $types; do
			id=$(magnet-ctl -j filter add "$t-$f" exclude tgid 1 | tr -dc 0-9) ||
				fail "filter add $t-$f"
			magnet-ctl filter del "$t-$f" "$id" || fail "filter del $t-$f $id"
		done
	done
	for s in $sizes; do
		magnet-ctl buffer set size $s || fail "resize to $s"
	done
	n=$((n + 1))
	sleep 0.05	# let the CPUs idle between rounds
done
echo "rounds of filter changes and resizes: $n in $secs s"

# Which of the two a CPU idles in depends on the kernel (6.1's x86_idle
# static call may go elsewhere): every hit was skipped, none recorded.
for f in arch_cpu_idle default_idle; do
	for t in $types; do
		missed=$(counter "$t-$f" missed)
		recorded=$(counter "$t-$f" recorded)
		echo "$t-$f: missed $missed recorded $recorded"
		[ "${recorded:-1}" = 0 ] || fail "$t-$f: $recorded records written where RCU was not watching"
		[ $f = default_idle ] || [ "${missed:-0}" -gt 0 ] ||
			fail "$t-$f: the idle loop's hits were not counted as missed"
	done
done
unload
