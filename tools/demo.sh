#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The main job, on a node that can load modules (the VM, or a real host):
# load magnet with probes, drain every CPU with magnet-read while a small
# workload runs, then decode the trace and show the counters.
#
#   tools/demo.sh [MODULE [BINDIR]]
set -e
ko=${1:-/magnet/magnet.ko}
bin=${2:-/magnet/bin}
dbg=/sys/kernel/debug/magnet
trace=${TMPDIR:-/tmp}/magnet-demo.trace

say() { printf '\n== %s\n' "$*"; }

say "insmod magnet.ko with three probes"
insmod "$ko" probes=kprobe:__x64_sys_getpid,kretprobe:vfs_read:3,kprobe:vfs_write:3:32@1
trap 'rmmod magnet 2>/dev/null || true' EXIT
cat $dbg/version
printf 'id\ttype\ttarget\tnargs\thits\tmissed\tcapture\n'
cat $dbg/probes

say "magnet-read drains every CPU with libaio while a workload runs"
"$bin/magnet-read" -o "$trace" -t 3 &
reader=$!
sleep 1
for i in 1 2 3; do sh -c true; done	# a shell calls getpid() as it starts
echo "hello from the demo workload" >/tmp/demo.txt
cat /tmp/demo.txt >/dev/null
wait $reader

say "magnet-dump: the first records, all CPUs merged by time"
"$bin/magnet-dump" "$trace" | head -n 12
say "the workload's records (getpid, and the write with its captured bytes)"
"$bin/magnet-dump" "$trace" | grep -E "getpid|hello from" | head -n 8
say "per-CPU counters (nothing is lost silently)"
cat $dbg/stats
"$bin/magnet-dump" --stats "$trace" | tail -n 12
