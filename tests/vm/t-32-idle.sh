#!/bin/sh
# Probes on the idle path: arch_cpu_idle and default_idle run after
# ct_idle_enter(), where RCU is not watching, so grace periods do not wait
# for them. Their hits must be skipped (counted as missed), never write into
# a ring a resize is freeing or read a filter set a filter change is
# freeing. Kprobes, kretprobes and fentry probes on both, while filters come
# and go and the rings are resized in a loop: the debug kernel (lockdep's
# RCU checks, KASAN) reports any such access; here every idle hit must
# show up as missed, none as a record.
. ./lib.sh

# 60 s on the debug kernel (kmemleak is one of its debugging options).
secs=20
[ -e /sys/kernel/debug/kmemleak ] && secs=60

load buf_size=65536
for f in arch_cpu_idle default_idle; do
	magnet-ctl probe add kprobe $f >/dev/null || fail "kprobe $f"
	magnet-ctl probe add kretprobe $f >/dev/null || fail "kretprobe $f"
	magnet-ctl probe add fentry $f name "fentry-$f" >/dev/null || fail "fentry $f"
done
magnet-ctl probe list

end=$(($(date +%s) + secs))
sizes="131072 65536 262144 65536"
n=0
while [ "$(date +%s)" -lt $end ]; do
	for f in arch_cpu_idle default_idle; do
		for p in $f "$f%return" "fentry-$f"; do
			id=$(magnet-ctl -j filter add "$p" exclude tgid 1 | tr -dc 0-9) ||
				fail "filter add $p"
			magnet-ctl filter del "$p" "$id" || fail "filter del $p $id"
		done
	done
	for s in $sizes; do
		magnet-ctl buffer set size $s || fail "resize to $s"
	done
	n=$((n + 1))
	sleep 0.05	# let the CPUs idle between rounds
done
echo "rounds of filter changes and resizes: $n in $secs s"

magnet-ctl probe list
# Which of the two a CPU idles in depends on the kernel (6.1's x86_idle
# static call may go elsewhere): every probe that was hit was skipped.
hit=
for name in arch_cpu_idle arch_cpu_idle%return fentry-arch_cpu_idle \
	default_idle default_idle%return fentry-default_idle; do
	missed=$(counter "$name" missed)
	recorded=$(counter "$name" recorded)
	echo "$name: missed $missed recorded $recorded"
	[ "${missed:-0}" -gt 0 ] && hit="$hit $name"
	[ "${recorded:-1}" = 0 ] || fail "$name: $recorded records written where RCU was not watching"
done
case $hit in
*"arch_cpu_idle arch_cpu_idle%return fentry-arch_cpu_idle"*) ;;
*) fail "the idle loop's hits were not counted as missed (only:$hit)" ;;
esac
unload
