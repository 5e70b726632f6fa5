#!/bin/sh
# magnet-ctl end to end: the grammar against the real module,
# exit codes 0/1/2, prefix matching, JSON, filters by cgroup path,
# sampling, enable/disable, notify + monitor, buffer settings.
. ./lib.sh

magnet-ctl probe list >/dev/null 2>/tmp/err
[ $? = 2 ] || fail "no module: want exit 2"
grep -q "not loaded" /tmp/err || fail "no module: $(cat /tmp/err)"

load
id=$(magnet-ctl probe add kprobe __x64_sys_getpid args 2) || fail "probe add"
echo "added: $id"
magnet-ctl pr l | grep -q __x64_sys_getpid || fail "prefix 'pr l' does not list the probe"
magnet-ctl -j probe list | grep -q '"name":"__x64_sys_getpid"' || fail "JSON list lacks the probe"

magnet-ctl probe add kprobe >/dev/null 2>&1
[ $? = 1 ] || fail "a missing symbol is not a usage error (exit 1)"
magnet-ctl probe add kprobe vfs_read args 7 >/dev/null 2>&1
[ $? = 1 ] || fail "args 7 is not a usage error"
magnet-ctl probe add kprobe no_such_function_xyz 2>/tmp/err
[ $? = 2 ] || fail "an unknown symbol is not a kernel refusal (exit 2)"
grep -q "no such symbol" /tmp/err || fail "refusal lacks the kernel's message: $(cat /tmp/err)"
magnet-ctl probe frobnicate x >/dev/null 2>&1
[ $? = 1 ] || fail "unknown word: want exit 1"

# A cgroup filter given as a path: only the job's processes are recorded.
mkdir -p /sys/fs/cgroup/job42
magnet-ctl filter add __x64_sys_getpid cgroup /sys/fs/cgroup/job42 >/dev/null || fail "filter add cgroup"
r0=$(counter __x64_sys_getpid recorded)
sh -c 'echo $$ > /sys/fs/cgroup/job42/cgroup.procs; exec mgtest fire-n 300' >/dev/null
mgtest fire-n 200 >/dev/null
r1=$(counter __x64_sys_getpid recorded)
[ $((r1 - r0)) = 300 ] || fail "cgroup filter: recorded $((r1 - r0)), want 300"
echo "cgroup filter by path: 300 of 500 recorded"
fid=$(magnet-ctl -m filter list __x64_sys_getpid | awk '$1 == "filter" { print $3; exit }')
magnet-ctl filter del __x64_sys_getpid "$fid" || fail "filter del $fid"

# Sampling 1 in 10 on one CPU.
magnet-ctl sample set __x64_sys_getpid every 10 || fail "sample set"
r0=$(counter __x64_sys_getpid recorded)
taskset 1 mgtest fire-n 1000 >/dev/null
r1=$(counter __x64_sys_getpid recorded)
[ $((r1 - r0)) = 100 ] || fail "every 10: recorded $((r1 - r0)) of 1000"
magnet-ctl sample clear __x64_sys_getpid || fail "sample clear"
echo "sampling 1 in 10: 100 of 1000"

# Disabled: no hits at all; enabled again: hits.
magnet-ctl probe disable __x64_sys_getpid || fail "disable"
h0=$(counter __x64_sys_getpid hits)
mgtest fire-n 100 >/dev/null
[ "$(counter __x64_sys_getpid hits)" = "$h0" ] || fail "a disabled probe still hits"
magnet-ctl probe enable __x64_sys_getpid || fail "enable"
mgtest fire-n 100 >/dev/null
# + 1: the magnet-ctl that reads the counter calls getpid() itself (libnl
# takes its netlink port id from it) once the probe is enabled again.
h1=$(counter __x64_sys_getpid hits)
[ $((h1 - h0)) = 101 ] || fail "enabled again: $((h1 - h0)) hits, want 100 + 1"
echo "disable/enable: 0 then 100 hits"

# Alarms: monitor prints one line per recorded hit of a notify probe.
magnet-ctl probe notify __x64_sys_getpid on || fail "notify on"
magnet-ctl monitor -c 20 >/tmp/alarms &
mon=$!
sleep 1
mgtest fire-n 20 >/dev/null
wait $mon || fail "monitor failed"
[ "$(wc -l </tmp/alarms)" -ge 20 ] || fail "monitor printed $(wc -l </tmp/alarms) alarms, want 20"
echo "monitor: $(wc -l </tmp/alarms) alarms"

# Buffers.
magnet-ctl buffer set size 128K mode overwrite || fail "buffer set"
magnet-ctl buffer show | grep -q overwrite || fail "buffer show after set"
grep -q "^0	131072	overwrite" /sys/kernel/debug/magnet/buffers || fail "rings not resized"
magnet-ctl buffer set size 3M >/dev/null 2>&1
[ $? = 1 ] || fail "size 3M: want a usage error"
magnet-ctl stats >/dev/null || fail "stats"

magnet-ctl probe del __x64_sys_getpid || fail "probe del"
[ -z "$(magnet-ctl -m probe list)" ] || fail "probe still listed after del"
rmdir /sys/fs/cgroup/job42
unload
