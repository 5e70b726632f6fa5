#!/bin/sh
# magnetd's client slots, timeouts and memory (issue 7, items 20 and 21),
# against a real daemon: pipelined commands that are never read keep the
# daemon's memory within client_queue per client and are cut off after
# client_timeout, while pipelined commands read slowly get every reply;
# one user (uid 65534) takes all the connections it can, of every kind,
# and gets max_clients_per_user; a second user takes the rest; root still
# gets in (root_reserve); idle clients are closed after idle_timeout and
# aggregators and subscribers that read nothing are cut off.
. ./lib.sh

log=/tmp/magnetd-slots.log
conf=/tmp/magnetd-slots.conf
pids=

cleanup() {
	rc=$?
	for p in $pids; do kill "$p" 2>/dev/null; done
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ $rc = 0 ] || failed_log $log
}
trap cleanup EXIT

stat_of() { # key: from the STATS OK line
	mdtest cmd STATS | head -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"
}

rss() { awk '/^VmRSS/ { print $2 }' /proc/$pid/status; }

reloads=0
reconfigure() { # lines of the configuration file
	printf '%s\n' "$@" >$conf
	kill -HUP $pid
	reloads=$((reloads + 1))
	i=0
	until [ "$(grep -c 'reloaded the configuration' $log)" -ge $reloads ]; do
		i=$((i + 1))
		[ $i -lt 50 ] || fail "no reload: $(cat $log)"
		sleep 0.1
	done
}

held() { # file: wait for a hog's "held N" line, print N
	i=0
	until grep -q '^held' "$1"; do
		i=$((i + 1))
		[ $i -lt 600 ] || fail "the hog never settled: $(cat "$1")"
		sleep 0.1
	done
	sed -n 's/^held //p' "$1"
}

load buf_size=4M
# A PROBES reply of about 1 KiB: the pipelined command below.
for f in getpid getppid getuid geteuid getgid getegid gettid getpgrp \
	getpgid getsid getpriority sched_yield sched_getscheduler umask \
	times sysinfo; do
	magnet-ctl probe add kprobe __x64_sys_$f >/dev/null || fail "probe add $f"
done

printf '%s\n' "max_clients = 24" "max_clients_per_user = 16" \
	"root_reserve = 4" "client_queue = 256K" "client_timeout = 30s" \
	"idle_timeout = 60s" >$conf
magnetd -f -c $conf >$log 2>&1 &
pid=$!
magnetd_up $log

## Pipelined commands nobody reads: memory stays within the queues.
# The daemon first runs the same commands once (its code, its probe
# table and malloc's arenas are touched at their first use, not at
# start), settles, and its peak is reset (clear_refs 5; the debug
# kernel has no clear_refs, and there the warm-up's peak, of two clients
# that read everything, stays below the hogs'): growth is then the
# clients' alone.
timeout 120 mdtest pipeline 2 200 >/dev/null || fail "warm-up pipeline"
sleep 1
base=$(rss)
[ ! -e /proc/$pid/clear_refs ] || echo 5 >/proc/$pid/clear_refs
mdtest hog 20 pipe >/tmp/pipe.out &
hog=$!
pids="$pids $hog"
[ "$(held /tmp/pipe.out)" = 20 ] || fail "pipe hog: $(cat /tmp/pipe.out)"
# The daemon handles PROBES slowly under TCG (and slower on the debug
# kernel): the first queues may fill, and be cut off, before the last
# fill. So wait for every cut-off, check that each came of a full queue,
# and bound the peak RSS (VmHWM), which saw every queue at its fullest.
t=$(mdtest wait-stat cut_off 20 600) ||
	fail "the pipeliners were not cut off: $(mdtest cmd STATS | head -n 1)"
echo "20 pipeliners reading nothing (client_timeout 30s) cut off: $t"
n=$(grep -c 'uid 0: cut off: queue full' $log)
[ "$n" = 20 ] || fail "$n of the 20 cut-offs say the queue was full"
peak=$(awk '/^VmHWM/ { print $2 }' /proc/$pid/status)
# 20 clients x (client_queue + one reply + the client's own state), and
# 2 MiB for the rest (the probe table read per PROBES, malloc's slack).
bound=$((20 * (256 + 16) + 2048))
echo "RSS: ${base} kB at rest, peak ${peak} kB with 20 clients pipelining PROBES and reading nothing (growth $((peak - base)) kB, bound $bound kB)"
[ $((peak - base)) -le $bound ] || fail "peak RSS grew by $((peak - base)) kB, over $bound kB"
kill $hog
# Read slowly, they get every reply, in order (and are not cut off).
timeout 300 mdtest pipeline 8 2000 || fail "pipeline"
[ "$(stat_of cut_off)" = 20 ] || fail "readers cut off: $(mdtest cmd STATS | head -n 1)"
echo "RSS after: $(rss) kB"

