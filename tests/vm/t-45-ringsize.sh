#!/bin/sh
# magnetd sizes the rings: grown to ring_size (default 4M) at start while
# they are empty, within ring_memory, never shrunk, kept (and why) when
# they hold records not read yet, and grown again when the module comes
# back under it; each growth logged and in STATS. Nothing is lost.
. ./lib.sh

log=/tmp/magnetd.log
B=/sys/kernel/debug/magnet/buffers
S=/sys/kernel/debug/magnet/stats
sizes() { awk 'NR > 1 { print $2 }' $B | sort -u | tr '\n' ' ' | sed 's/ $//'; }
discarded() { awk 'NR > 1 { d += $8 } END { print d + 0 }' $S; }

pid=
start() { # magnetd options...
	magnetd -f -c /dev/null "$@" >$log 2>&1 &
	pid=$!
	magnetd_up $log
}
stop() {
	kill $pid
	wait $pid || fail "magnetd exit $?: $(cat $log)"
	pid=
}
cleanup() {
	rc=$?
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	[ $rc = 0 ] || failed_log $log
}
trap cleanup EXIT

# The defaults: 64K rings, empty, grow to 4M (2 CPUs, 1/32 of the
# guest's memory is far more than 8M).
load buf_size=64K
start
[ "$(sizes)" = 4194304 ] || fail "default ring_size: rings of $(sizes) bytes, want 4194304: $(cat $log)"
grep -q "rings grown from 64K to 4M per CPU (2 CPUs; ring_size 4M, ring_memory " $log ||
	fail "no growth in the log: $(cat $log)"
if [ "$(stat_of ring_size)" != 4194304 ] || [ "$(stat_of rings_grown)" != 1 ]; then
	fail "STATS: ring_size $(stat_of ring_size) rings_grown $(stat_of rings_grown), want 4194304 1"
fi
[ "$(discarded)" = 0 ] || fail "the resize discarded $(discarded) records"
echo "default: $(grep 'rings grown' $log)"
stop

# A smaller ring_size never shrinks them; 0 leaves them.
start --ring-size 128K
[ "$(sizes)" = 4194304 ] || fail "ring_size 128K shrank the rings to $(sizes)"
grep -q "rings grown\|rings kept" $log && fail "ring_size 128K on 4M rings said: $(grep rings $log)"
[ "$(stat_of rings_grown)" = 0 ] || fail "rings_grown $(stat_of rings_grown) on 4M rings"
stop
unload

# The cap: ring_memory 256K on 2 CPUs gives 128K each.
load buf_size=64K
start --ring-size 1M --ring-memory 256K
[ "$(sizes)" = 131072 ] || fail "ring_memory 256K: rings of $(sizes), want 131072"
grep -q "rings grown from 64K to 128K per CPU (2 CPUs; ring_size 1M, ring_memory 256K)" $log ||
	fail "capped growth: $(cat $log)"
stop
unload

# Records waiting: the rings stay, magnetd says why, and reads them all.
load buf_size=64K probes=kprobe:__x64_sys_getpid
mgtest fire-n 50 >/dev/null || fail "fire-n"
start --ring-size 256K
[ "$(sizes)" = 65536 ] || fail "rings with records were resized to $(sizes)"
grep -q "rings kept at 64K per CPU: they hold [0-9]* bytes of records not read yet" $log ||
	fail "no reason in the log: $(cat $log)"
[ "$(stat_of rings_grown)" = 0 ] || fail "rings_grown $(stat_of rings_grown), want 0"
rings_empty "magnetd left records in the rings"
[ "$(stat_of read)" -ge 50 ] || fail "magnetd read $(stat_of read) records, want >= 50"
echo "kept: $(grep 'rings kept' $log)"

# The module comes back under it: grown again before it is read. Its
# directory comes before its files: a tracepoint's probe at load (one that
# never fires here) reads the kernel's BTF in between, most of a second
# in which magnetd sees the directory and no buffers file yet.
release_rmmod $pid
load buf_size=64K probes=tracepoint:oom:mark_victim
magnetd_reopened 1 $log
[ "$(sizes)" = 262144 ] || fail "after the reload: rings of $(sizes), want 262144: $(cat $log)"
if [ "$(stat_of ring_size)" != 262144 ] || [ "$(stat_of rings_grown)" != 1 ]; then
	fail "STATS after the reload: ring_size $(stat_of ring_size) rings_grown $(stat_of rings_grown)"
fi
magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add after the reload"
n=$(stat_of read)
mgtest fire-n 100 >/dev/null || fail "fire-n"
rings_empty "magnetd left records in the grown rings"
[ "$(stat_of read)" -ge $((n + 100)) ] || fail "read $(stat_of read) after $n + 100 getpid"
echo "reload: $(grep 'rings grown' $log)"
stop
grep -q "(the kernel reported 0 lost)" $log || fail "stop: $(tail -n 3 $log)"
unload
