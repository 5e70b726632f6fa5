#!/bin/sh
# The rings as character devices, /dev/magnet/cpuN (what the tools read
# where lockdown makes debugfs refuse the cpuN files: tests/vm/lockdown.sh):
# one per possible CPU, minor = CPU, root's and read-only; the same ring as
# the debugfs file (one reader between the two names); read with AIO,
# ioctls and mmap as the debugfs files are; gone at unload. With debugfs
# unmounted, magnet-read finds the rings there by itself and says what it
# lacks, and magnetd says debugfs is missing rather than the module.
. ./lib.sh

D=/sys/kernel/debug
trap 'grep -q " $D debugfs " /proc/mounts || mount -t debugfs none $D' EXIT

load probes=kprobe:__x64_sys_getpid
cpus=$(awk '$1 == "cpus" { print $2 }' $D/magnet/version)
n=0
for f in /dev/magnet/cpu*; do
	# busybox ls -ln: mode links uid gid major, minor ...
	# shellcheck disable=SC2046 # split into its fields on purpose
	set -- $(ls -ln "$f")
	[ "$1" = cr-------- ] || fail "$f: mode $1, want cr-------- (0400, a character device)"
	[ "$3:$4" = 0:0 ] || fail "$f: owner $3:$4, want root"
	[ "$6" = "${f#/dev/magnet/cpu}" ] || fail "$f: minor $6"
	[ -e "$D/magnet/${f#/dev/magnet/}" ] || fail "$f has no debugfs twin"
	n=$((n + 1))
done
[ "$n" = "$cpus" ] || fail "$n devices for $cpus possible CPUs: $(ls /dev/magnet)"
echo "/dev/magnet: $n devices, mode 0400, minor = CPU"

# One ring, two names: a reader on either holds the other's slot. (dd
# count=0 opens and reads nothing: it never waits for records.)
opens() { dd if="$1" of=/dev/null count=0 2>/tmp/e; }
if opens $D/magnet/cpu0; then
	exec 3</dev/magnet/cpu0
	opens $D/magnet/cpu0 && fail "debugfs cpu0 opened beside /dev/magnet/cpu0"
	grep -q "busy" /tmp/e || fail "debugfs cpu0 beside /dev/magnet/cpu0: $(cat /tmp/e)"
	exec 3<&-
	exec 3<$D/magnet/cpu0
	opens /dev/magnet/cpu0 && fail "/dev/magnet/cpu0 opened beside debugfs cpu0"
	grep -q "busy" /tmp/e || fail "/dev/magnet/cpu0 beside debugfs cpu0: $(cat /tmp/e)"
	exec 3<&-
	echo "one reader per ring, by either name"
elif grep -q "not permitted" /tmp/e; then
	echo "debugfs refuses cpu0 (lockdown): one name only here"
else
	fail "debugfs cpu0: $(cat /tmp/e)"
fi

# Read through the devices only (-d): AIO and the read-condition ioctl,
# then mapped (mmap and MAGNET_IOC_MMAP_ADVANCE). Every record arrives.
for how in aio mmap; do
	opt=; [ $how = mmap ] && opt=-m
	magnet-read -d /dev/magnet $opt -o /tmp/dev.mgt 2>/tmp/dev.err &
	rpid=$!
	written /tmp/dev.mgt /tmp/dev.err "magnet-read -d /dev/magnet $opt wrote no header"
	mgtest fire-n 5000 >/dev/null &
	fpid=$!
	wait $fpid
	rings_empty "magnet-read -d /dev/magnet $opt left records in the rings"
	kill -INT $rpid
	wait $rpid || fail "magnet-read -d /dev/magnet $opt: $(cat /tmp/dev.err)"
	got=$(magnet-dump -j /tmp/dev.mgt | grep -F -c "\"tgid\":$fpid,")
	[ "$got" = 5000 ] || fail "$how through /dev/magnet: $got of 5000 records: $(cat /tmp/dev.err)"
	grep -q "cannot\|error" /tmp/dev.err && fail "magnet-read -d /dev/magnet $opt: $(cat /tmp/dev.err)"
	echo "$how through /dev/magnet: 5000 of 5000 records"
done

# debugfs not mounted: the rings from /dev/magnet, by themselves.
umount $D || fail "umount debugfs"
magnet-read -o /tmp/nodbg.mgt 2>/tmp/nodbg.err &
rpid=$!
written /tmp/nodbg.mgt /tmp/nodbg.err "magnet-read without debugfs wrote no header"
mgtest fire-n 3000 >/dev/null &
fpid=$!
wait $fpid
sleep 1
kill -INT $rpid
wait $rpid || fail "magnet-read without debugfs: $(cat /tmp/nodbg.err)"
got=$(magnet-dump -j /tmp/nodbg.mgt | grep -F -c "\"tgid\":$fpid,")
[ "$got" = 3000 ] || fail "without debugfs: $got of 3000 records: $(cat /tmp/nodbg.err)"
grep -q "version not found: debugfs is not mounted.*reading the rings from /dev/magnet" /tmp/nodbg.err ||
	fail "magnet-read without debugfs said: $(cat /tmp/nodbg.err)"
echo "without debugfs, magnet-read: 3000 of 3000 records; it said: $(head -n 1 /tmp/nodbg.err)"
magnetd -f 2>/tmp/err && fail "magnetd ran without debugfs"
grep -q "debugfs is not mounted" /tmp/err || fail "magnetd without debugfs: $(cat /tmp/err)"
echo "without debugfs, magnetd: $(cat /tmp/err)"
mount -t debugfs none $D || fail "mount debugfs"

unload
[ -e /dev/magnet/cpu0 ] && fail "/dev/magnet/cpu0 left after rmmod"
[ -e /sys/class/magnet ] && fail "/sys/class/magnet left after rmmod"
echo "unload removed /dev/magnet and its class"
