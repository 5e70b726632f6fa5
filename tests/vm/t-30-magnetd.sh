#!/bin/sh
# magnetd end to end (issue 4): what it says without the module, the
# allowlist rule, one reader per ring, exact accounting through a real
# subscriber, probes by name (a kprobe and a kretprobe on one function),
# the D line after a burst with nothing after it, threads and jobs named
# OK, ERR and "D 1", 50 subscribers and a stalled one, AGG per tgid and
# cgroup against ground truth, module unload and reload under it, SIGTERM
# leaving a complete trace; the rings read mapped (the default) until the
# reload, then, in overwrite mode, with AIO.
. ./lib.sh

log=/tmp/magnetd.log
P=/sys/kernel/debug/magnet
trace=/tmp/mdtrace

# Pid of the daemon answering on $1 (default port), once it serves.
# shellcheck disable=SC2120 # the port is optional
wait_up() { # [port]
	i=0
	until MDTEST_ADDR=127.0.0.1:${1:-8650} mdtest cmd HELLO >/tmp/hello 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "magnetd did not come up: $(cat $log)"
		sleep 0.1
	done
}

# SIGHUP with $1 as the configuration; back once the daemon says so.
reconfigure() { # text
	printf '%s\n' "$1" >/tmp/magnetd.conf
	n=$(grep -c "reloaded the configuration" $log)
	kill -HUP $pid
	i=0
	until [ "$(grep -c "reloaded the configuration" $log)" -gt "$n" ]; do
		i=$((i + 1))
		[ $i -lt 50 ] || fail "no reload: $(cat $log)"
		sleep 0.1
	done
}

magnetd -f 2>/tmp/err
[ $? = 1 ] || fail "without the module: want exit 1"
grep -q "magnet module not loaded" /tmp/err || fail "without the module: $(cat /tmp/err)"
echo "no module: $(cat /tmp/err)"

load buf_size=4M
magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add"

magnetd -f -l 0.0.0.0:8650 2>/tmp/err
[ $? = 1 ] || fail "0.0.0.0 without an allowlist: want exit 1"
grep -q "allowlist" /tmp/err || fail "0.0.0.0 without an allowlist: $(cat /tmp/err)"
echo "refused: $(cat /tmp/err)"

# Its output goes to the log, never to the suite's pipe; a failing test
# must not leave it running (it would hold the module).
echo "trace = $trace" >/tmp/magnetd.conf
magnetd -f -c /tmp/magnetd.conf >$log 2>&1 &
pid=$!
trap 'rc=$?; kill $pid 2>/dev/null; wait $pid 2>/dev/null
	[ $rc = 0 ] || failed_log $log' EXIT
