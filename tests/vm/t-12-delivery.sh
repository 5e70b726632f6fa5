#!/bin/sh
# Delivery modes (paper 3.4): blocking, O_NONBLOCK, poll, SIGIO, AIO, timeout,
# AIO cancel, the mapped ring; one reader per ring. Mapped reading at load:
# whole records, exact losses, read() on the same file, every misuse refused;
# overwrite-mode rings are not mapped.
. ./lib.sh
load probes=kprobe:__x64_sys_getpid
for mode in block nonblock poll sigio aio timeout aio-cancel mmap; do
	mgtest deliver $mode || fail "delivery $mode"
done
mgtest ebusy || fail "one reader"
unload
load buf_size=65536 probes=kprobe:__x64_sys_getpid
mgtest mmap 100000 || fail "mapped reading"
unload
load buf_size=65536 mode=overwrite probes=kprobe:__x64_sys_getpid
mgtest mmap-overwrite || fail "overwrite-mode rings are not mapped"
unload

# magnet-read -m: the rings mapped, their records written from there.
load probes=kprobe:__x64_sys_getpid
magnet-read -m -o /tmp/m.mgt 2>/tmp/m.err &
rpid=$!
written /tmp/m.mgt /tmp/m.err "magnet-read -m wrote no header"
mgtest fire-n 20000 >/dev/null &
fpid=$!
wait $fpid
rings_empty "magnet-read -m left records in the rings"
kill -INT $rpid
wait $rpid || fail "magnet-read -m: $(cat /tmp/m.err)"
n=$(magnet-dump -j /tmp/m.mgt | grep -F -c "\"tgid\":$fpid,")
[ "$n" = 20000 ] || fail "magnet-read -m: $n of 20000 records in the trace: $(cat /tmp/m.err)"
grep -q "lost full=0 too_big=0 nesting=0 overwritten=0" /tmp/m.err || fail "magnet-read -m: $(cat /tmp/m.err)"
# What it wrote was given back: a new reader finds none of it.
magnet-read -t 1 -o /tmp/again.mgt 2>/dev/null || fail "magnet-read after magnet-read -m"
n=$(magnet-dump -j /tmp/again.mgt | grep -F -c "\"tgid\":$fpid,")
[ "$n" = 0 ] || fail "$n records read again after magnet-read -m stopped"
# -n stops it inside what it holds: given back all the same.
taskset 1 mgtest fire-n 5000 >/dev/null &	# one ring: -n stops after one
fpid=$!
wait $fpid
magnet-read -m -n 100 -o /tmp/n.mgt 2>/tmp/m.err || fail "magnet-read -m -n 100: $(cat /tmp/m.err)"
n=$(magnet-dump -j /tmp/n.mgt | grep -F -c "\"tgid\":$fpid,")
[ "$n" = 5000 ] || fail "magnet-read -m -n 100: $n of the 5000 records it found waiting"
magnet-read -t 1 -o /tmp/again.mgt 2>/dev/null || fail "magnet-read after magnet-read -m -n"
n=$(magnet-dump -j /tmp/again.mgt | grep -F -c "\"tgid\":$fpid,")
[ "$n" = 0 ] || fail "$n records read again after magnet-read -m -n stopped"
magnet-read -m -r 2 -o /tmp/x.mgt 2>/tmp/m.err && fail "magnet-read -m -r 2 accepted"
grep -q "do not apply" /tmp/m.err || fail "magnet-read -m -r: $(cat /tmp/m.err)"
echo "magnet-read -m: 20000 of 20000 records, none lost; -n 100 wrote the 5000 waiting; none read twice"
unload
load buf_size=65536 mode=overwrite probes=kprobe:__x64_sys_getpid
magnet-read -m -o /tmp/x.mgt 2>/tmp/m.err && fail "magnet-read -m read an overwrite-mode ring"
grep -q "overwrite-mode ring cannot be mapped" /tmp/m.err || fail "magnet-read -m, overwrite mode: $(cat /tmp/m.err)"
unload
