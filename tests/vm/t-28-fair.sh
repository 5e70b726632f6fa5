#!/bin/sh
# Per-job fairness (UAPI FAIRNESS). Job A (a cgroup) calls getpid() on
# CPU 0 as fast as it can, job B 1000 times a second there, the reader of
# cpu0 is slower than A: with the rule on (the default), B loses none of
# its records and A's losses are exact, in band (JOB_LOST records) and per
# job (magnet/jobs); with fair=0, B loses as A does. Then the threshold's
# parameter, netlink and magnet-ctl, and a job alone is never held back.
. ./lib.sh
P=/sys/module/magnet/parameters/fair
M=/sys/kernel/debug/magnet

# A small ring: the flood reaches the threshold within a second, however
# slow the kernel (the debug kernel's getpid is 10 times Debian's).
load buf_size=128K probes=kprobe:__x64_sys_getpid
[ "$(cat $P)" = 50 ] || fail "fair= defaults to $(cat $P), not 50"
awk -F'\t' 'NR == 1 && $6 != "fair" || NR > 1 && $6 != 50 { bad = 1 } END { exit bad }' $M/buffers ||
	fail "magnet/buffers: $(cat $M/buffers)"
fairtest on 3 || fail "fairness: B must lose nothing, A's losses exact"
# Which job lost how much: A's cgroup tops the list, B lost nothing.
magnet-ctl buffer show >/tmp/show || fail "buffer show"
cat /tmp/show
grep -q "fair 50%" /tmp/show || fail "buffer show: no threshold"
awk 'NR == 3 && $1 == "/mgfairA" && $3 > 0 { a = 1 } $1 == "/mgfairB" && $3 == 0 && $5 == 0 { b = 1 }
	END { exit !(a && b) }' /tmp/show || fail "buffer show: A should top the losses, B lose none"
magnet-ctl -j buffer show | grep -q '"fair":50,"jobs":\[{"cgroup":' || fail "buffer show -j: $(magnet-ctl -j buffer show)"
awk -F'\t' 'NR > 1 { f += $9 } END { exit !(f > 0) }' $M/stats || fail "stats: no lost_fair: $(cat $M/stats)"
unload

load fair=0 buf_size=128K probes=kprobe:__x64_sys_getpid
fairtest off 3 || fail "without the rule B must lose too (the flood fills the ring)"
unload
rmdir /sys/fs/cgroup/mgfairA /sys/fs/cgroup/mgfairB /sys/fs/cgroup/mgfairA0 /sys/fs/cgroup/mgfairB0 ||
	fail "rmdir the jobs"

# The threshold: refused out of range, changed at runtime, readers or not.
for v in 100 -1 x 50x; do
	if insmod /magnet/magnet.ko fair=$v 2>/dev/null; then
		rmmod magnet
		fail "fair=$v accepted"
	fi
	dmesg | tail -n 5 | grep -q "fair=$v: expected a percentage" || fail "fair=$v: no message"
done
load buf_size=65536 probes=kprobe:__x64_sys_getpid
echo 30 >$P || fail "write fair"
[ "$(cat $P)" = 30 ] || fail "fair reads $(cat $P) after 30"
echo 100 >$P 2>/dev/null && fail "fair 100 written"
magnet-read -o /dev/null 2>/tmp/read.err &
RPID=$!
sleep 0.5
magnet-ctl buffer set fair off || fail "buffer set fair off with a reader attached"
[ "$(cat $P)" = 0 ] || fail "fair reads $(cat $P) after 'fair off'"
magnet-ctl buffer show | grep -q "fair off" || fail "buffer show after fair off"
magnet-ctl buffer set fair 99 || fail "buffer set fair 99"
magnet-ctl buffer set fair 100 2>/dev/null && fail "buffer set fair 100 accepted"
magnet-ctl buffer set size 128K fair 20 2>/tmp/err && fail "resize with a reader attached"
[ "$(cat $P)" = 99 ] || fail "a refused BUFFER_SET changed the threshold to $(cat $P)"
kill -INT $RPID
wait $RPID
unload

# A job alone on a full ring: exactly the accounting without the rule.
load buf_size=65536 probes=kprobe:__x64_sys_getpid
mgtest account 20000 || fail "one job, full ring"
awk -F'\t' 'NR > 1 { f += $9 } END { exit f }' $M/stats || fail "one job alone was held back: $(cat $M/stats)"
unload
