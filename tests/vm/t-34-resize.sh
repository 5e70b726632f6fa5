#!/bin/sh
# Resizes lose nothing a reader should know. A task firing a probed call
# across repeated resizes has every record named by a TASK record in the
# new ring (writers that find the new ring at once included). Losses no
# reader was told of (pending, in an unread LOST record, overwritten records
# an overwrite-mode reader had not been told of) are reported by the new
# ring: the LOST records of the stream add up to the counters in stats.
. ./lib.sh

lost_sum() { # field trace...
	f=$1
	shift
	for t in "$@"; do magnet-dump "$t"; done |
		awk -v f="$f=" '$3 == "LOST" { for (i = 4; i <= NF; i++) if (index($i, f) == 1) s += substr($i, length(f) + 1) } END { print s + 0 }'
}

stat_col() { # column (of magnet/stats' header)
	awk -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { s += $k } END { print s + 0 }' \
		/sys/kernel/debug/magnet/stats
}

# 1. TASK records across resizes.
load buf_size=65536 probes=kprobe:__x64_sys_getpid
mgtest fire 60 >/dev/null &
fpid=$!
i=0
unnamed=0 total=0
while [ $i -lt 10 ]; do
	magnet-ctl buffer set size $((131072 >> (i % 2))) || fail "resize $i"
	magnet-read -n 1 -o /tmp/r.mgt 2>/tmp/read.err || fail "magnet-read: $(cat /tmp/read.err)"
	magnet-dump -j /tmp/r.mgt >/tmp/r.json
	n=$(grep -c "\"tgid\":$fpid," /tmp/r.json)
	u=$(grep "\"tgid\":$fpid," /tmp/r.json | grep -c '"comm":null')
	total=$((total + n))
	unnamed=$((unnamed + u))
	i=$((i + 1))
done
kill $fpid
wait $fpid 2>/dev/null
echo "10 resizes: $total records of the firing task, $unnamed without a name"
[ $total -gt 0 ] || fail "no record of the firing task after the resizes"
[ $unnamed = 0 ] || fail "$unnamed of $total records lost their TASK record in a resize"
unload

# 2. Discard: an unread LOST record and pending losses go to the new ring.
load buf_size=65536 probes=kprobe:__x64_sys_getpid
taskset 1 mgtest fire-n 20000 >/dev/null	# fills CPU 0's ring: losses
magnet-read -t 1 -o /tmp/a.mgt 2>/dev/null || fail "first read"
taskset 1 mgtest fire-n 20000 >/dev/null	# a LOST record, unread; more losses
magnet-ctl buffer set size 131072 || fail "resize"
taskset 1 mgtest fire-n 10 >/dev/null
magnet-read -t 1 -o /tmp/b.mgt 2>/dev/null || fail "second read"
inband=$(lost_sum full /tmp/a.mgt /tmp/b.mgt)
stats=$(stat_col lost_full)
echo "discard: lost_full $stats in stats, $inband reported in the stream"
[ "$stats" -gt 0 ] || fail "the ring never filled"
[ "$inband" = "$stats" ] || fail "losses reported in-band $inband, stats $stats"
unload

# 3. Overwrite: what was overwritten before any read is reported after.
load buf_size=65536 mode=overwrite probes=kprobe:__x64_sys_getpid
taskset 1 mgtest fire-n 20000 >/dev/null
magnet-ctl buffer set size 131072 || fail "resize"
taskset 1 mgtest fire-n 10 >/dev/null
magnet-read -t 1 -o /tmp/c.mgt 2>/dev/null || fail "read"
inband=$(lost_sum overwritten /tmp/c.mgt)
stats=$(stat_col overwritten)
echo "overwrite: overwritten $stats in stats, $inband reported in the stream"
[ "$stats" -gt 0 ] || fail "nothing was overwritten"
[ "$inband" = "$stats" ] || fail "overwritten reported in-band $inband, stats $stats"
unload

# 4. Fairness: JOB_LOST records left unread at a resize are reported again
# by the new ring: in band plus pending still equals lost_fair.
job() { # cgroup command
	taskset 1 sh -c "echo \$\$ >/sys/fs/cgroup/$1/cgroup.procs; $2"
}
load buf_size=65536 probes=kprobe:__x64_sys_getpid
mkdir -p /sys/fs/cgroup/rsA /sys/fs/cgroup/rsB
# Job B stops by itself: killing what cgroup.procs lists is racy, as the
# file may list 0 for a task reaped while it was read, and `kill 0` would
# signal this test's own process group.
rm -f /tmp/rsB.stop
job rsB 'until [ -e /tmp/rsB.stop ]; do mgtest fire-n 10 >/dev/null; sleep 0.01; done' &
bpid=$!
job rsA 'mgtest fire 1 >/dev/null'	# over its share: losses pending
magnet-read -t 1 -o /tmp/f1.mgt 2>/dev/null || fail "first read"
job rsA 'mgtest fire 1 >/dev/null'	# a JOB_LOST record, unread; more losses
touch /tmp/rsB.stop
wait $bpid
magnet-ctl buffer set size 131072 || fail "resize"
job rsA 'mgtest fire-n 10 >/dev/null'
magnet-read -t 1 -o /tmp/f2.mgt 2>/dev/null || fail "second read"
inband=$(for t in /tmp/f1.mgt /tmp/f2.mgt; do magnet-dump "$t"; done |
	awk '$3 == "JOB_LOST" { for (i = 4; i <= NF; i++) if (index($i, "fair=") == 1) s += substr($i, 6) } END { print s + 0 }')
pending=$(awk -F'\t' 'NR > 1 { s += $5 } END { print s + 0 }' /sys/kernel/debug/magnet/jobs)
stats=$(stat_col lost_fair)
echo "fairness: lost_fair $stats in stats, $inband reported in the stream, $pending pending"
[ "$stats" -gt 0 ] || fail "the fairness rule dropped nothing"
[ $((inband + pending)) = "$stats" ] || fail "JOB_LOST in band $inband + pending $pending != lost_fair $stats"
unload
i=0
until rmdir /sys/fs/cgroup/rsA /sys/fs/cgroup/rsB 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "rmdir the jobs: $(cat /sys/fs/cgroup/rsB/cgroup.procs)"
	sleep 0.1
done
