#!/bin/sh
# Traffic per job and the hosts each job talks to (issue 10, part 3): the
# net-jobs probe set, magnetd's AGG net, checked by nettest against the
# bytes three jobs in their own cgroups (and a server in a fourth) send
# and receive over TCP, TCP over IPv6 and UDP, exactly.
. ./lib.sh

log=/tmp/magnetd.log
ip link set lo up
load buf_size=4M
magnet-ctl probe add set net-jobs >/tmp/out || fail "add set net-jobs: $(cat /tmp/out)"
grep -qx "net-jobs: 5 probes" /tmp/out || fail "add set said: $(cat /tmp/out)"

# Its output goes to the log; a failing test must not leave it running.
magnetd -f -c /dev/null >$log 2>&1 &
pid=$!
stop_magnetd() {
	rc=$?
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	[ $rc = 0 ] || failed_log $log
}
trap stop_magnetd EXIT
magnetd_up $log

timeout 120 nettest jobs >/tmp/out 2>&1 || fail "nettest jobs: $(cat /tmp/out)"
cat /tmp/out

# magnetd stops cleanly, with nothing lost, and lets the module go.
kill $pid
wait $pid
grep -q "stopped: read .* (the kernel reported 0 lost)" $log || fail "stop: $(cat $log)"
magnet-ctl probe del set net-jobs || fail "del set net-jobs"
unload
