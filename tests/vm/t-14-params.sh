#!/bin/sh
# Bad module parameters fail the load with a log line naming the culprit;
# buf_size and mode change at runtime only while no reader is attached.
. ./lib.sh

refused() { # what-to-find-in-dmesg params...
	want=$1
	shift
	dmesg -c >/dev/null
	if insmod /magnet/magnet.ko "$@" 2>/dev/null; then
		rmmod magnet
		fail "insmod $* was accepted"
	fi
	grep -q magnet /proc/modules && fail "module left loaded after insmod $*"
	dmesg | grep -qF -- "$want" || fail "no log line with '$want' for insmod $*"
	echo "refused: $* -> $(dmesg | grep -F -- "$want" | tail -n 1 | sed 's/^\[[^]]*\] //')"
}

refused "'kprobe:no_such_function_xyz': no such symbol" probes=kprobe:no_such_function_xyz
refused "'uprobe:vfs_read': bad spec" probes=uprobe:vfs_read
refused "'kprobe:': bad spec" probes=kprobe:
refused "'kprobe:vfs_read:7': bad spec" probes=kprobe:vfs_read:7
refused "'kprobe:vfs_read:x': bad spec" probes=kprobe:vfs_read:x
refused "'kretprobe:vfs_read+4': bad spec" probes=kretprobe:vfs_read+4
refused "'kprobe:vfs_read:3:5000@1': bad spec" probes=kprobe:vfs_read:3:5000@1
refused "'kprobe:vfs_read:3:64@6': bad spec" probes=kprobe:vfs_read:3:64@6
refused "'kprobe:vfs_read:3:64': bad spec" probes=kprobe:vfs_read:3:64
refused "'kprobe:vfs_read+1': offset is not on an instruction boundary" probes=kprobe:vfs_read+1
refused "'kprobe:do_int3': refused by kprobes" probes=kprobe:do_int3
# a later bad entry unregisters the good ones before it
refused "'kprobe:nope_nope': no such symbol" probes=kprobe:vfs_read,kprobe:nope_nope
refused "'kprobe:vfs_read': given twice" probes=kprobe:vfs_read,kprobe:vfs_read
refused "'fentry:vfs_read': its name 'vfs_read' is taken by the kprobe probe before it" \
	probes=kprobe:vfs_read,fentry:vfs_read
refused "buf_size=1000: must be a power of two" buf_size=1000
refused "buf_size=33554433" buf_size=33554433
refused "buf_size=12Q: expected a size" buf_size=12Q
refused "mode=sideways: expected discard or overwrite" mode=sideways
refused "clock=sundial: expected mono or tsc" clock=sundial

# Runtime resize and mode switch.
load buf_size=65536 probes=kprobe:__x64_sys_getpid
p=/sys/module/magnet/parameters
echo 128K >$p/buf_size || fail "resize with no reader"
grep -q "^0	131072	discard" /sys/kernel/debug/magnet/buffers || fail "buffers does not show the new size"
echo 100000 >$p/buf_size 2>/dev/null && fail "a non-power-of-two size was accepted"
mgtest hold read &
holder=$!
sleep 1
echo 262144 >$p/buf_size 2>/dev/null && fail "resize accepted while a reader is attached"
echo overwrite >$p/mode 2>/dev/null && fail "mode change accepted while a reader is attached"
kill $holder
wait $holder
echo overwrite >$p/mode || fail "mode change with no reader"
[ "$(cat $p/mode)" = overwrite ] || fail "mode reads back as $(cat $p/mode)"
grep -q "^1	131072	overwrite" /sys/kernel/debug/magnet/buffers || fail "buffers does not show overwrite"
mgtest getpid 200 || fail "records after a resize"
unload

# The raw TSC clock: records still come back in order.
load clock=tsc probes=kprobe:__x64_sys_getpid
grep -q "^clock tsc" /sys/kernel/debug/magnet/version || fail "version does not say tsc"
grep -q "^tsc_khz [1-9]" /sys/kernel/debug/magnet/version || fail "no tsc_khz"
mgtest getpid 200 || fail "tsc records"
unload
