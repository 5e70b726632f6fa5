#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The guest's side of tests/monitors (tests/monitors/lib.sh boots it): a
# node as an operator runs one. magnet loaded with two probes,
#   __x64_sys_getppid   kprobe, generic handler (the workload's calls)
#   tcp_sendmsg         kprobe, handler sock (bytes sent, per job)
# magnetd serving its client port, Prometheus and Supermon on the NIC for
# the host's forwarded ports (only QEMU's host address, 10.0.2.2, allowed),
# its MUNGE credentials decoded by a munged with the host's key
# (/magnet/munge.key: the host's munged has it too), and mon-workload on
# port 7000 to run workloads of known size in jobs.
# mon-workload prints MAGNET-NODE-READY once it listens, then serves until
# the host says "quit".
set -e
PATH=/magnet/bin:$PATH
mkdir -p /tmp/mon
insmod /magnet/magnet.ko
magnet-ctl probe add kprobe __x64_sys_getppid
magnet-ctl probe add kprobe tcp_sendmsg handler sock
sh /magnet/tests/vm/munged.sh start /tmp/mon/munge /magnet/munge.key
cat >/tmp/mon/magnetd.conf <<CONF
listen = 0.0.0.0:8650
allow = 10.0.2.2/32
prometheus = 0.0.0.0:8653
supermon = 0.0.0.0:2709
munge_socket = /tmp/mon/munge/socket
CONF
sh /magnet/tests/monitors/start-magnetd.sh
magnet-ctl probe list
mon-workload 7000	# says MAGNET-NODE-READY once it listens
sh /magnet/tests/monitors/stop-magnetd.sh || true
sh /magnet/tests/vm/munged.sh stop /tmp/mon/munge || true
rmmod magnet
echo "MAGNET-NODE-DONE"