wait_up
grep -q "module=up" /tmp/hello || fail "HELLO: $(cat /tmp/hello)"
echo "hello: $(cat /tmp/hello)"
# read = mapped, the default: every ring mapped into the daemon.
n=$(grep -c "magnet/cpu[0-9]" /proc/$pid/maps)
rings=$(set -- $P/cpu[0-9]*; echo $#)
[ "$n" = "$rings" ] || fail "$n rings mapped: $(grep magnet /proc/$pid/maps)"

# A second daemon, started the background way: its parent reports the
# child's failure (the rings have one reader) with the reason. It cannot
# take the first one's Unix socket either.
magnetd -f -l 127.0.0.1:8651 2>/tmp/err
[ $? = 1 ] || fail "a second magnetd on the same socket: want exit 1"
grep -q "/run/magnet/magnetd.sock: another magnetd serves there" /tmp/err ||
	fail "a second magnetd on the same socket: $(cat /tmp/err)"
mdtest cmd HELLO | grep -q "^OK magnet" || fail "the first magnetd lost its socket"
magnetd -l 127.0.0.1:8651 -S /tmp/second.sock 2>/tmp/err
[ $? = 1 ] || fail "a second magnetd: want exit 1"
grep -q "already has a reader" /tmp/err || fail "a second magnetd: $(cat /tmp/err)"

mdtest cmd PROBES | grep -q "kprobe __x64_sys_getpid" || fail "PROBES: $(mdtest cmd PROBES)"
mdtest cmd FOO "SUBSCRIBE cpu ==" "AGG pid EVERY 5ms" HELLO >/tmp/out || fail "errors"
[ "$(grep -c '^ERR' /tmp/out)" = 3 ] || fail "want 3 ERR replies: $(cat /tmp/out)"
grep -q "^ERR bad filter: .*column" /tmp/out || fail "filter error: $(cat /tmp/out)"
tail -n 1 /tmp/out | grep -q "^OK magnet 2" || fail "the connection did not survive errors"

timeout 120 mdtest account 20000 || fail "account"

# Probes by name: the kretprobe is "__x64_sys_getpid%return", its kprobe
# "__x64_sys_getpid"; each name selects its probe alone.
magnet-ctl probe add kretprobe __x64_sys_getpid >/dev/null || fail "probe add kretprobe"
timeout 120 mdtest names 2000 || fail "names"
magnet-ctl probe del '__x64_sys_getpid%return' || fail "probe del by name"
# Threads and jobs whose names read like replies.
timeout 120 mdtest comm 1000 || fail "comm"
# A burst over a 1 MiB queue: the last D line comes with no record after
# it (client_timeout long enough for the burst under TCG).
reconfigure "trace = $trace
client_queue = 1M
client_timeout = 30s"
timeout 120 mdtest burst 30000 || fail "burst"

# A smaller client timeout, by SIGHUP, for the stalled client.
reconfigure "trace = $trace
client_queue = 1M
client_timeout = 1s"
timeout 120 mdtest fanout 50 10000 || fail "fanout"
[ "$(stat_of cut_off)" = 1 ] || fail "STATS cut_off: $(mdtest cmd STATS | head -n 1)"
rss=$(awk '/^VmHWM/ { print $2 }' /proc/$pid/status)
echo "magnetd peak RSS: ${rss} kB"
[ "$rss" -lt 131072 ] || fail "magnetd peak RSS ${rss} kB, over 128 MiB"

mkdir -p /sys/fs/cgroup/jobA /sys/fs/cgroup/jobB
timeout 120 mdtest agg jobA jobB 3000 5000 || fail "agg"

# Unload and reload under the daemon: SIGUSR1 lets go of the rings.
release_rmmod $pid
grep -q "released the rings" $log || fail "no release in the log: $(cat $log)"
# Back in overwrite mode: the rings cannot be mapped, AIO reads them
# (the rest of the test, the trace at SIGTERM included).
load buf_size=4M mode=overwrite
magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add after reload"
magnetd_reopened 1 $log
echo "reloaded: $(grep 'reading the rings again' $log)"
grep -q "overwrite-mode rings cannot be mapped: reading them with AIO" $log ||
	fail "no AIO fallback for overwrite-mode rings: $(cat $log)"
grep -q "magnet/cpu[0-9]" /proc/$pid/maps && fail "an overwrite-mode ring mapped: $(grep magnet /proc/$pid/maps)"
mdtest account 1000 || fail "account after reload"

# A probe added while magnetd writes the trace (its header has the table
# of the start): the trace names its records all the same.
magnet-ctl probe add kretprobe __x64_sys_getpid >/dev/null || fail "probe add kretprobe"
rid=$(awk '$2 == "kretprobe" && $3 == "__x64_sys_getpid" { print $1 }' $P/probes)
[ -n "$rid" ] || fail "no kretprobe in $P/probes: $(cat $P/probes)"

# SIGTERM: drained, flushed, a trace magnet-dump decodes whole.
mgtest fire-n 5000 >/dev/null &
fpid=$!
wait $fpid
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] || fail "magnetd exit $rc after SIGTERM: $(cat $log)"
# Its probe records: the TASK records naming it are in the trace too.
magnet-dump -j $trace/magnetd-000000.mgt | grep -F "\"tgid\":$fpid," >/tmp/fired ||
	fail "magnet-dump of the trace"
n=$(grep -c '"type":"kprobe"' /tmp/fired)
[ "$n" = 5000 ] || fail "the trace holds $n of 5000 records"
# magnet-dump prints ,"id":N,"event":NAME, on each record's line.
late=$(grep '"type":"kretprobe"' /tmp/fired | grep -c "\"id\":$rid,\"event\":\"__x64_sys_getpid%return\"")
[ "$late" = 5000 ] ||
	fail "$late of 5000 records of probe $rid (added after magnetd started) named: $(grep -m 1 '"type":"kretprobe"' /tmp/fired)"
magnet-dump --stats $trace/magnetd-000000.mgt >/tmp/st || fail "trace stats"
grep -q "unknown" /tmp/st && fail "unknown probe in the trace's stats: $(grep unknown /tmp/st)"
echo "trace: $n of 5000 records of the last workload, $late of probe $rid added later, named; $(grep -c . /tmp/st) stats lines"
grep -q "stopped: read" $log || fail "no stop summary: $(cat $log)"

# The same with magnet-read: the probe comes back under a new id once the
# trace's header is written.
magnet-ctl probe del "$rid" || fail "probe del $rid"
magnet-read -o /tmp/rd.mgt 2>/tmp/rd.err &
rpid=$!
written /tmp/rd.mgt /tmp/rd.err "magnet-read wrote no header"
magnet-ctl probe add kretprobe __x64_sys_getpid >/dev/null || fail "probe add again"
rid2=$(awk '$2 == "kretprobe" && $3 == "__x64_sys_getpid" { print $1 }' $P/probes)
if [ -z "$rid2" ] || [ "$rid2" = "$rid" ]; then fail "kretprobe id '$rid2' after '$rid'"; fi
mgtest fire-n 1000 >/dev/null &
fpid=$!
wait $fpid
# A signal stops magnet-read with what is still in the rings unread: wait
# until they are empty (what its reads took is written when it stops).
rings_empty "magnet-read left the rings unread"
kill -INT $rpid
wait $rpid || fail "magnet-read: $(cat /tmp/rd.err)"
late=$(magnet-dump -j /tmp/rd.mgt | grep -F "\"tgid\":$fpid," |
	grep -c "\"id\":$rid2,\"event\":\"__x64_sys_getpid%return\"")
[ "$late" = 1000 ] || fail "magnet-read: $late of 1000 records of probe $rid2 named"
magnet-dump /tmp/rd.mgt | grep -F -q " unknown " && fail "magnet-read: unknown probe in the trace"
echo "magnet-read: $late of 1000 records of probe $rid2 added after it started, named"
unload
echo "log:"
sed 's/^/  /' $log
