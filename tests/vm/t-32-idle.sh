#!/bin/sh
# Probes on the idle path: arch_cpu_idle and default_idle run after
# ct_idle_enter(), where RCU is not watching, so grace periods do not wait
# for them. kprobes and kretprobes there are refused; fentry probes are
# taken, and their hits must be skipped (counted as missed), never write
# into a ring a resize is freeing or read a filter set a filter change is
# freeing, while filters come and go and the rings are resized in a loop:
# the debug kernel (lockdep's RCU checks, KASAN) reports any such access.
. ./lib.sh

# 60 s on the debug kernel.
secs=20
! debug_kernel || secs=60

load buf_size=65536
# kprobes and kretprobes there are refused, with the reason: 6.1's kprobes
# core itself walks RCU lists where RCU is not watching, before any handler
# of ours (lockdep: kernel/kprobes.c get_kprobe(), aggr_pre_handler(),
# kernel/trace/rethook.c). Nothing of a refused probe stays registered.
# Newer kernels (6.12) build the idle functions noinstr, and kprobes
# refuses them itself: a refusal all the same.
kernel_refuses=
for f in arch_cpu_idle default_idle default_idle_call; do
	for t in kprobe kretprobe; do
		if magnet-ctl probe add $t $f >/dev/null 2>/tmp/err; then
			fail "$t $f accepted in the idle loop"
		fi
		if grep -q "refused by kprobes (blacklisted" /tmp/err; then
			kernel_refuses="$kernel_refuses $t:$f"
			continue
		fi
		grep -q "idle loop, where RCU is not watching" /tmp/err || fail "$t $f: $(cat /tmp/err)"
		echo "refused: $(cat /tmp/err)"
	done
done
[ -z "$kernel_refuses" ] || echo "refused by kprobes itself (noinstr on this kernel):$kernel_refuses"
# Inside the function too (a kprobe that traps): the first offset kprobes
# itself takes (not between instructions, not an instruction it cannot
# single-step, such as 6.1's "jmp *x86_idle(%rip)") is refused by us.
# Where kprobes refuses the whole function, no offset is ours to refuse.
off=1
case $kernel_refuses in *kprobe:arch_cpu_idle*) off=none ;; esac
while [ "$off" != none ] && [ $off -le 16 ]; do
	if magnet-ctl probe add kprobe "arch_cpu_idle+$off" >/dev/null 2>/tmp/err; then
		fail "kprobe arch_cpu_idle+$off accepted in the idle loop"
	fi
	grep -q "idle loop, where RCU is not watching" /tmp/err && break
	echo "arch_cpu_idle+$off: $(cat /tmp/err)"
	off=$((off + 1))
done
[ "$off" = none ] || [ $off -le 16 ] || fail "no offset in arch_cpu_idle that kprobes takes"
[ "$off" = none ] || echo "refused: kprobe arch_cpu_idle+$off"
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

# fentry probes: taken, their hits skipped. A noinstr function has no
# fentry call: ftrace cannot reach it, and the add says so.
load buf_size=65536
traced=
for f in arch_cpu_idle default_idle; do
	if magnet-ctl probe add fentry $f >/dev/null 2>/tmp/err; then
		traced="$traced $f"
	elif [ -n "$kernel_refuses" ] && grep -q "no traceable function of this name" /tmp/err; then
		echo "fentry $f refused: $(cat /tmp/err)"
	else
		fail "fentry $f: $(cat /tmp/err)"
	fi
done
if [ -z "$traced" ]; then
	unload
	echo "this kernel's idle functions are noinstr: kprobes and ftrace refuse them, so no hit where RCU is not watching can reach magnet"
	exit 77
fi
magnet-ctl probe list

end=$(($(date +%s) + secs))
sizes="131072 65536 262144 65536"
n=0
while [ "$(date +%s)" -lt $end ]; do
	for f in $traced; do
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
all_missed=0
for f in $traced; do
	missed=$(counter "$f" missed)
	recorded=$(counter "$f" recorded)
	echo "fentry $f: missed $missed recorded $recorded"
	[ "${recorded:-1}" = 0 ] || fail "$f: $recorded records written where RCU was not watching"
	all_missed=$((all_missed + missed))
done
[ "$all_missed" -gt 0 ] || fail "the idle loop's hits were not counted as missed"
unload
