#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/cluster/node.sh - one node of the cluster (tests/cluster/run boots
# it: tests/vm/run --root host --node N), as a site runs one, with
# Debian's own daemons from the host's installed system:
#   munged      user munge, the run's key (/magnet/cluster/munge.key)
#   magnet.ko   probes tcp_sendmsg and udp_sendmsg (sock: bytes sent per
#               job) and the net-jobs set (packets per job and peer)
#   magnetd     its Unix socket, the client port, Prometheus and Supermon
#               open to the host's forwards and the LAN
#   aggnet.py   AGG net from magnetd, every report added up (what each job
#               sent to and received from each peer since boot)
#   gmond       user ganglia, with modmagnet.so, sending to every node's
#               gmond on the LAN (each holds the whole cluster)
#   slurmctld   on node1 (user slurm), slurmd on every node: cgroup/v2,
#               IgnoreSystemd, the controllers enabled in the root's
#               subtree_control
# then prints MAGNET-CLUSTER-READY and serves the host's commands
# (cmdd.py on port 7000) until it says "quit"; then stops it all.
# The configuration is the host's, for this run, in /magnet/cluster.
set -u
n=${MAGNET_VM_NODE:?not a --node guest}
c=/magnet/cluster
t=/magnet/tests/cluster
log=/run/cluster
mkdir -p $log
say() { echo "cluster: node$n: $*"; }
die() {
	say "FAIL: $*"
	for f in "$log"/*.log /var/log/slurm/*.log /var/log/munge/munged.log; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
	done
	exit 1
}
# until CMD... succeeds, at most S seconds
wait_for() { # S what CMD...
	s=$1 what=$2 i=0
	shift 2
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le $((s * 10)) ] || die "no $what after $s s"
		sleep 0.1
	done
}

# MUNGE, as Debian runs it, with the run's key (never the host's).
if ! { install -o munge -g munge -m 0400 $c/munge.key /etc/munge/munge.key &&
	install -d -o munge -g munge -m 0755 /run/munge && runuser -u munge -- munged; }; then
	die "munged did not start"
fi

# magnet, and magnetd serving the host (10.0.2.2) and the LAN.
insmod /magnet/magnet.ko || die "insmod magnet.ko"
{ magnet-ctl probe add kprobe tcp_sendmsg handler sock &&
	magnet-ctl probe add kprobe udp_sendmsg handler sock &&
	magnet-ctl probe add set net-jobs; } >$log/probes.log 2>&1 || die "magnet-ctl: $(cat $log/probes.log)"
magnetd -f -c $c/magnetd.conf >$log/magnetd.log 2>&1 &
echo $! >$log/magnetd.pid
wait_for 30 "magnetd socket" mdtest cmd HELLO
/usr/bin/python3 $t/aggnet.py $log/aggnet.json >$log/aggnet.log 2>&1 &
echo $! >$log/aggnet.pid

# gmond with magnet's module (watching this node's steps of the jobs); it
# drops to user ganglia.
cp $c/gmond-magnet-node"$n".conf $log/gmond-magnet.conf
gmond -c $c/gmond.conf -p /run/gmond.pid || die "gmond did not start"

# Slurm's cgroup/v2 plugin without systemd makes its scope itself
# (NODE_slurmstepd.scope: Debian's slurmd is built for several slurmd on
# one host); the controllers it asks for must be enabled from the root
# down to the scope, as systemd's Delegate= would.
scope=/sys/fs/cgroup/system.slice/node${n}_slurmstepd.scope
for d in /sys/fs/cgroup /sys/fs/cgroup/system.slice $scope; do
	if ! { mkdir -p "$d" && echo "+cpuset +cpu +memory +pids" >"$d/cgroup.subtree_control"; }; then
		die "cannot enable the cgroup controllers in $d"
	fi
done
install -d -m 0755 /etc/slurm /run/slurm /var/log/slurm /var/spool/slurmd
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld
chown slurm:slurm /var/log/slurm
cp $c/slurm.conf $c/cgroup.conf /etc/slurm/
if [ "$n" = 1 ]; then
	slurmctld || die "slurmctld did not start"
fi
slurmd || die "slurmd did not start"
wait_for 60 "slurmd pid file" test -s /run/slurm/slurmd.pid

say "MAGNET-CLUSTER-READY $(uname -r) $(slurmd -V) $(gmond --version)"
/usr/bin/python3 $t/cmdd.py 7000 $c/token >$log/cmdd.log 2>&1
rc=$?

# The host said quit: stop it all, the module last.
for p in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid /run/gmond.pid \
	$log/aggnet.pid $log/magnetd.pid /run/munge/munged.pid; do
	[ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null
done
i=0
while [ $i -lt 100 ] && grep -qs . /proc/"$(cat $log/magnetd.pid)"/stat; do
	i=$((i + 1))
	sleep 0.1
done
rmmod magnet || say "rmmod magnet failed"
say "MAGNET-CLUSTER-DONE (cmdd exit $rc)"
exit $rc
