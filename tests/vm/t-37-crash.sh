#!/bin/sh
# Trace files and a crash: magnetd writes a trace (1 MiB files) to an ext4
# disk while a workload fires a probe, and the guest crashes (sysrq c) right
# after a rotation, mid-trace. In a second boot the kernel recovers the
# file system (its journal) and every finished file (.mgt) decodes whole
# with magnet-dump: header, records, trailer; the one being written (.part)
# only up to where it was cut, and says so. All are 0600 in a 0700
# directory. Then magnetd refuses trace directories it cannot trust
# (another user's, group- or other-writable, a symbolic link), and a clean
# stop leaves only whole, finished files, whatever the umask.
#
# vm-disk: 512M
# vm-boot: write --expect-crash
# vm-boot: check
. ./lib.sh

disk=/mnt/disk
dir=$disk/trace
log=/tmp/magnetd.log

# Trace files there, .part included.
files() { # dir
	set -- "$1"/magnetd-*
	if [ -e "$1" ]; then echo $#; else echo 0; fi
}

# Wait (60 s at most) until $1 holds more than $2 trace files.
more_files() { # dir n
	i=0
	while [ "$(files "$1")" -le "$2" ]; do
		i=$((i + 1))
		[ $i -lt 1200 ] || fail "$1: no more than $2 files: $(ls -l "$1"; cat $log)"
		sleep 0.05
	done
}

# Every finished file of $1 decodes whole: no error, no warning (a trailer).
whole() { # dir
	for f in "$1"/magnetd-*.mgt; do
		[ -e "$f" ] || fail "$1: no finished file"
		magnet-dump -s "$f" >/tmp/st 2>/tmp/err ||
			fail "$f ($(stat -c %s "$f") bytes): $(cat /tmp/err)"
		[ -s /tmp/err ] && fail "$f: $(cat /tmp/err)"
		n=$(magnet-dump "$f" 2>/tmp/err | grep -F -c __x64_sys_getpid)
		[ -s /tmp/err ] && fail "$f: $(cat /tmp/err)"
		[ "$n" -gt 0 ] || fail "$f: no record"
		[ "$(stat -c %a "$f")" = 600 ] || fail "$f: mode $(stat -c %a "$f")"
		echo "$(basename "$f"): $(stat -c %s "$f") bytes, $n records, whole"
	done
}

start_magnetd() { # conf
	magnetd -f -c "$1" >$log 2>&1 &
	pid=$!
	magnetd_up $log
}

write() {
	mount -t ext4 /dev/vda $disk || fail "mount /dev/vda"
	echo "mounted: $(grep " $disk " /proc/mounts)"
	load buf_size=4M
	magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add"
	printf 'trace = %s\ntrace_size = 1M\n' $dir >/tmp/magnetd.conf
	start_magnetd /tmp/magnetd.conf
	# A workload of a few MB/s at most, however fast the machine: the
	# disk does not fill up.
	while :; do mgtest fire-n 5000 >/dev/null; sleep 0.05; done &
	# Past ext4's commit interval (5 s): the journal has the names of
	# the first files; a writer that never syncs has no data under them.
	sleep 8
	more_files $dir 4
	set -- $dir/magnetd-*
	shift $(($# > 3 ? $# - 3 : 0))
	stat -c '%n: %s bytes' "$@" 2>/dev/null	# (a rename may race)
	# The next rotation, and the crash at once: the file just finished
	# is the one an unsynced writer would lose.
	n=$(files $dir)
	more_files $dir "$n"
	echo "crash at $(cut -d' ' -f1 /proc/uptime) s, right after file $n"
	echo c >/proc/sysrq-trigger
	sleep 10
	fail "the guest did not crash"
}

check() {
	mount -t ext4 /dev/vda $disk || fail "mount /dev/vda after the crash"
	dmesg | grep "EXT4-fs (vda)"
	ls -l $dir
	[ "$(stat -c %a $dir)" = 700 ] || fail "$dir: mode $(stat -c %a $dir)"
	nfin=0 part=
	for f in "$dir"/magnetd-*; do
		case $f in
		*.mgt) nfin=$((nfin + 1)) ;;
		*.mgt.part) [ -z "$part" ] || fail "two files being written: $part, $f"; part=$f ;;
		*) fail "$f: not a trace file's name" ;;
		esac
	done
	[ $nfin -ge 4 ] || fail "$nfin finished files after the crash, not 4 or more"
	# Finished: 000000 on, no gap; the one being written after them.
	i=0
	while [ $i -lt $nfin ]; do
		f=$(printf '%s/magnetd-%06d.mgt' $dir $i)
		[ -e "$f" ] || fail "no $f: $(ls $dir)"
		i=$((i + 1))
	done
	[ -z "$part" ] || [ "$part" = "$(printf '%s/magnetd-%06d.mgt.part' $dir $nfin)" ] ||
		fail "$part: not the file after the finished ones"
	whole $dir
	if [ -n "$part" ]; then
		[ "$(stat -c %a "$part")" = 600 ] || fail "$part: mode $(stat -c %a "$part")"
		rc=0
		magnet-dump "$part" >/tmp/part 2>/tmp/err || rc=$?
		n=$(grep -c __x64_sys_getpid /tmp/part)
		# Whole up to where it was cut; cut, it says where and how.
		[ $rc = 0 ] || grep -qE "runs past the end of the file|file ends inside|shorter than the" /tmp/err ||
			fail "$part: corrupt, not cut: $(cat /tmp/err)"
		echo "$(basename "$part"): $(stat -c %s "$part") bytes, being written: $n records, then: $(cat /tmp/err)"
	fi

	# Directories magnetd cannot trust: refused, with the reason.
	load
	refused() { # dir reason
		printf 'trace = %s\n' "$1" >/tmp/bad.conf
		magnetd -f -c /tmp/bad.conf >/tmp/bad.log 2>&1 && fail "trace = $1 accepted"
		grep -q "$2" /tmp/bad.log || fail "trace = $1: $(cat /tmp/bad.log)"
		echo "refused: $(cat /tmp/bad.log)"
	}
	refused /tmp "writable by its group or others (mode 1777): refused"
	mkdir -m 0775 $disk/shared
	refused $disk/shared "writable by its group or others (mode 0775): refused"
	ln -s $dir $disk/link
	refused $disk/link "a symbolic link: refused"
	mkdir $disk/nobody && chown 65534:65534 $disk/nobody
	refused $disk/nobody "owned by uid 65534, not by uid 0"

	# A clean stop, under a umask that would give everything away.
	magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add"
	printf 'trace = %s/clean\ntrace_size = 1M\n' $disk >/tmp/magnetd.conf
	(umask 0 && exec magnetd -f -c /tmp/magnetd.conf) >$log 2>&1 &
	pid=$!
	magnetd_up $log
	mgtest fire 3 >/dev/null
	kill -TERM $pid
	wait $pid || fail "magnetd's exit: $(cat $log)"
	[ "$(stat -c %a $disk/clean)" = 700 ] || fail "$disk/clean: mode $(stat -c %a $disk/clean)"
	for f in "$disk"/clean/*.part; do
		[ -e "$f" ] && fail "a .part after a clean stop: $f"
	done
	whole $disk/clean
	umount $disk || fail "umount"
}

case ${1:-} in
write) write ;;
check) check ;;
*) fail "usage: t-37-crash.sh write|check (tests/vm/boots runs it)" ;;
esac