## Slots: one user takes what it can, another the rest; root gets in.
reconfigure "max_clients = 24" "max_clients_per_user = 16" \
	"root_reserve = 4" "client_queue = 256K" "client_timeout = 60s" \
	"idle_timeout = 60s"
MDTEST_UID=65534 mdtest hog 100 idle agg sub pipe >/tmp/hog1 &
h1=$!
pids="$pids $h1"
n=$(held /tmp/hog1)
echo "uid 65534: held $n; $(grep refused /tmp/hog1)"
[ "$n" = 16 ] || fail "uid 65534 holds $n connections, want 16"
grep -qx "refused: ERR too many clients of this user" /tmp/hog1 ||
	fail "uid 65534's 17th: $(cat /tmp/hog1)"
MDTEST_UID=65533 mdtest hog 100 idle agg sub pipe >/tmp/hog2 &
h2=$!
pids="$pids $h2"
n=$(held /tmp/hog2)
echo "uid 65533: held $n; $(grep refused /tmp/hog2)"
[ "$n" = 8 ] || fail "uid 65533 holds $n connections, want the 8 left"
grep -qx "refused: ERR too many clients" /tmp/hog2 ||
	fail "uid 65533's 9th: $(cat /tmp/hog2)"
mdtest cmd HELLO >/tmp/hello || fail "root refused with every other slot taken"
grep -q "^OK magnet 2" /tmp/hello || fail "root's HELLO: $(cat /tmp/hello)"
echo "root, every other slot taken: $(cat /tmp/hello)"
[ "$(stat_of clients)" = 25 ] || fail "clients: $(mdtest cmd STATS | head -n 1)"
grep -q "refused 127.0.0.1:[0-9]* uid 65534: 16 clients of this user already" $log ||
	fail "no refusal naming the uid in the log"
kill $h1 $h2
i=0
until [ "$(stat_of clients)" = 1 ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "the hogs' connections stay: $(mdtest cmd STATS | head -n 1)"
	sleep 0.1
done

## Timeouts: idle clients closed, streams that read nothing cut off.
reconfigure "max_clients = 24" "max_clients_per_user = 16" \
	"root_reserve = 4" "client_queue = 256K" "client_timeout = 2s" \
	"idle_timeout = 3s"
MDTEST_UID=65534 mdtest hog 12 idle agg sub >/tmp/hog3 &
h3=$!
pids="$pids $h3"
[ "$(held /tmp/hog3)" = 12 ] || fail "hog: $(cat /tmp/hog3)"
# A flood: the subscribers' queues overflow.
mgtest fire 5 >/dev/null &
pids="$pids $!"
t=$(mdtest wait-stat idle_closed 4 60) || fail "the idle clients were not closed"
echo "4 idle clients (idle_timeout 3s) closed: $t"
t=$(mdtest wait-stat cut_off 28 120) || fail "the non-reading streams were not cut off"
echo "4 AGG and 4 SUBSCRIBE clients reading nothing (client_timeout 2s) cut off: $t"
[ "$(grep -c 'uid 65534: closed: idle' $log)" = 4 ] || fail "idle closes in the log"
[ "$(grep -c 'uid 65534: cut off' $log)" = 8 ] || fail "cut-offs in the log"
[ "$(stat_of idle_closed)" = 4 ] || fail "idle_closed: $(mdtest cmd STATS | head -n 1)"
[ "$(stat_of cut_off)" = 28 ] || fail "cut_off: $(mdtest cmd STATS | head -n 1)"
# An AGG that read nothing was told what it missed, in STATS.
[ "$(stat_of client_dropped)" -gt 0 ] || fail "client_dropped: $(mdtest cmd STATS | head -n 1)"

kill -TERM $pid
wait $pid
rc=$?
pid=
[ $rc = 0 ] || fail "magnetd exit $rc after SIGTERM"
unload
echo "log:"
sed 's/^/  /' $log
