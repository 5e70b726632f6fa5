#!/bin/sh
# Probes on the idle path: arch_cpu_idle and default_idle run after
# ct_idle_enter(), where RCU is not watching, so grace periods do not wait
# for them. kprobes and kretprobes there are refused; fentry probes are
# taken, and their hits must be skipped (counted as missed), never write
# into a ring a resize is freeing or read a filter set a filter change is
# freeing, while filters come and go and the rings are resized in a loop:
# the debug kernel (lockdep's RCU checks, KASAN) reports any such access.
. ./lib.sh

# 60 s on the debug kernel (kmemleak is one of its debugging options).
secs=20
[ -e /sys/kernel/debug/kmemleak ] && secs=60

load buf_size=65536
# kprobes and kretprobes there are refused, with the reason: 6.1's kprobes
# core itself walks RCU lists where RCU is not watching, before any handler
# of ours (lockdep: kernel/kprobes.c get_kprobe(), aggr_pre_handler(),
# kernel/trace/rethook.c). Nothing of a refused probe stays registered.
for f in arch_cpu_idle default_idle default_idle_call; do
	for t in kprobe kretprobe; do
		if magnet-ctl probe add $t $f >/dev/null 2>/tmp/err; then
			fail "$t $f accepted in the idle loop"
		fi
		grep -q "idle loop, where RCU is not watching" /tmp/err || fail "$t $f: $(cat /tmp/err)"
	done
done
echo "refused: $(cat /tmp/err)"
# Inside the function too (a kprobe that traps): the first offset kprobes
# itself takes (not between instructions, not an instruction it cannot
# single-step, such as 6.1's "jmp *x86_idle(%rip)") is refused by us.
off=1
while [ $off -le 16 ]; do
	if magnet-ctl probe add kprobe "arch_cpu_idle+$off" >/dev/null 2>/tmp/err; then
		fail "kprobe arch_cpu_idle+$off accepted in the idle loop"
	fi
	grep -q "idle loop, where RCU is not watching" /tmp/err && break
	echo "arch_cpu_idle+$off: $(cat /tmp/err)"
	off=$((off + 1))
done
[ $off -le 16 ] || fail "no offset in arch_cpu_idle that kprobes takes"
echo "refused: kprobe arch_cpu_idle+$off"
grep -q idle /sys/kernel/debug/kprobes/list &&
	fail "a refused probe stayed registered: $(cat /sys/kernel/debug/kprobes/list)"
magnet-ctl probe add kprobe cpuidle_not_available >/dev/null 2>&1 ||
	magnet-ctl probe add kprobe do_idle >/dev/null || fail "a kprobe beside the idle loop was refused"
unload
dmesg -c >/dev/null
if insmod /magnet/magnet.ko probes=kprobe:arch_cpu_idle 2>/dev/null; then
	unload
	fail "probes=kprobe:arch_cpu_idle loaded"
fi
dmesg | grep "arch_cpu_idle" || fail "no reason given for probes=kprobe:arch_cpu_idle"

# fentry probes: taken, their hits skipped.
load buf_size=65536
for f in arch_cpu_idle default_idle; do
	magnet-ctl probe add fentry $f >/dev/null || fail "fentry $f"
done
magnet-ctl probe list

end=$(($(date +%s) + secs))
sizes="131072 65536 262144 65536"
n=0
while [ "$(date +%s)" -lt $end ]; do
	for f in arch_cpu_idle default_idle; do
		id=$(magnet-ctl -j filter add "$f" exclude tgid 1 | tr -dc 0-9) ||
			fail "filter add $f"
		magnet-ctl filter del "$f" "$id" || fail "filter del $f $id"
	done
	for s in $sizes; do
		magnet-ctl buffer set size "$s" || fail "resize to $s"
	done
	n=$((n + 1))
	sleep 0.05	# let the CPUs idle between rounds
done
echo "rounds of filter changes and resizes: $n in $secs s"

# Which of the two a CPU idles in depends on the kernel (6.1's x86_idle
# static call may go elsewhere): every hit was skipped, none recorded.
for f in arch_cpu_idle default_idle; do
	missed=$(counter $f missed)
	recorded=$(counter $f recorded)
	echo "fentry $f: missed $missed recorded $recorded"
	[ "${recorded:-1}" = 0 ] || fail "$f: $recorded records written where RCU was not watching"
done
[ "$(counter arch_cpu_idle missed)" -gt 0 ] || fail "the idle loop's hits were not counted as missed"
unload
