#!/bin/sh
# magnetd's cgroup map against a user's churn: uid 65534 makes and removes
# cgroups of 4 KiB paths in a loop, in a subtree delegated to it, while
# magnetd maps every cgroup it sees made. The map stays within its bounds
# (STATS cgroups and cgroup_bytes, removed cgroups evicted and counted),
# the daemon's memory and its inotify watches do not grow with the churn,
# and a live job in that subtree is still named exactly.
. ./lib.sh

log=/tmp/magnetd-cgmap.log
user=/sys/fs/cgroup/u65534
n=${CGMAP_CHURN:-20000}

rss_kb() { awk '/^VmRSS/ { print $2 }' /proc/$pid/status; }
# The daemon's inotify watches, as the kernel counts them.
watches() { cat /proc/$pid/fdinfo/* 2>/dev/null | grep -c '^inotify wd:'; }

load
magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add"
# Delegation: the directory and the files a delegatee writes are its own.
mkdir $user || fail "mkdir $user"
chown 65534:65534 $user $user/cgroup.procs $user/cgroup.threads \
	$user/cgroup.subtree_control || fail "chown $user"

magnetd -f >$log 2>&1 &
pid=$! rc=0
trap 'rc=$?; kill $pid 2>/dev/null; wait $pid 2>/dev/null
	[ $rc = 0 ] || failed_log $log' EXIT
magnetd_up $log

# The user's deep directories (cgroups too), then a quiet moment.
cgchurn -u 65534 $user 3700 0 >/tmp/chain || fail "cgchurn: $(cat /tmp/chain)"
deep=$(sed -n 's/^path=//p' /tmp/chain)
[ "${#deep}" -ge 3700 ] || fail "a ${#deep}-byte path, not 3700"
sleep 1
c0=$(stat_of cgroups) rss0=$(rss_kb) w0=$(watches)
echo "before: $c0 cgroups, $(stat_of cgroup_bytes) path bytes, $w0 watches, RSS $rss0 kB"
if [ "$w0" = 0 ]; then
	# A kernel without inotify (the debug kernel): the daemon sees no
	# mkdir, only the ids records name. The bounds hold all the same.
	echo "no inotify: the churn is not seen; a short one, bounds checked"
	n=${CGMAP_CHURN:-2000}
fi

cgchurn -u 65534 -b 256 $user 3700 "$n" >/tmp/churn 2>&1 || fail "cgchurn: $(cat /tmp/churn)"
grep churned /tmp/churn
totals() { mdtest cmd TOTALS; }	# as root, on the Unix socket: every job
# Until the daemon has taken every event: nothing changes for a second.
last='' i=0
while :; do
	now=$(mdtest cmd STATS | head -n 1 | tr ' ' '\n' | grep -E '^cgroup')
	[ "$now" = "$last" ] && break
	last=$now
	i=$((i + 1))
	[ $i -lt 120 ] || fail "the daemon never settled: $now"
	sleep 1
done
c=$(stat_of cgroups) bytes=$(stat_of cgroup_bytes) ev=$(stat_of cgroups_evicted)
rss=$(rss_kb) w=$(watches)
echo "after $n: $c cgroups, $bytes path bytes, $ev evicted, $w watches, RSS $rss kB"
[ "$c" -le 16384 ] || fail "$c cgroups mapped, over 16384"
[ "$bytes" -le 4194304 ] || fail "$bytes path bytes, over 4 MiB"
[ "$ev" -gt 0 ] || [ "$w0" = 0 ] || fail "no cgroup evicted after a churn of $n"
[ "$w" -le $((w0 + 2)) ] || fail "$w inotify watches, $w0 before the churn"
# The entries' bounds, the tables, malloc's slack: far below the churn's
# 20000 paths of 4 KiB (80 MiB).
[ $((rss - rss0)) -lt 16384 ] || fail "RSS grew from $rss0 to $rss kB"

# A live job in the user's subtree: named exactly.
mkdir $user/keep || fail "mkdir keep"
id=$(stat -c %i $user/keep)
sh -c "echo \$\$ >$user/keep/cgroup.procs && exec mgtest fire-n 1000" >/dev/null ||
	fail "a job in $user/keep"
i=0
until totals | grep -q "^job $id /u65534/keep events=1000 "; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "job $id not named: $(totals | grep "^job")"
	sleep 0.2
done
echo "live job named: $(totals | grep "^job $id ")"
