#!/bin/sh
# The sock and skb handlers believe only the kernel's own BTF, never what
# the adding process's mount namespace shows at /sys/kernel/btf/vmlinux (a
# container's /sys, a file mounted over it); and they read it once per
# load, not at every probe add, which holds genl_mutex for every generic
# netlink family.
. ./lib.sh
real=/sys/kernel/btf/vmlinux
[ -s $real ] || fail "no $real: this kernel has no BTF"

# Little-endian words in hex.
hex() {
	for v; do
		printf '%02x%02x%02x%02x' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) \
			$((v >> 24 & 255))
	done
}
# A BTF file that lies both ways: ksys_read(struct sock *) and
# tcp_sendmsg(int). Kinds: INT 1, PTR 2, STRUCT 4, FUNC 12, FUNC_PROTO 13.
{
	hex 0x0001eb9f 24 0 104 104 32	# magic, version 1; hdr_len, types, strings
	hex 6 $((1 << 24)) 4 32		# [1] int
	hex 1 $((4 << 24)) 0		# [2] struct sock {}
	hex 0 $((2 << 24)) 2		# [3] struct sock *
	hex 0 $((13 << 24 | 1)) 1 0 3	# [4] int (struct sock *)
	hex 10 $((12 << 24)) 4		# [5] ksys_read
	hex 0 $((13 << 24 | 1)) 1 0 1	# [6] int (int)
	hex 20 $((12 << 24)) 6		# [7] tcp_sendmsg
} | xxd -r -p >/tmp/lying-btf
printf '\000sock\000int\000ksys_read\000tcp_sendmsg\000' >>/tmp/lying-btf
[ "$(wc -c </tmp/lying-btf)" = 160 ] || fail "lying BTF: $(wc -c </tmp/lying-btf) bytes, not 160"
rm -rf /tmp/btf-lie /tmp/btf-none
mkdir /tmp/btf-lie /tmp/btf-none
cp /tmp/lying-btf /tmp/btf-lie/vmlinux

# Runs a command in a mount namespace of its own whose /sys/kernel/btf
# holds only the files of directory $1.
in_ns() { # dir command...
	# shellcheck disable=SC2016 # expanded by the inner sh
	unshare -m --propagation private sh -c \
		'mount -t tmpfs fake /sys/kernel/btf && cp -a "$0"/. /sys/kernel/btf/ && exec "$@"' "$@"
}
in_ns /tmp/btf-lie cmp -s /tmp/lying-btf $real || fail "cannot mount over /sys/kernel/btf in a namespace"
in_ns /tmp/btf-none test -e $real && fail "$real still there under the empty tmpfs"
[ "$(stat -c %s $real)" -gt 100000 ] || fail "the namespace's mount leaked out: $(stat -c %s $real) bytes"

# The load's first lookup comes from the lying namespace.
load
in_ns /tmp/btf-lie magnet-ctl probe add kprobe tcp_sendmsg handler sock >/dev/null 2>/tmp/err ||
	fail "sock on tcp_sendmsg refused where the namespace's BTF lies: $(cat /tmp/err)"
in_ns /tmp/btf-lie magnet-ctl probe add kprobe ksys_read handler sock >/dev/null 2>/tmp/err &&
	fail "sock on ksys_read accepted: the namespace's BTF was believed"
grep -q "first argument is a struct sock" /tmp/err || fail "ksys_read refused, but why: $(cat /tmp/err)"
in_ns /tmp/btf-lie magnet-ctl probe add kprobe ip_output handler skb >/dev/null 2>/tmp/err ||
	fail "skb on ip_output refused where the namespace's BTF lies: $(cat /tmp/err)"
magnet-ctl probe del ip_output || fail "del ip_output"
mgtest sock 20 || fail "sock records of the probe added in the namespace"
unload

# Again on a fresh load, from a namespace with no BTF file at all.
load
in_ns /tmp/btf-none magnet-ctl probe add kprobe ip_output handler skb >/dev/null 2>/tmp/err ||
	fail "skb on ip_output refused where the namespace has no BTF: $(cat /tmp/err)"
in_ns /tmp/btf-none magnet-ctl probe add kprobe tcp_sendmsg handler sock >/dev/null 2>/tmp/err ||
	fail "sock on tcp_sendmsg refused where the namespace has no BTF: $(cat /tmp/err)"
unload

# Read once per load: the first add indexes the BTF (one kernel log line),
# the next twenty search the index. The times are reported, not judged.
cs() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }
indexed() { dmesg | grep -c 'magnet: kernel BTF: .* functions and tracepoints indexed'; }
cycles() { # probe-add-arguments...: 20 adds and dels
	i=0
	while [ $i -lt 20 ]; do
		magnet-ctl probe add kprobe tcp_sendmsg "$@" >/dev/null || fail "add tcp_sendmsg $* ($i)"
		magnet-ctl probe del tcp_sendmsg || fail "del tcp_sendmsg ($i)"
		i=$((i + 1))
	done
}
load
before=$(indexed)
t0=$(cs)
magnet-ctl probe add kprobe tcp_sendmsg handler sock >/dev/null || fail "first sock add"
t1=$(cs)
magnet-ctl probe del tcp_sendmsg || fail "del tcp_sendmsg"
t2=$(cs)
cycles handler sock
t3=$(cs)
cycles
t4=$(cs)
n=$(($(indexed) - before))
[ "$n" = 1 ] || fail "the BTF was indexed $n times for 21 sock adds, not once"
echo "first sock add $(((t1 - t0) * 10)) ms; then per add+del: sock $(((t3 - t2) / 2)) ms," \
	"generic $(((t4 - t3) / 2)) ms"
dmesg | grep 'magnet: kernel BTF' | tail -n 1
unload
