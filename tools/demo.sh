#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The main job, on a node that can load modules (the VM, or a real host):
# load magnet, start magnetd with a probe set, and run two "jobs" in their
# own cgroups for a while: jobA sends TCP traffic, jobB makes system calls,
# writes files and scrapes magnetd's Prometheus page. The net-jobs probe
# set gives magnetd every packet with its socket's job. magnet-top (run by tools/demo, on the host) shows the
# node live; at the end magnetd is stopped with SIGTERM and its trace
# decoded, so nothing it saw is lost.
#
#   tools/demo.sh [-l ADDR:PORT] [-a CIDR] [-t SECONDS] [MODULE [BINDIR]]
set -e
listen=127.0.0.1:8650 allow='' seconds=${MAGNET_DEMO_SECONDS:-30}
while getopts l:a:t: o; do
	case $o in
	l) listen=$OPTARG ;;
	a) allow=$OPTARG ;;
	t) seconds=$OPTARG ;;
	*) echo "usage: demo.sh [-l ADDR:PORT] [-a CIDR] [-t SECONDS] [MODULE [BINDIR]]" >&2; exit 1 ;;
	esac
done
shift $((OPTIND - 1))
ko=${1:-/magnet/magnet.ko}
bin=${2:-/magnet/bin}
PATH=$bin:$PATH
dbg=/sys/kernel/debug/magnet
work=${TMPDIR:-/tmp}/magnet-demo
cg=/sys/fs/cgroup

say() { printf '\n== %s\n' "$*"; }

rm -rf "$work" && mkdir -p "$work"
say "insmod magnet.ko"
insmod "$ko"
trap 'kill $md 2>/dev/null; wait 2>/dev/null; rmmod magnet 2>/dev/null || true' EXIT
cat $dbg/version

say "magnetd on $listen, probes applied through netlink at start"
cat >"$work/magnetd.conf" <<CONF
listen = $listen
${allow:+allow = $allow}
trace = $work/trace
probe = kprobe tcp_sendmsg handler sock
probe = kprobe __x64_sys_getpid
probe = kprobe vfs_write args 3
probe = set net-jobs
prometheus = 127.0.0.1:8653
CONF
sed 's/^/  /' "$work/magnetd.conf"
magnetd -f -c "$work/magnetd.conf" >"$work/magnetd.log" 2>&1 &
md=$!
i=0
until grep -q "serving on" "$work/magnetd.log"; do
	i=$((i + 1))
	if [ $i -ge 100 ] || ! kill -0 $md 2>/dev/null; then
		cat "$work/magnetd.log"
		exit 1
	fi
	sleep 0.1
done
sed 's/^/  /' "$work/magnetd.log"
magnet-ctl probe list

say "two jobs for ${seconds}s: jobA sends TCP, jobB calls getpid, writes and fetches metrics"
mkdir -p $cg/jobA $cg/jobB
end=$(($(date +%s) + seconds))
sh -c "echo \$\$ > $cg/jobA/cgroup.procs
	while [ \$(date +%s) -lt $end ]; do mdtest send 200; sleep 0.2; done" &
ja=$!
sh -c "echo \$\$ > $cg/jobB/cgroup.procs
	while [ \$(date +%s) -lt $end ]; do
		mgtest fire-n 3000 >/dev/null; dd if=/dev/zero of=$work/jobB.out bs=4k count=50 2>/dev/null
		wget -q -O /dev/null http://127.0.0.1:8653/metrics
		sleep 0.2
	done" &
jb=$!
echo "MAGNET-DEMO-READY"	# tools/demo starts magnet-top on this line
sleep $((seconds > 4 ? seconds - 3 : 1))
say "which job talked to which hosts: magnet-top's network view, one second while the jobs run"
magnet-top -s 127.0.0.1:8650 -b -n 2 | awk '/^NETWORK BY JOB/ { n++ } n == 2 && /^PROBES/ { exit } n == 2'
wait $ja $jb

say "the node, as magnetd saw it"
mdtest cmd STATS | head -n 1 | tr ' ' '\n' | grep -E '^(read|read_lost|sent|client_dropped|clients)=' | tr '\n' ' '
echo


say "SIGTERM: magnetd drains and closes its trace"
kill -TERM $md
wait $md
tail -n 3 "$work/magnetd.log" | sed 's/^/  /'
for f in "$work"/trace/*.mgt; do break; done
say "magnet-dump $f: which job sent what to which host (sock records)"
magnet-dump "$f" | grep tcp_sendmsg | head -n 5
say "per-CPU counters: what magnetd read and was told was lost, against what the kernel wrote
   (records written after its last read are still in the ring)"
magnet-dump --stats "$f" | tail -n 6
