#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/munged.sh - a munged of a test's own, in the guest or on the
# host (busybox sh or any sh): Debian's munged, its key, socket, pid, seed
# and log files in DIR, never /etc/munge or /run/munge. In the guest,
# munged and mungekey are the host's (GUEST_FILES: tests/vm/run stages a
# dynamic program with its loader and libraries).
#
#   sh munged.sh start DIR [KEY]   a key copied from KEY, or a new one
#                                  (mungekey); returns once the socket
#                                  DIR/socket serves; exit 1 and munged's
#                                  words when it does not
#   sh munged.sh stop DIR          stop it (its socket goes) and wait
#
# munged runs as root here (--force: it would rather not), and checks
# that no other user may write its key or its socket's directory: DIR is
# made 0755, the key 0600.
PATH=$PATH:/usr/sbin:/sbin

die() { echo "munged.sh: $*" >&2; exit 1; }

case ${1:-} in
start)
	dir=${2:?usage: munged.sh start DIR [KEY]}
	{ mkdir -p "$dir" && chmod 0755 "$dir"; } || die "cannot make $dir"
	if [ -n "${3:-}" ]; then
		{ cp "$3" "$dir/key" && chmod 0600 "$dir/key"; } || die "cannot copy the key $3"
	else
		mungekey -c -k "$dir/key" >"$dir/out" 2>&1 || die "mungekey: $(cat "$dir/out")"
	fi
	# munged forks, and returns once its socket serves, or failed.
	munged --force --key-file="$dir/key" --socket="$dir/socket" \
		--pid-file="$dir/pid" --seed-file="$dir/seed" \
		--log-file="$dir/log" >>"$dir/out" 2>&1 ||
		die "munged did not start: $(cat "$dir/out" "$dir/log" 2>/dev/null)"
	[ -S "$dir/socket" ] || die "munged started, but no socket $dir/socket"
	;;
stop)
	dir=${2:?usage: munged.sh stop DIR}
	pid=$(cat "$dir/pid" 2>/dev/null) || exit 0
	kill "$pid" 2>/dev/null || exit 0
	i=0
	# Gone, or a zombie: it forked away, its reaper is not ours.
	while [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || die "munged ($pid) did not stop"
		sleep 0.1
	done
	;;
*)
	die "usage: munged.sh start DIR [KEY] | stop DIR"
	;;
esac
