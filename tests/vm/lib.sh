# Shared helpers of the VM tests (sourced; busybox sh).
# shellcheck shell=sh
# The reason also goes to a file: fail may run in a $(...) subshell, and
# failed_log repeats it after a daemon's log, where CI's tail shows it.
failed_file=/tmp/failed.$$
rm -f $failed_file
fail() { echo "FAIL: $*"; echo "$*" >>$failed_file; dmesg | tail -n 20; exit 1; }

# The debug kernel (tests/vm/debug.config; kmemleak is one of its options):
# KASAN and lockdep make some loops there ten times slower.
debug_kernel() { [ -e /sys/kernel/debug/kmemleak ]; }

# A daemon's log (its last 100 lines), then why the test failed again.
failed_log() { # log
	tail -n 100 "$1" | sed "s/^/$(basename "$1"): /"
	[ -s $failed_file ] && sed "s/^/FAIL (repeated after the log): /" $failed_file
}

# shellcheck disable=SC2120 # the parameters are optional
load() { # module parameters...
	insmod /magnet/magnet.ko "$@" || fail "insmod magnet.ko $*"
}

# An exited reader's io_uring or AIO context may still hold its file for
# a moment (their teardown runs from a workqueue): give the module's
# references up to 5 s to go before rmmod judges.
unload() {
	i=0
	while [ "$(cat /sys/module/magnet/refcnt 2>/dev/null || echo 0)" != 0 ] && [ $i -lt 50 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	rmmod magnet || fail "rmmod magnet (refcnt $(cat /sys/module/magnet/refcnt 2>/dev/null))"
}

# One counter of probe $1 (hits, recorded, missed, ...), from the text of
# magnet-ctl's 'probe show'.
# shellcheck disable=SC2020 # both blanks become newlines, position by position
counter() { # probe name
	magnet-ctl probe show "$1" | tr ' \t' '\n\n' | awk -v k="$2" 'p { print; exit } $0 == k { p = 1 }'
}

# Wait until the magnetd on MDTEST_ADDR (default its Unix socket) answers;
# its log file $1 goes into the failure.
magnetd_up() { # log
	i=0
	until mdtest cmd HELLO >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "magnetd did not come up: $(cat "$1")"
		sleep 0.1
	done
}

# A key of magnetd's STATS OK line (on MDTEST_ADDR, or its Unix socket).
stat_of() { # key
	mdtest cmd STATS | head -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# Wait (10 s at most) until magnetd has read the module's rings again,
# RELOADS times in all.
magnetd_reopened() { # reloads its-log
	i=0
	until [ "$(stat_of reloads)" = "$1" ] && [ "$(stat_of module)" = up ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "magnetd did not reopen the rings: $(cat "$2")"
		sleep 0.1
	done
}

# magnetd lets go of the rings (SIGUSR1): rmmod as soon as it has.
release_rmmod() { # magnetd's pid
	kill -USR1 "$1"
	i=0
	until rmmod magnet 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "rmmod kept failing after SIGUSR1"
		sleep 0.1
	done
}

# Wait (10 s at most) until every ring is empty: the reader took it all.
# Each thread of a process: its wait channel and kernel stack, one line.
stacks() { # pid
	for t in "/proc/$1/task/"*; do
		echo "${t##*/} $(cat "$t/wchan" 2>/dev/null): $(tr '\n' ' ' <"$t/stack" 2>/dev/null)"
	done
}
rings_empty() { # what failed [the reader's pid, whose threads are shown then]
	i=0
	while [ "$(awk 'NR > 1 { u += $4 } END { print u + 0 }' /sys/kernel/debug/magnet/buffers)" != 0 ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "$1: $(cat /sys/kernel/debug/magnet/buffers)${2:+; the reader, thread by thread: $(stacks "$2")}"
		sleep 0.1
	done
}

# Wait (10 s at most) until a reader wrote a file's first bytes.
written() { # file its-log what
	i=0
	until [ -s "$1" ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "$3: $(cat "$2")"
		sleep 0.1
	done
}
