#!/bin/sh
# Each job's traffic since magnetd started, by its sockets: the net-jobs
# probe set, magnetd's TOTALS and Prometheus page checked by nettest
# against the bytes three jobs in their own cgroups (and a server in a
# fourth) send and receive over TCP, TCP over IPv6 and UDP on lo, exactly
# (TCP's each byte once, as written: retransmissions are repeated bytes,
# apart). On lo a packet is received in the sender's softirq: the
# servers' received bytes count under their job only because magnetd
# counts a packet under its socket's cgroup, not the record's. Then
# magnet-jobs, over an interval that held the traffic: the same bytes
# per job and protocol, and the jobs and servers each other's peer jobs,
# found by their flows' two ends.
. ./lib.sh

log=/tmp/magnetd.log
prom=127.0.0.1:8653
window=25
ip link set lo up
load buf_size=4M
magnet-ctl probe add set net-jobs >/tmp/out || fail "add set net-jobs: $(cat /tmp/out)"

magnetd -f -c /dev/null --prometheus $prom >$log 2>&1 &
pid=$!
stop_all() {
	rc=$?
	[ -z "$jobs" ] || kill "$jobs" 2>/dev/null
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	[ $rc = 0 ] || failed_log $log
}
trap stop_all EXIT
magnetd_up $log

# magnet-jobs watches the flows for $window s: the traffic must fit in it.
start=$(date +%s)
magnet-jobs -d $window -m >/tmp/jobs.out 2>/tmp/jobs.err &
jobs=$!
mdtest wait-stat aggregators 1 30 >/dev/null || fail "magnet-jobs' AGG net: $(cat /tmp/jobs.err)"

timeout 120 nettest totals $prom /tmp/want >/tmp/out 2>&1 || fail "nettest totals: $(cat /tmp/out)"
cat /tmp/out
took=$(($(date +%s) - start))
[ $took -lt $((window - 2)) ] ||
	fail "the traffic and its checks took $took s: more than magnet-jobs' window ($window s)"

wait $jobs || fail "magnet-jobs: exit $?: $(cat /tmp/jobs.err)"
jobs=
timeout 30 nettest jobs-out /tmp/want /tmp/jobs.out >/tmp/out 2>&1 ||
	fail "nettest jobs-out: $(cat /tmp/out); magnet-jobs said: $(cat /tmp/jobs.out)"
cat /tmp/out
grep '/net-' /tmp/jobs.out | sed 's/^/  /'

kill $pid
wait $pid
grep -q "stopped: read .* (the kernel reported 0 lost)" $log || fail "stop: $(cat $log)"
magnet-ctl probe del set net-jobs || fail "del set net-jobs"
unload
