#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# vm-bench.sh - the in-VM half of the bench (bench/run boots the VM with
# tests/vm/run and runs this; busybox sh). Prints machine-readable lines
# "bench: key=value" (bench/run formats them) and the tools' own output.
#
# Needs in the guest: /magnet/magnet.ko, magnet-read, ftrace-read and
# loadgen in PATH (row 4 also magnet-ctl; row 5 magnetd, magnet-cat and
# mdtest, and for its TCP subscriber /usr/sbin/munged and mungekey with
# their libraries), debugfs and tracefs mounted, 2 CPUs. The workload runs on CPU 0,
# the readers on CPU 1. The sections are numbered as bench/run's table rows
# (row 1 is native); $BENCH_ROWS lists the ones to run (default "2 3 4 5 6 7").
# Row 6 also needs magnet-ctl, magnet-dump, udpflood and, for its tcpdump
# runs, tcpdump with its libraries (bench/run stages them).
#
# 2. Probe cost: ns per getpid() (loadgen getpid $BENCH_ITER, pinned), with
#    (a) no probe, (b) magnet (kprobe:__x64_sys_getpid, 40-byte records)
#    drained by magnet-read to /dev/null, (c) ftrace (p:getpid
#    __x64_sys_getpid, no args: 20-byte events) drained by ftrace-read to
#    /dev/null, (d) magnet's fentry probe (fentry:__do_sys_getpid, what
#    __x64_sys_getpid calls: the wrapper has no ftrace call site), the same
#    40-byte records. $BENCH_REPS rounds of a, b, c, d interleaved, so
#    drift of the host hits all alike; the table takes the medians. The
#    guest's clocksource is the TSC, as on a hardware node (bench/run
#    boots it with tsc=reliable; QEMU's emulated HPET, which the guest
#    picks otherwise, costs ~0.5 us a read, an exit to the device model,
#    and both tracers read the clock once a record): then the same rounds
#    again on the HPET, to show what that does (cost_*_hpet).
# 3. Drain rate: a flood for $BENCH_DUR seconds on CPU 0, drained by each
#    tracer's reader on CPU 1 into /dev/null:
#      small: getpid with 3 args: magnet kprobe:__x64_sys_getpid:3 (64-byte
#             records), ftrace p:getpid __x64_sys_getpid $arg1..3 (44 bytes:
#             4 ring header, 8 common fields, 8 ip, 24 args)
#      large: write(2) of 4000-byte buffers to /dev/full, probed at
#             write_full (what /dev/full's write calls: write_null's twin
#             that fails with ENOSPC) with 3 args and the 4000 bytes at
#             arg 1 (the buffer): magnet kprobe:write_full:3:4000@1
#             (4072-byte records), ftrace ... buf=+0($arg2):ustring (4052
#             bytes). The buffer is 3999 'x' and a NUL, and 6.1 fetches
#             strings up to MAX_STRING_SIZE = PATH_MAX = 4096 bytes, so
#             ftrace records the same 4000 bytes. Not vfs_write or
#             write_null: the readers write(2) their output to /dev/null,
#             which must not feed the probe (and ksys_pwrite64 is inlined
#             into the pwrite64 syscall, so it never fires).
#    Each workload runs unpaced (the offered rate is whatever the tracer's
#    probe lets the load reach), then paced at one rate for both tracers
#    (90% of the slower unpaced rate), so their losses compare at the same
#    offered load.
#    Rows 2 and 3 also run perf where bench/run staged it (see "perf"
#    below): perf record on the very ftrace kprobe event (the same args and
#    bytes), writing perf.data to a tmpfs; paced at the same rate.
#    Rows 2 and 3 also run LTTng where bench/run staged it (see "LTTng"
#    below): a kprobe event on the same symbol, lttng-consumerd writing to a
#    tmpfs directory; its records hold the address only (no args, no
#    bytes: ~12 bytes stored), so it is a rate beside the others, not the
#    same record; row 3's paced rate stays the one of magnet and ftrace.
# 4. Control plane, 5. consumers (magnetd vs magnet-read vs ftrace-read),
#    and 6. the paper's tcpdump comparison: see their sections below.
#
# Both tracers get the same ring per CPU ($BENCH_BUF bytes: magnet
# buf_size, ftrace buffer_size_kb), the same loss policy (magnet's default
# discard; ftrace options/overwrite=0, whose losses show as "dropped
# events") and the same clock (magnet's default mono is
# ktime_get_mono_fast_ns, which is ftrace's trace_clock "mono").
# ftrace's options/record-cmd is off: ftrace-read needs no command names,
# and with it on each event's enable and disable re-patches the
# scheduler's tracepoints, which under multi-threaded TCG can leave the
# other vCPU spinning on the patch's int3 (a soft lockup in the guest).
set -u

ITER=${BENCH_ITER:-2000000}
REPS=${BENCH_REPS:-3}
DUR=${BENCH_DUR:-5}
BUF=${BENCH_BUF:-1048576}
RATE=${BENCH_RATE:-100000}
CDUR=${BENCH_CONS_DUR:-4}
CREPS=${BENCH_CONS_REPS:-3}
ROWS=${BENCH_ROWS:-2 3 4 5 6 7}
T=/sys/kernel/tracing
M=/sys/kernel/debug/magnet
KO=/magnet/magnet.ko
W=1	# taskset mask of the workload: CPU 0
R=2	# and of the readers: CPU 1
TMP=/tmp/bench

out() { echo "bench: $1=$2"; }
die() { echo "vm-bench: $*"; dmesg | tail -n 20; exit 1; }
want() { case " $ROWS " in *" $1 "*) return 0 ;; esac; return 1; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

mkdir -p $TMP
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (tests/vm/run --smp 2)"
[ -f $KO ] || die "no $KO"
out kernel "$(uname -r)"
out cpus "$(nproc)"
out iter "$ITER"
out reps "$REPS"
out dur "$DUR"
out buf "$BUF"
out cons_dur "$CDUR"
out cons_reps "$CREPS"

# ---- tracer setup -------------------------------------------------------

magnet_on() { # probes
	insmod $KO "buf_size=$BUF" "probes=$1" || die "insmod probes=$1"
}

magnet_off() {
	rmmod magnet || die "rmmod magnet"
}

# Sums over CPUs of magnet/stats and the probe's hits and misses. lost:
# every record a hit did not write, the fairness rule's drops (lost_fair: a
# job over its share while the ring is filling) among them.
magnet_counts() { # prefix
	awk -v p="$1" 'NR > 1 { w += $2; l += $4 + $5 + $6 + $9; f += $4; t += $5; j += $9 }
		END { printf "bench: %s_written=%.0f\nbench: %s_lost=%.0f\n", p, w, p, l
			printf "bench: %s_lost_full=%.0f\nbench: %s_lost_too_big=%.0f\n", p, f, p, t
			printf "bench: %s_lost_fair=%.0f\n", p, j }' $M/stats
	awk -v p="$1" '{ h += $5; m += $6 }
		END { printf "bench: %s_hits=%.0f\nbench: %s_missed=%.0f\n", p, h, p, m }' $M/probes
}

ftrace_on() { # kprobe_events line, event name
	echo 0 > $T/tracing_on
	echo mono > $T/trace_clock || die "trace_clock mono"
	echo 0 > $T/options/overwrite || die "options/overwrite"
	echo 0 > $T/options/record-cmd || die "options/record-cmd"
	echo $((BUF / 1024)) > $T/buffer_size_kb || die "buffer_size_kb"
	echo "$1" > $T/kprobe_events || die "kprobe_events: $1"
	echo > $T/trace
	echo 1 > "$T/events/kprobes/$2/enable" || die "enable $2"
	echo 1 > $T/tracing_on
}

ftrace_off() { # event name
	echo 0 > $T/tracing_on
	echo 0 > "$T/events/kprobes/$1/enable"
	echo > $T/kprobe_events || die "cannot remove the kprobe event"
	echo > $T/trace
}

# Sums over CPUs of per_cpu/cpuN/stats, and kprobe_profile's hits/misses.
ftrace_counts() { # prefix event
	cat $T/per_cpu/cpu*/stats | awk -v p="$1" '
		/^overrun:/ { o += $2 } /^dropped events:/ { d += $3 }
		/^entries:/ { e += $2 } /^read events:/ { r += $3 }
		END { printf "bench: %s_lost=%.0f\nbench: %s_overrun=%.0f\nbench: %s_dropped=%.0f\nbench: %s_unread=%.0f\nbench: %s_read=%.0f\n",
			p, o + d, p, o, p, d, p, e, p, r }'
	awk -v p="$1" -v e="$2" '$1 == e { printf "bench: %s_hits=%.0f\nbench: %s_missed=%.0f\n", p, $2, p, $3 }' \
		$T/kprobe_profile
}

# LTTng (rows 2, 3 and 7, where bench/run staged it: lttng-modules built by
# bench/lttng-build at /lib/modules, the host's lttng-tools): one session
# daemon for the whole run (--kmod-probes=lttng-probe-sched: loading every
# tracepoint probe takes long in TCG and none is used), and per run a
# session writing to a tmpfs directory (LTTng's consumer writes files; it
# cannot write to /dev/null), one kernel channel of 4 sub-buffers of
# $BENCH_BUF/4 bytes (the others' ring per CPU), discard mode, its
# lttng-consumerd draining it. Its kprobe events record the probed address
# and nothing else (no args, no user memory). The kernel consumer is not
# woken by the writers: a timer polls the buffers every read-timer period,
# 200 ms by default, in which at row 7's 25 MB/s (1000-byte events at
# 25000/s) the 1 MiB buffer fills five times (measured: 57% and 77% lost at
# 500 and 1000 bytes); $BENCH_LTTNG_READ_TIMER (10000 us) gives it its best
# chance (the timer's resolution is a jiffy, 4 ms).
LTTNG_CONSUMERD=/usr/lib/x86_64-linux-gnu/lttng/libexec/lttng-consumerd
LTTNG_RT=${BENCH_LTTNG_READ_TIMER:-10000}

lttng_up() {
	[ -x /usr/bin/lttng ] && [ -x /usr/bin/lttng-sessiond ] && [ -x $LTTNG_CONSUMERD ] &&
		[ -f "/lib/modules/$(uname -r)/modules.dep" ] || return 1
	export HOME=/root LTTNG_HOME=/root
	mkdir -p /root /var/run
	lttng-sessiond -d --kmod-probes=lttng-probe-sched >$TMP/sessiond.log 2>&1 ||
		{ cat $TMP/sessiond.log; return 1; }
	i=0
	until lttng list >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || { cat $TMP/sessiond.log; return 1; }
		sleep 0.1
	done
	SDPID=$(pidof lttng-sessiond)
	[ -e /proc/lttng-logger ] || { echo "vm-bench: no /proc/lttng-logger"; return 1; }
	lttng --version | head -n 1
}

# A session with one event: a kprobe on SYMBOL, or the lttng_logger event.
lttng_start() { # outdir kprobe:SYMBOL | logger
	rm -rf "$1"
	lttng create bench --output="$1" >$TMP/lttng.out 2>&1 || { cat $TMP/lttng.out; die "lttng create"; }
	lttng enable-channel -k ch --discard --subbuf-size=$((BUF / 4)) --num-subbuf=4 \
		--read-timer="$LTTNG_RT" >>$TMP/lttng.out 2>&1 ||
		{ cat $TMP/lttng.out; die "lttng enable-channel"; }
	case $2 in
	kprobe:*)
		lttng enable-event -k --probe="${2#kprobe:}" kp -c ch >>$TMP/lttng.out 2>&1 ;;
	logger)
		lttng enable-event -k lttng_logger -c ch >>$TMP/lttng.out 2>&1 ;;
	esac || { cat $TMP/lttng.out; die "lttng enable-event ($2)"; }
	lttng start >>$TMP/lttng.out 2>&1 || { cat $TMP/lttng.out; die "lttng start"; }
	LPIDS=$(pidof lttng-consumerd)
	[ -n "$LPIDS" ] || { cat $TMP/lttng.out; die "no lttng-consumerd"; }
}

# Stop (the consumer flushes what is left) and count: hits = HITS, or the
# ops of the last loadgen run ($TMP/load.out); lost = the discarded events
# "lttng stop" reports; drained = hits - lost; bytes: the trace's stream
# files (records with their packet headers; not the indexes).
lttng_stop() { # prefix outdir [hits]
	lttng stop >$TMP/lttng.out 2>&1 || { cat $TMP/lttng.out; die "lttng stop"; }
	sed 's/^/lttng: /' $TMP/lttng.out
	# "Warning: 123 events were discarded[ and 4 packets were lost],
	# please refer to ..." (nothing when none)
	d=$(sed -n 's/.* \([0-9][0-9]*\) events\{0,1\} were discarded.*/\1/p' $TMP/lttng.out | head -n 1)
	out "${1}_lost" "${d:-0}"
	lp=$(sed -n 's/.* \([0-9][0-9]*\) packets\{0,1\} were lost.*/\1/p' $TMP/lttng.out | head -n 1)
	out "${1}_lost_packets" "${lp:-0}"
	h=${3:-$(sed -n 's/.*ops=\([0-9]*\).*/\1/p' $TMP/load.out)}
	out "${1}_hits" "$h"
	out "${1}_drained" $((h - ${d:-0}))
	out "${1}_drained_bytes" "$(find "$2" -type f -path '*kernel*' ! -path '*index*' ! -name metadata \
		-exec cat {} + | wc -c)"
	lttng destroy bench >/dev/null 2>&1 || die "lttng destroy"
	rm -rf "$2"
}

LTTNG=0
if want 2 || want 3 || want 7; then
	if lttng_up >$TMP/lttng.v 2>&1; then
		cat $TMP/lttng.v
		LTTNG=1
		out lttng "$(tail -n 1 $TMP/lttng.v | sed 's/^lttng (LTTng Trace Control) //')"
		out lttng_read_timer "$LTTNG_RT"
	else
		cat $TMP/lttng.v
		echo "vm-bench: no LTTng in the guest (bench/run stages it where bench/lttng-build could build it): rows 2, 3 and 7 without it"
		out lttng none
	fi
fi

# perf (rows 2 and 3, where bench/run staged the host's perf at
# /magnet/bin/perf): perf record -a on the same kprobe event ftrace's runs
# define in kprobe_events (args and fetched bytes included: perf records a
# tracepoint's raw data by default), on the readers' CPU, with the same ring
# per CPU (-m BUF/4096 pages), writing perf.data to a tmpfs of its own (-B
# -N: no build-id pass over the file at the end, no ~/.debug cache).
# perf prints nothing once it records, so it starts with its events
# disabled (-D -1) and is told "enable" on its control fifo; its "ack"
# means they are on (in TCG perf takes seconds to start: a fixed sleep
# lost the first half of a load). The probe's hits (kprobe_profile) are
# read just before "enable" (after a "ping": perf has opened its events,
# which arms the kprobe, and synthesized the threads) and just after
# "disable".
# Counts, from perf report --stats (seconds, where perf script takes a
# minute and perf report -D eight for 2M samples in TCG): drained = the
# SAMPLE records in the file; lost = the sum of its LOST_SAMPLES records:
# at its end perf record reads each event's lost count (PERF_FORMAT_LOST:
# the kernel's count of samples it could not write, ring full), which
# --stats sums per event; the PERF_RECORD_LOST records the kernel writes
# into the ring once there is room again say the same but miss the
# losses at the very end (their number, lost_records, is printed beside).
# drained_bytes: the size of perf.data (its records as stored, with
# perf's header and the few records it synthesizes). unaccounted = hits -
# drained - lost: 0 in 13 of 14 runs in single-threaded TCG, losses or
# not (the 14th: -134); in MTTCG below 0 in 18 of 19: perf.data held more
# samples than the probe fired (up to 0.16%, all from the load's thread,
# and the probe's hits == loadgen's calls), never fewer.
PD=$TMP/perf
PERF=0
perf_up() {
	command -v perf >/dev/null && perf --version || return 1
	echo -1 >/proc/sys/kernel/perf_event_paranoid || return 1
	echo 0 >/proc/sys/kernel/kptr_restrict
	export HOME=/root
	mkdir -p /root $PD
	mount -t tmpfs -o size=2g perfdata $PD || return 1
	rm -f $TMP/perf.ctl $TMP/perf.ack
	mkfifo $TMP/perf.ctl $TMP/perf.ack
}

if want 2 || want 3; then
	if perf_up >$TMP/perf.v 2>&1; then
		cat $TMP/perf.v
		PERF=1
		out perf "$(tail -n 1 $TMP/perf.v | sed 's/^perf version //')"
	else
		cat $TMP/perf.v
		echo "vm-bench: no perf in the guest (bench/run stages the host's /usr/bin/perf): rows 2 and 3 without it"
		out perf none
	fi
fi

# eBPF (rows 2, 3 and 7): the same probes as magnet's, by two eBPF tools.
# bpf-ring (bench/bpf-ring.c, where bench/run staged it): a libbpf program
# whose kprobe or fentry program reserves magnet's own record (the same
# header, args and captured bytes) in one BPF ring buffer
# (bpf_ringbuf_reserve/submit, default flags: the consumer is woken when
# it has caught up) and counts per CPU its hits and failed reserves (its
# lost); its consumer drains with ring_buffer__poll() into the same file
# as the others' readers. The BPF ring buffer is one for all CPUs: it gets
# $BENCH_BUF x CPUs bytes, what every other tracer has in all
# ($BENCH_BPF_RING bytes if set: e.g. what the others have on one CPU).
# bpftrace (the host's, staged with its libraries): a kprobe and a kfunc
# (fentry) program printing the same fields as text (nsecs, cpu, tid, pid,
# cgroup, the args, the bytes as a string), through its perf buffers of
# $BENCH_BUF per CPU (BPFTRACE_PERF_RB_PAGES), to a tmpfs file (it cannot
# write to /dev/null: the file's first line, printed by BEGIN once every
# probe is attached, is how the bench knows it is ready). bpftrace 0.17
# fetches at most BPFTRACE_STRLEN <= 200 bytes of a string (its BPF stack
# is 512 bytes): 100-byte payloads only. It counts no hits: its hits are
# the load's calls, its drained the lines it wrote, its lost hits -
# drained (the "Lost N events" it prints are summed apart: the kernel's
# PERF_RECORD_LOST counts it read before it was stopped). It is stopped
# once it is idle (it has written what its rings held);
# a SIGINT it does not answer in 20 s is followed by SIGKILL.
BPF=0 BT=0
RB=${BENCH_BPF_RING:-$((BUF * $(nproc)))}
BT_PAGES=$((BUF / 4096))
if want 2 || want 3 || want 7; then
	if command -v bpf-ring >/dev/null && [ -f /sys/kernel/btf/vmlinux ]; then
		BPF=1
		out bpf_ring "$RB"
	else
		echo "vm-bench: no bpf-ring (bench/run stages it): rows 2, 3 and 7 without it"
		out bpf_ring none
	fi
	if command -v bpftrace >/dev/null && bpftrace --version >$TMP/bt.v 2>&1; then
		BT=1
		out bpftrace "$(sed 's/^bpftrace v//' $TMP/bt.v)"
	else
		echo "vm-bench: no bpftrace (bench/run stages the host's): rows 2, 3 and 7 without it"
		out bpftrace none
	fi
fi

# The run time of a process's threads (ns).
run_ns() { # pid
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# Wait until PID is idle: less than 2% of a CPU in half a second (at
# most 30 s). Not "no growth": bpftrace's poll loop wakes every 100 ms,
# ~3 ms of CPU a second in TCG, idle or not.
idle_wait() { # pid
	p0=$(run_ns "$1")
	i=0
	while [ $i -lt 60 ]; do
		sleep 0.5
		p1=$(run_ns "$1")
		[ $((p1 - p0)) -lt 10000000 ] && return
		p0=$p1
		i=$((i + 1))
	done
	echo "vm-bench: $1 still busy after 30 s"
}

# SIGINT, then SIGKILL if it has not exited in 20 s; its exit status.
stop_pid() { # pid
	kill -INT "$1"
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$1" 2>/dev/null && { echo "vm-bench: $1 ignored SIGINT: killed"; kill -KILL "$1"; }
	wait "$1"
}

# Wait (at most 120 s) for a line "ready" in FILE, while PID lives.
ready_wait() { # file pid what
	i=0
	until grep -q '^ready' "$1" 2>/dev/null; do
		kill -0 "$2" 2>/dev/null || { cat "$1" $TMP/reader.err; die "$3 did not start"; }
		i=$((i + 1))
		[ $i -lt 1200 ] || { cat "$1" $TMP/reader.err; die "$3 not ready in 120 s"; }
		sleep 0.1
	done
}

# bpf-ring: PROBE kprobe:SYM or fentry:SYM, NARGS, CAP bytes of arg 1.
bpf_start() { # probe nargs cap output [wake-up bytes]
	taskset $R bpf-ring -s "$RB" -a "$2" -c "$3" -w "${5:-0}" -o "$4" "$1" 2>$TMP/reader.err &
	RPID=$!
	ready_wait $TMP/reader.err $RPID "bpf-ring $1"
}

bpf_stop() { # prefix
	stop_pid "$RPID" || { cat $TMP/reader.err; die "bpf-ring failed"; }
	cat $TMP/reader.err
	sed -n 's/^bpf_hits=\([0-9]*\) bpf_lost=\([0-9]*\) bpf_drained=\([0-9]*\) bpf_drained_bytes=\([0-9]*\)$/\1 \2 \3 \4/p' \
		$TMP/reader.err | awk -v p="$1" '{ printf "bench: %s_hits=%s\nbench: %s_lost=%s\n", p, $1, p, $2
			printf "bench: %s_drained=%s\nbench: %s_drained_bytes=%s\n", p, $3, p, $4 }'
}

# bpftrace: one probe (kprobe:SYM or kfunc:SYM), printing the fields of
# magnet's record: its header's (nsecs, cpu, tid, pid, cgroup), NARGS
# args, CAP bytes of the string at arg 1.
bt_start() { # probe nargs cap output
	case $1 in
	kfunc:*) a0='args->file' a1='args->buf' a2='args->count' ;;
	*) a0=arg0 a1=arg1 a2=arg2 ;;
	esac
	f='%llu %u %u %u %llu' v='nsecs, cpu, tid, pid, cgroup'
	[ "$2" = 0 ] || f="$f %lx %lx %lx" v="$v, (uint64)$a0, (uint64)$a1, (uint64)$a2"
	[ "$3" = 0 ] || f="$f %s" v="$v, str($a1, $3)"
	BT_OUT=$4
	BPFTRACE_PERF_RB_PAGES=$BT_PAGES BPFTRACE_STRLEN=200 taskset $R bpftrace \
		-e "BEGIN { printf(\"ready\\n\") } $1 { printf(\"$f\\n\", $v) }" >"$4" 2>$TMP/reader.err &
	RPID=$!
	ready_wait "$4" $RPID "bpftrace $1"
}

bt_stop() { # prefix hits
	idle_wait "$RPID"
	stop_pid "$RPID" || { cat $TMP/reader.err; die "bpftrace failed"; }
	grep -v '^stdin:\|^BEGIN\|^ *~' $TMP/reader.err
	# its lines: "Attaching N probes...", "ready", a record a line
	# (digits first), blank lines at its exit; "Lost N events" among them
	# (its own process's hits apart: they are not the load's)
	awk -v p="$1" -v h="$2" -v me="$RPID" '/^[0-9]/ && $4 == me { self++; next }
		/^[0-9]/ { n++; b += length($0) + 1 } /^Lost [0-9]+ events/ { l += $2 }
		END { lost = h - n; if (lost < 0) lost = 0
			printf "bench: %s_self=%.0f\n", p, self
			printf "bench: %s_hits=%.0f\nbench: %s_drained=%.0f\nbench: %s_drained_bytes=%.0f\n", p, h, p, n, p, b
			printf "bench: %s_lost=%.0f\nbench: %s_lost_reported=%.0f\n", p, lost, p, l }' "$BT_OUT"
	rm -f "$BT_OUT"
}

# One eBPF config on a load: C one of bpf (bpf-ring kprobe), bpff (its
# fentry), bpfw (its kprobe waking the consumer only once 64 KiB wait, as
# magnet-read's default watermark: row 2 only), bt (bpftrace kprobe), btf
# (bpftrace kfunc).
ebpf_start() { # config symbol nargs cap output
	case $1 in
	bpf) bpf_start "kprobe:$2" "$3" "$4" "$5" ;;
	bpfw) bpf_start "kprobe:$2" "$3" "$4" "$5" 65536 ;;
	bpff) bpf_start "fentry:$2" "$3" "$4" "$5" ;;
	bt) bt_start "kprobe:$2" "$3" "$4" "$5" ;;
	btf) bt_start "kfunc:$2" "$3" "$4" "$5" ;;
	esac
}

ebpf_stop() { # config prefix hits (bpftrace: the load's calls)
	case $1 in
	bpf*) bpf_stop "$2" ;;
	bt*) bt_stop "$2" "$3" ;;
	esac
}

# The probe's hits so far (kprobe_profile).
kp_hits() { # event
	awk -v e="$1" '$1 == e { print $2 }' $T/kprobe_profile
}

# Send perf a control command and wait for its ack (at most 60 s). One
# read with one deadline: busybox's `read -t` reads a byte at a time and,
# when its deadline passes mid-line, drops what it has read, so a loop of
# 1 s reads once got "ck" when perf's "ack" came at the second's end.
perf_ctl() { # command
	echo "$1" >&3
	# shellcheck disable=SC3045 # busybox ash's read has -t
	read -r -t 60 a <&4 || { cat $TMP/perf.err; die "perf: no ack to $1 in 60 s"; }
	[ "$a" = ack ] || die "perf: $1: $a"
}

perf_start() { # kprobe_events line, event name
	echo "$1" >$T/kprobe_events || die "kprobe_events: $1"
	rm -f $PD/perf.data
	# Both fifos opened read-write: neither open blocks, nor perf's.
	exec 3<>$TMP/perf.ctl 4<>$TMP/perf.ack
	taskset $R perf record -a -e "kprobes:$2" -m $((BUF / 4096)) -B -N -D -1 \
		--control fifo:$TMP/perf.ctl,$TMP/perf.ack -o $PD/perf.data >$TMP/perf.err 2>&1 3>&- 4>&- &
	PPID_=$!
	# ping: perf has opened its events (the kprobe fires from then on)
	# and synthesized the threads; then the hits so far, then enable
	perf_ctl ping
	PH0=$(kp_hits "$2")
	perf_ctl enable
}

# Disable, read the hits, stop perf (it writes what is left in its rings),
# and count its file.
perf_stop() { # prefix event
	perf_ctl disable
	h=$(($(kp_hits "$2") - PH0))
	kill -INT "$PPID_"
	wait "$PPID_"
	rc=$?
	exec 3>&- 4>&-
	# SIGINT is how perf record is stopped: it exits 130 or 0
	[ $rc = 0 ] || [ $rc = 130 ] || { cat $TMP/perf.err; die "perf record failed ($rc)"; }
	sed 's/^/perf: /' $TMP/perf.err
	echo >$T/kprobe_events || die "cannot remove the kprobe event"
	out "${1}_hits" "$h"
	out "${1}_drained_bytes" "$(wc -c <$PD/perf.data)"
	t0=$(cut -d ' ' -f 1 /proc/uptime)
	perf report -i $PD/perf.data --stats >$TMP/perf.stats 2>&1 ||
		{ cat $TMP/perf.stats; die "perf report --stats"; }
	t1=$(cut -d ' ' -f 1 /proc/uptime)
	out "${1}_report_secs" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
	# "kprobes:NAME stats:" then its SAMPLE and LOST_SAMPLES lines (the
	# latter: the sum of the lost counts); "LOST events" above it: the
	# number of PERF_RECORD_LOST records
	sed 's/^/perf: /' $TMP/perf.stats
	awk -v p="$1" -v e="kprobes:$2" -v h="$h" '$1 == "Aggregated" { ag = 1; on = 0; next }
		$2 == "stats:" { on = $1 == e; ag = 0; next }
		ag && $1 == "LOST" && $2 == "events:" { r = $3 }
		on && $1 == "SAMPLE" { s = $3 } on && $1 == "LOST_SAMPLES" { l = $3 }
		END { printf "bench: %s_drained=%.0f\nbench: %s_lost=%.0f\nbench: %s_lost_records=%.0f\n",
			p, s, p, l, p, r
			printf "bench: %s_unaccounted=%.0f\n", p, h - s - l }' $TMP/perf.stats
	rm -f $PD/perf.data
}

# perf's flood: as flood(), perf record in place of the reader.
perf_flood() { # prefix kprobe_events-line event load...
	prefix=$1 pev=$2 pname=$3
	shift 3
	perf_start "$pev" "$pname"
	taskset $W loadgen "$@" >$TMP/load.out || die "loadgen $*"
	awk -v p="$prefix" '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ops|secs)=/) print "bench: " p "_" $i }' \
		$TMP/load.out
	sleep 1
	perf_stop "$prefix" "$pname"
}

# magnet-read's per-CPU summary lines on stderr: records and bytes read.
magnet_read_counts() { # prefix file
	awk -v p="$1" '/^cpu[0-9]+: records/ { r += $3; b += $5 }
		END { printf "bench: %s_drained=%.0f\nbench: %s_drained_bytes=%.0f\n", p, r, p, b }' "$2"
}

ftrace_read_counts() { # prefix file
	sed -n 's/^ftrace_events=\([0-9]*\) ftrace_bytes=\([0-9]*\).*/\1 \2/p' "$2" |
		awk -v p="$1" '{ printf "bench: %s_drained=%.0f\nbench: %s_drained_bytes=%.0f\n", p, $1, p, $2 }'
}

reader_start() { # tracer output
	if [ "$1" = magnet ]; then
		taskset $R magnet-read -o "$2" 2>$TMP/reader.err &
	elif [ "$1" = magnetm ]; then
		taskset $R magnet-read -m -o "$2" 2>$TMP/reader.err &
	else
		taskset $R ftrace-read -o "$2" 2>$TMP/reader.err &
	fi
	RPID=$!
	sleep 1
	kill -0 $RPID 2>/dev/null || { cat $TMP/reader.err; die "$1 reader did not start"; }
}

reader_stop() { # tracer prefix
	kill -INT "$RPID"
	wait "$RPID" || { cat $TMP/reader.err; die "$1 reader failed"; }
	cat $TMP/reader.err
	if [ "$1" = magnet ] || [ "$1" = magnetm ]; then
		magnet_read_counts "$2" $TMP/reader.err
	else
		ftrace_read_counts "$2" $TMP/reader.err
	fi
}

# ---- 2. probe cost --------------------------------------------------------

getpid_ns() {
	taskset $W loadgen getpid "$ITER" | sed -n 's/.*ns_per_op=//p'
}

# One magnet probe's cost, drained by magnet-read: prints the ns per call.
magnet_cost() { # prefix probe
	magnet_on "$2"
	reader_start magnet /dev/null
	v=$(getpid_ns)
	out "$1" "$v"
	sleep 0.5
	reader_stop magnet "$1"
	magnet_counts "$1"
	magnet_off
	echo "$v" >$TMP/cost
}

ftrace_cost() { # prefix
	ftrace_on 'p:getpid __x64_sys_getpid' getpid
	reader_start ftrace /dev/null
	v=$(getpid_ns)
	out "$1" "$v"
	sleep 0.5
	reader_stop ftrace "$1"
	ftrace_counts "$1" getpid
	ftrace_off getpid
	echo "$v" >$TMP/cost
}

# The guest's pace drifts with the host's load, within a round too: each
# tracer's run is bracketed by runs with no probe, the one before it and
# one right after it, and its added cost taken against their mean
# (PREFIX_added; PREFIX_none_after), so that two tracers' added costs in
# one round compare at the same pace. Call it directly, not in $(...):
# it moves last_none on.
added() { # prefix tracer-ns
	none_after=$(getpid_ns)
	out "${1}_none_after" "$none_after"
	out "${1}_added" "$(awk -v t="$2" -v a="$last_none" -v b="$none_after" \
		'BEGIN { printf "%.1f", t - (a + b) / 2 }')"
	last_none=$none_after
}

# One round of no probe, magnet's kprobe and fentry probe, and ftrace:
# keys cost_WHAT_INFIXROUND, values appended to $none_runs etc.
cost_round() { # infix ("" or "hpet_") round
	v=$(getpid_ns); none_runs="$none_runs $v"
	out "cost_none_$1$2" "$v"
	last_none=$v
	magnet_cost "cost_magnet_$1$2" kprobe:__x64_sys_getpid
	magnet_runs="$magnet_runs $(cat $TMP/cost)"
	added "cost_magnet_$1$2" "$(cat $TMP/cost)"
	magnet_cost "cost_magnetf_$1$2" fentry:__do_sys_getpid
	magnetf_runs="$magnetf_runs $(cat $TMP/cost)"
	added "cost_magnetf_$1$2" "$(cat $TMP/cost)"
	ftrace_cost "cost_ftrace_$1$2"
	ftrace_runs="$ftrace_runs $(cat $TMP/cost)"
	added "cost_ftrace_$1$2" "$(cat $TMP/cost)"
}

# shellcheck disable=SC2086 # the runs are words
cost_medians() { # suffix ("" or "_hpet")
	out "cost_none$1" "$(median $none_runs)"
	out "cost_magnet$1" "$(median $magnet_runs)"
	out "cost_magnetf$1" "$(median $magnetf_runs)"
	out "cost_ftrace$1" "$(median $ftrace_runs)"
}

CS=/sys/devices/system/clocksource/clocksource0
if want 2; then
	out clocksource "$(cat $CS/current_clocksource)"
	none_runs='' magnet_runs='' magnetf_runs='' ftrace_runs='' lttng_runs='' perf_runs=''
	# shellcheck disable=SC2034 # read by eval
	bpf_runs='' bpff_runs='' bpfw_runs='' bt_runs='' btf_runs=''
	r=1
	while [ $r -le "$REPS" ]; do
		cost_round "" $r
		if [ $PERF = 1 ]; then
			perf_start 'p:getpid __x64_sys_getpid' getpid
			v=$(getpid_ns); perf_runs="$perf_runs $v"
			out cost_perf_$r "$v"
			sleep 0.5
			perf_stop cost_perf_$r getpid
			added cost_perf_$r "$v"
		fi

		if [ $LTTNG = 1 ]; then
			lttng_start $TMP/lt kprobe:__x64_sys_getpid
			v=$(getpid_ns); lttng_runs="$lttng_runs $v"
			out cost_lttng_$r "$v"
			sleep 0.5
			lttng_stop cost_lttng_$r $TMP/lt "$ITER"
			added cost_lttng_$r "$v"
		fi
		# the eBPF peers: kprobe and fentry on the functions magnet's
		# probes use, no args (40-byte records, as magnet's)
		for c in bpf bpff bpfw bt btf; do
			case $c in bpf*) [ $BPF = 1 ] || continue ;; *) [ $BT = 1 ] || continue ;; esac
			case $c in
			bpf | bpfw | bt) sym=__x64_sys_getpid ;;
			*) sym=__do_sys_getpid ;;
			esac
			o=/dev/null
			case $c in bt*) o=$TMP/bt.out ;; esac
			ebpf_start $c $sym 0 0 $o
			v=$(getpid_ns)
			eval "${c}_runs=\"\$${c}_runs $v\""
			out cost_${c}_$r "$v"
			sleep 0.5
			ebpf_stop $c cost_${c}_$r "$ITER"
			added cost_${c}_$r "$v"
		done
		r=$((r + 1))
	done
	for c in bpf bpff bpfw bt btf; do
		eval "v=\$${c}_runs"
		# shellcheck disable=SC2086
		[ -z "$v" ] || out cost_$c "$(median $v)"
	done
	if [ $LTTNG = 1 ]; then
		# shellcheck disable=SC2086
		out cost_lttng "$(median $lttng_runs)"
	fi
	if [ $PERF = 1 ]; then
		# shellcheck disable=SC2086
		out cost_perf "$(median $perf_runs)"
	fi
	cost_medians ""

	# The same on the HPET, where the guest has one and is not on it.
	cs=$(cat $CS/current_clocksource)
	if [ "$cs" != hpet ] && grep -qw hpet $CS/available_clocksource; then
		echo hpet >$CS/current_clocksource || die "clocksource hpet"
		none_runs='' magnet_runs='' magnetf_runs='' ftrace_runs=''
		r=1
		while [ $r -le "$REPS" ]; do
			cost_round hpet_ $r
			r=$((r + 1))
		done
		echo "$cs" >$CS/current_clocksource || die "clocksource $cs"
		cost_medians _hpet
	fi
fi

# ---- 3. drain rate --------------------------------------------------------

# One flood: the reader on CPU 1 into /dev/null, the load on CPU 0.
flood() { # tracer prefix load...
	tracer=$1 prefix=$2
	shift 2
	reader_start "$tracer" /dev/null
	taskset $W loadgen "$@" >$TMP/load.out || die "loadgen $*"
	awk -v p="$prefix" '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ops|secs)=/) print "bench: " p "_" $i }' \
		$TMP/load.out
	sleep 1		# let the reader take the tail
	reader_stop "$tracer" "$prefix"
}

# LTTng's flood: a kprobe event on SYMBOL (the address only: no args, no
# bytes), lttng-consumerd writing to a tmpfs directory, as flood() does.
lttng_flood() { # prefix symbol load...
	prefix=$1 sym=$2
	shift 2
	lttng_start $TMP/lt "kprobe:$sym"
	taskset $W loadgen "$@" >$TMP/load.out || die "loadgen $*"
	awk -v p="$prefix" '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ops|secs)=/) print "bench: " p "_" $i }' \
		$TMP/load.out
	sleep 1
	lttng_stop "$prefix" $TMP/lt
}

# An eBPF peer's flood ($EB_SYM, $EB_NARGS args, $EB_CAP bytes): as
# flood(); bpf-ring into /dev/null as the others, bpftrace into a file.
ebpf_flood() { # prefix config load...
	prefix=$1 c=$2
	shift 2
	o=/dev/null
	case $c in bt*) o=$TMP/bt.out ;; esac
	ebpf_start "$c" "$EB_SYM" "$EB_NARGS" "$EB_CAP" $o
	taskset $W loadgen "$@" >$TMP/load.out || die "loadgen $*"
	awk -v p="$prefix" '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ops|secs)=/) print "bench: " p "_" $i }' \
		$TMP/load.out
	sleep 1
	ebpf_stop "$c" "$prefix" "$(sed -n 's/.*ops=\([0-9]*\).*/\1/p' $TMP/load.out)"
}

# Until magnetd serves (its rings sized, its -p probe in); then the ring
# size it left.
md_serving() { # prefix
	i=0
	until grep -q "serving on" $TMP/magnetd.log; do
		i=$((i + 1))
		[ $i -lt 100 ] || { cat $TMP/magnetd.log; die "magnetd did not serve"; }
		sleep 0.1
	done
	out "${1}_ring" "$(awk 'NR == 2 { print $2 }' $M/buffers)"
}

# magnet as an operator runs it: the module loaded with no parameter,
# magnetd with its defaults (it grows the empty rings to its ring_size,
# 4 MiB, and reads them mapped), the probe from magnetd's own -p, added
# once the rings are sized. Drained: what magnetd read.
magnetd_flood() { # prefix magnet-ctl-probe-words load...
	prefix=$1 spec=$2
	shift 2
	insmod $KO || die "insmod $KO"
	taskset $R magnetd -f -c /dev/null -p "$spec" >$TMP/magnetd.log 2>&1 &
	mpid=$!
	md_serving "$prefix"
	taskset $W loadgen "$@" >$TMP/load.out || die "loadgen $*"
	awk -v p="$prefix" '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ops|secs)=/) print "bench: " p "_" $i }' \
		$TMP/load.out
	sleep 1
	kill $mpid
	wait $mpid || { cat $TMP/magnetd.log; die "magnetd failed"; }
	grep "rings \|stopped:" $TMP/magnetd.log
	out "${prefix}_drained" "$(sed -n 's/.*stopped: read \([0-9]*\) records.*/\1/p' $TMP/magnetd.log)"
	magnet_counts "$prefix"
	magnet_off
}

# Ops per second of the last flood's load.
load_rate() {
	awk '{ for (i = 1; i <= NF; i++) { if ($i ~ /^ops=/) o = substr($i, 5)
		if ($i ~ /^secs=/) s = substr($i, 6) } } END { printf "%.0f\n", o / s }' $TMP/load.out
}

# Both tracers on one workload: unpaced (each tracer's probe sets the
# offered rate), then paced at the same rate for both: 90% of the slower
# unpaced rate, which either probe can sustain.
compare() { # size magnet-probes ftrace-event ftrace-name lttng-symbol load...
	size=$1 mprobe=$2 fevent=$3 fname=$4 lsym=$5
	shift 5
	magnet_on "$mprobe"
	flood magnet "${size}_magnet" "$@"
	magnet_counts "${size}_magnet"
	magnet_off
	mrate=$(load_rate)

	ftrace_on "$fevent" "$fname"
	flood ftrace "${size}_ftrace" "$@"
	ftrace_counts "${size}_ftrace" "$fname"
	ftrace_off "$fname"
	frate=$(load_rate)

	[ $PERF = 0 ] || perf_flood "${size}_perf" "$fevent" "$fname" "$@"
	[ $LTTNG = 0 ] || lttng_flood "${size}_lttng" "$lsym" "$@"
	for c in $EB_CONF; do ebpf_flood "${size}_$c" "$c" "$@"; done

	rate=$(( (mrate < frate ? mrate : frate) * 9 / 10 ))
	out "${size}_rate" "$rate"
	magnetd_flood "${size}_default" "$MD_PROBE" "$@"
	magnetd_flood "${size}_paced_default" "$MD_PROBE" "$@" $rate

	magnet_on "$mprobe"
	flood magnet "${size}_paced_magnet" "$@" $rate
	magnet_counts "${size}_paced_magnet"
	magnet_off

	ftrace_on "$fevent" "$fname"
	flood ftrace "${size}_paced_ftrace" "$@" $rate
	ftrace_counts "${size}_paced_ftrace" "$fname"
	ftrace_off "$fname"

	[ $PERF = 0 ] || perf_flood "${size}_paced_perf" "$fevent" "$fname" "$@" $rate
	[ $LTTNG = 0 ] || lttng_flood "${size}_paced_lttng" "$lsym" "$@" $rate
	for c in $EB_CONF; do ebpf_flood "${size}_paced_$c" "$c" "$@" $rate; done
}

# The eBPF peers of row 3 where they run: getpid's 3 args by kprobe (the
# fentry's function, __do_sys_getpid, takes none); write_full's 3 args and
# 4000 bytes by bpf-ring's kprobe and fentry (bpftrace: 200 bytes at most).
ebpf_conf() { # configs wanted
	EB_CONF=
	for c; do
		case $c in bpf*) [ $BPF = 1 ] || continue ;; *) [ $BT = 1 ] || continue ;; esac
		EB_CONF="$EB_CONF $c"
	done
}

if want 3; then
	ebpf_conf bpf bt
	EB_SYM=__x64_sys_getpid EB_NARGS=3 EB_CAP=0
	MD_PROBE="kprobe __x64_sys_getpid args 3"
	# shellcheck disable=SC2016 # $argN: ftrace's kprobe_events syntax, not ours
	compare small kprobe:__x64_sys_getpid:3 \
		'p:getpid __x64_sys_getpid a=$arg1 b=$arg2 c=$arg3' getpid __x64_sys_getpid \
		getpid-for "$DUR"
	ebpf_conf bpf bpff
	EB_SYM=write_full EB_NARGS=3 EB_CAP=4000
	MD_PROBE="kprobe write_full args 3 capture 4000@1"
	# shellcheck disable=SC2016 # $argN: ftrace's kprobe_events syntax, not ours
	compare large kprobe:write_full:3:4000@1 \
		'p:w write_full a=$arg1 b=$arg2 c=$arg3 buf=+0($arg2):ustring' w write_full \
		write-for "$DUR" 4000 /dev/full
fi

# ---- 4. control plane: filtered vs recorded, sampling ---------------------
#
# ns per getpid() with a magnet kprobe (3 args, 64-byte records) added by
# magnet-ctl, drained by magnet-read: every hit recorded; every hit filtered
# out before the ring (a tgid include filter naming another process);
# sampled 1 in N (N = 10, 100, 1000: the shape of the paper's Figure 7).
# Costs are the added ns over no probe, the median of $BENCH_REPS rounds.

ctl_cost() { # label, then the magnet-ctl setup commands as "a b c;d e"
	label=$1
	shift
	runs=
	r=1
	while [ $r -le "$REPS" ]; do
		insmod $KO "buf_size=$BUF" || die "insmod"
		magnet-ctl probe add kprobe __x64_sys_getpid args 3 name gp >/dev/null ||
			die "magnet-ctl probe add"
		echo "$1" | tr ';' '\n' | while read -r cmd; do
			[ -n "$cmd" ] || continue
			# shellcheck disable=SC2086
			magnet-ctl $cmd >/dev/null || die "magnet-ctl $cmd"
		done
		reader_start magnet /dev/null
		v=$(getpid_ns)
		runs="$runs $v"
		reader_stop magnet "ctl_${label}_$r" >/dev/null
		magnet-ctl -j probe show gp >$TMP/ctl.json 2>/dev/null
		magnet_off
		r=$((r + 1))
	done
	# shellcheck disable=SC2086
	out ctl_$label "$(median $runs)"
	out "ctl_${label}_json" "$(tr -d '\n' <$TMP/ctl.json)"
}

if want 4 && command -v magnet-ctl >/dev/null; then
	if ! want 2; then	# row 4's costs are over row 2's baseline
		none_runs=
		r=1
		while [ $r -le "$REPS" ]; do
			none_runs="$none_runs $(getpid_ns)"
			r=$((r + 1))
		done
		# shellcheck disable=SC2086
		out cost_none "$(median $none_runs)"
	fi
	ctl_cost recorded ""
	ctl_cost filtered "filter add gp tgid 1"
	ctl_cost every10 "sample set gp every 10"
	ctl_cost every100 "sample set gp every 100"
	ctl_cost every1000 "sample set gp every 1000"
fi

# ---- 5. consumers: magnetd's cost vs magnet-read's and ftrace-read's ----
#
# The load of row 3's small flood (getpid with 3 args: magnet 64-byte
# records, ftrace 44-byte events) on CPU 0 for $BENCH_CONS_DUR seconds,
# paced at $BENCH_RATE getpid/s and unpaced, consumed on CPU 1 by one of
# these at a time (module or kprobe event set up afresh for each, so
# counters start at 0), $BENCH_CONS_REPS rounds of all twelve runs
# interleaved (the table takes the median CPU per record: TCG's timings
# drift with the host's load):
#   mread   magnet-read -o $TMP/c.trace (tmpfs)
#   mreadm  magnet-read -m -o $TMP/c.trace: the rings mapped, as magnetd
#           reads them by default (read = mapped)
#   mdtrace magnetd -f --trace $TMP/mdtrace (tmpfs), no client: the same
#           work as magnet-read (drain every ring, write a trace)
#   mdsub   magnetd -f, no trace, one binary subscriber on its Unix
#           socket (magnet-cat -b > /dev/null, its default server, also
#           on CPU 1): a local client, known by SO_PEERCRED
#   mdsubtcp the same over TCP: magnet-cat -b -M -s 127.0.0.1:8650, which
#           sends AUTH MUNGE first (without it a TCP client gets no
#           records); a munged of row 5's own (tests/vm/munged.sh, the
#           host's munged, which bench/run stages), started once for the
#           row. The credential is minted and checked before the load
#           starts: the CPU counted is the subscription's alone. Both
#           subscribers' magnetd get the same options (--munge-socket).
#           Without munged in the guest, row 5 runs without it
#           (cons_tcp=none).
#   ftrace  ftrace-read -o $TMP/c.trace (tmpfs) on trace_pipe_raw
# Every consumer keeps its defaults (64 KiB watermark, 100 ms latency;
# magnet-read: 4 AIO reads of 256 KiB in flight; magnetd: the rings
# mapped, handed on 256 KiB at most at a time). CPU: the sum of the
# threads' run times in /proc/PID/task/*/schedstat (ns; the table's), and
# utime+stime of the whole process from /proc/PID/stat in clock ticks
# (USER_HZ, 100/s: a few tens a run, too coarse alone), from just before
# the load starts until the consumer has gone idle after it (its CPU time
# stopped growing), so start-up and shut-down are not counted. Delivered: magnet-read's
# summary records; magnetd's STATS read - trace_dropped (records handed to
# the trace); magnet-cat's summary records; ftrace-read's events. Lost: the
# kernel's (magnet stats lost_*, or ftrace dropped events + overrun) and the
# consumer's (magnetd: trace_dropped, queue_dropped, client_dropped), of
# the probe hits, all counted once the consumer is idle again. (Not probe
# hits - delivered: a stray getpid() of a tool between the count and the
# consumer's stop would count.) Also the CPU time of all kworkers in the
# same window: magnet's AIO reads are copied into the reader's memory by an
# unbound workqueue's kworker (kmod/fs.c), which the reader's own times do
# not include; ftrace-read's read() copies in the reader.

cpu_ticks() { # pid: utime + stime of the whole process
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

sched_ns() { # pid: the sum of its threads' run times
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# utime + stime of every kworker: magnet's AIO reads are copied into the
# reader's memory by an unbound workqueue's kworker, not by the reader.
kw_ticks() {
	for f in /proc/[0-9]*/stat; do
		read -r l <"$f" 2>/dev/null && echo "$l"
	done | awk '$2 ~ /^\(kworker\// { sub(/^.*\) /, ""); t += $12 + $13 } END { printf "%.0f\n", t }'
}

cpu_of() { # pids: "ticks ns" of each, on one line
	for p; do printf '%s %s ' "$(cpu_ticks "$p")" "$(sched_ns "$p")"; done
}

# Not in the table, to tell where a consumer's time goes: utime, stime,
# context switches (all threads), read and write system calls.
diag_of() { # pid
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ printf "%s %s ", $12, $13 }'
	cat /proc/"$1"/task/*/status | awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 }
		END { printf "%.0f ", s }'
	awk '/^syscr:/ { r = $2 } /^syscw:/ { w = $2 } END { printf "%.0f %.0f ", r, w }' "/proc/$1/io"
}

diag_out() { # prefix name before after: the differences
	echo "$3 $4" | awk -v p="$1_$2" '{ split("utime stime ctxsw syscr syscw", k)
		for (i = 1; i <= 5; i++) printf "bench: %s_%s=%.0f\n", p, k[i], $(i + 5) - $i }'
}

# Wait until the consumers' CPU time stops growing (at most 10 s).
settle() { # pids
	prev=$(cpu_of "$@")
	i=0
	while [ $i -lt 20 ]; do
		sleep 0.5
		cur=$(cpu_of "$@")
		[ "$(echo "$cur" | awk '{ for (i = 1; i <= NF; i += 2) t += $i; print t }')" = \
		  "$(echo "$prev" | awk '{ for (i = 1; i <= NF; i += 2) t += $i; print t }')" ] && return
		prev=$cur
		i=$((i + 1))
	done
	echo "vm-bench: consumers $* still busy after 10 s"
}

md_start() { # magnetd options...
	taskset $R magnetd -f "$@" >$TMP/magnetd.log 2>&1 &
	DPID=$!
	i=0
	until mdtest cmd HELLO >/dev/null 2>&1; do
		i=$((i + 1))
		{ [ $i -lt 100 ] && kill -0 $DPID 2>/dev/null; } ||
			{ cat $TMP/magnetd.log; die "magnetd did not come up"; }
		sleep 0.1
	done
}

md_stop() {
	kill -TERM "$DPID"
	wait "$DPID" || { cat $TMP/magnetd.log; die "magnetd failed"; }
	sed 's/^/magnetd.log: /' $TMP/magnetd.log
}

md_stats() { # prefix: magnetd's STATS counters
	mdtest cmd STATS >$TMP/stats.out || die "STATS"
	head -n 1 $TMP/stats.out | tr ' ' '\n' | awk -v p="$1" -F= '
		$1 ~ /^(read|read_lost|queue_dropped|sent|client_dropped|trace_files|trace_bytes|trace_dropped|trace_errors)$/ {
			print "bench: " p "_md_" $1 "=" $2 }'
}

# One consumer on one load: prefix, consumer, then loadgen's arguments.
consume() { # prefix consumer load...
	p=$1 c=$2
	shift 2
	rm -rf $TMP/c.trace $TMP/mdtrace
	CPID='' DPID=''
	case $c in
	mread)
		magnet_on kprobe:__x64_sys_getpid:3
		taskset $R magnet-read -o $TMP/c.trace 2>$TMP/cons.err &
		CPID=$! ;;
	mreadm)
		magnet_on kprobe:__x64_sys_getpid:3
		taskset $R magnet-read -m -o $TMP/c.trace 2>$TMP/cons.err &
		CPID=$! ;;
	mdtrace)
		magnet_on kprobe:__x64_sys_getpid:3
		mkdir -p $TMP/mdtrace
		md_start --trace $TMP/mdtrace ;;
	mdsub | mdsubtcp)
		magnet_on kprobe:__x64_sys_getpid:3
		# shellcheck disable=SC2086 # none, or the option and its path
		md_start $MD_MUNGE
		if [ "$c" = mdsub ]; then
			taskset $R magnet-cat -b >/dev/null 2>$TMP/cons.err &
		else
			taskset $R magnet-cat -b -M --munge-socket $MUNGED/socket \
				-s 127.0.0.1:8650 >/dev/null 2>$TMP/cons.err &
		fi
		CPID=$!
		i=0
		until mdtest cmd STATS | head -n 1 | grep -q ' subscribers=1 '; do
			i=$((i + 1))
			[ $i -lt 100 ] || { cat $TMP/cons.err; die "magnet-cat did not subscribe"; }
			sleep 0.1
		done ;;
	ftrace)
		# shellcheck disable=SC2016 # $argN: ftrace's kprobe_events syntax
		ftrace_on 'p:getpid __x64_sys_getpid a=$arg1 b=$arg2 c=$arg3' getpid
		taskset $R ftrace-read -o $TMP/c.trace 2>$TMP/cons.err &
		CPID=$! ;;
	esac
	sleep 0.5
	[ -z "$CPID" ] || kill -0 $CPID 2>/dev/null || { cat $TMP/cons.err; die "$c did not start"; }
	pids="$DPID $CPID"
	[ -z "$DPID" ] || ddiag=$(diag_of $DPID)
	[ -z "$CPID" ] || cdiag=$(diag_of $CPID)
	kw0=$(kw_ticks)
	# shellcheck disable=SC2086
	before=$(cpu_of $pids)
	taskset $W loadgen "$@" >$TMP/load.out || die "loadgen $*"
	# shellcheck disable=SC2086
	settle $pids
	# shellcheck disable=SC2086
	after=$(cpu_of $pids)
	out "${p}_kwticks" $(($(kw_ticks) - kw0))
	[ -z "$DPID" ] || diag_out "$p" daemon "$ddiag" "$(diag_of $DPID)"
	[ -z "$CPID" ] || diag_out "$p" consumer "$cdiag" "$(diag_of $CPID)"
	# The kernel's counts now, while the consumer still runs: what
	# happens while it stops is not part of the run.
	if [ "$c" = ftrace ]; then
		ftrace_counts "$p" getpid
	else
		magnet_counts "$p"
	fi
	awk -v p="$p" '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ops|secs)=/) print "bench: " p "_" $i }' \
		$TMP/load.out
	# ticks and ns of the first pid (the daemon, or the only consumer),
	# then of the client.
	echo "$before $after" | awk -v p="$p" -v n="$(echo "$pids" | wc -w)" '{
		for (i = 1; i <= 2 * n; i++) d[i] = $(i + 2 * n) - $i
		printf "bench: %s_ticks=%.0f\nbench: %s_ns=%.0f\n", p, d[1], p, d[2]
		if (n == 2) printf "bench: %s_cticks=%.0f\nbench: %s_cns=%.0f\n", p, d[3], p, d[4] }'
	[ -z "$DPID" ] || md_stats "$p"
	if [ -n "$CPID" ]; then
		kill -INT $CPID
		wait $CPID || { cat $TMP/cons.err; df /tmp; die "$c failed"; }
		cat $TMP/cons.err
	fi
	[ -z "$DPID" ] || md_stop
	case $c in
	mread | mreadm)
		magnet_read_counts "$p" $TMP/cons.err ;;
	mdsub | mdsubtcp)
		# None at all: not the root the credential says (an anonymous
		# TCP client gets no records), or no subscription.
		grep -q '^magnet-cat: [1-9][0-9]* records' $TMP/cons.err ||
			die "$c: magnet-cat delivered no records"
		sed -n 's/^magnet-cat: \([0-9]*\) records, \([0-9]*\) lost.*, \([0-9]*\) dropped.*/\1 \2 \3/p' \
			$TMP/cons.err | awk -v p="$p" '{ printf "bench: %s_drained=%s\nbench: %s_cat_lost=%s\nbench: %s_cat_dropped=%s\n",
				p, $1, p, $2, p, $3 }' ;;
	ftrace)
		ftrace_read_counts "$p" $TMP/cons.err ;;
	esac
	if [ "$c" = ftrace ]; then
		ftrace_off getpid
	else
		magnet_off
	fi
	rm -rf $TMP/c.trace $TMP/mdtrace
}

if want 5; then
	if command -v magnetd >/dev/null && command -v magnet-cat >/dev/null &&
		command -v mdtest >/dev/null; then
		out cons_rate "$RATE"
		out cons_hz 100
		out cons_mdsub_via unix
		# A munged for the TCP subscriber's AUTH MUNGE, once for the row.
		MUNGED=$TMP/munged MD_MUNGE='' CONS='mread mreadm mdtrace mdsub mdsubtcp ftrace'
		if [ -x /usr/sbin/munged ] && [ -x /usr/sbin/mungekey ]; then
			sh /magnet/tests/vm/munged.sh start $MUNGED || die "munged did not start"
			MD_MUNGE="--munge-socket $MUNGED/socket"
			out cons_tcp munge
		else
			echo "vm-bench: no munged in the guest: row 5 without its TCP subscriber"
			CONS='mread mreadm mdtrace mdsub ftrace'
			out cons_tcp none
		fi
		r=1
		while [ $r -le "$CREPS" ]; do
			for c in $CONS; do
				consume "cons_paced_${c}_$r" "$c" getpid-for "$CDUR" "$RATE"
			done
			for c in $CONS; do
				consume "cons_flood_${c}_$r" "$c" getpid-for "$CDUR"
			done
			r=$((r + 1))
		done
		[ -z "$MD_MUNGE" ] || sh /magnet/tests/vm/munged.sh stop $MUNGED
		out cons_done 1
	else
		echo "vm-bench: row 5 needs magnetd, magnet-cat and mdtest in PATH; skipped"
	fi
fi

# ---- 6. the paper's tcpdump comparison (its Table 3 and Figure 5) --------
#
# udpflood (bench/udpflood.c) sends SIZE-byte UDP datagrams over lo for
# $BENCH_FLOOD_DUR seconds (after 0.25 s of warm-up: udpflood -w, counted
# as offered, not in the rate) from CPU 0 to a sink thread on CPU 0 (on lo the
# receive half runs in the sender's softirq, so every datagram goes down to
# the device and up to the socket on CPU 0); the consumer runs alone on CPU
# 1. SIZE is each of $BENCH_FLOOD_SIZES. Per size, one run of each config,
# $BENCH_FLOOD_REPS rounds interleaved:
#   none     nothing loaded
#   loaded   magnet.ko loaded, no probe
#   dev      one skb probe on __dev_queue_xmit capturing the whole IP packet
#            (SIZE + 28 bytes, at most 4072), drained by magnet-read to a
#            file in $TMP/flood (a 2 GiB tmpfs of its own): the same bytes
#            per datagram as tcpdump's
#   journey  four skb probes, the same capture each: ip_send_skb (UDP hands
#            the datagram to IP), ip_finish_output2 (routed),
#            __dev_queue_xmit (the device), udp_rcv (received): the skb
#            layers of magnet-ctl's udp-journey set but ip_local_deliver, as
#            the paper's four layers per packet; 4x tcpdump's bytes
#   split    the same four probes capturing SIZE/4 bytes each (at least 20:
#            the IP header): SIZE bytes per datagram in all, as the paper's
#            Table 3 counts MAGNET's "data logged per packet"
#   tcpdump  tcpdump -i lo -s SIZE+42 (the whole frame) -B KiB -w a file in
#            the same tmpfs, filter "inbound" (Debian's tcpdump, libpcap's
#            TPACKET_V3 ring; -Z root: no user to drop to), if staged
# The same buffer: magnet's ring is $BENCH_FLOOD_BUF bytes per CPU and
# tcpdump's packet ring $BENCH_FLOOD_BUF bytes (-B takes KiB): the paper's
# 2 MB by default. Every packet is written on CPU 0, so each tracer has
# that much room for them (magnet holds as much again, unused, on CPU 1).
# magnet-read keeps its defaults (256 KiB reads, 64 KiB watermark, 100 ms);
# the paper's 256K watermark is not asked for.
# lo hands every datagram to a packet socket twice: the outgoing copy
# (dev_queue_xmit_nit) and the received one. libpcap keeps only the received
# one, but in user space: both would take room in its ring and count in
# "received by filter" and "dropped by kernel" (-Q in is done there too, in
# libpcap 1.10.3). The filter "inbound" is run by the kernel's BPF (a load
# of the packet type) before the ring, so each datagram reaches tcpdump's
# ring once, as on a NIC: "received by filter" == sent shows it (the table
# checks it), and then captured + "dropped by kernel" == sent.
# Offered: udpflood's sent (datagrams that entered the stack). Captured:
# magnet: records per probe in the trace (magnet-dump --stats), and
# magnet-read's own count; tcpdump: its "packets captured", and the pcap
# file's records ((size - 24) / (16 + SIZE + 42): every record is a whole
# frame). Lost: offered - captured, and the tracers' own counts: magnet's
# kernel counters (stats lost_full, lost_too_big, lost_nesting, and
# lost_fair: the fairness rule's drops of a job over its share; kprobe
# misses) and the LOST and JOB_LOST records in the trace (a loss is told by
# such a record before the CPU's next record: losses at the very end of a
# flood are in the kernel's counters and magnet-read's trailer only); tcpdump's
# "dropped by kernel" and "dropped by interface". magnet-read is stopped
# once every ring is empty (magnet/buffers) and it is idle.
# tcpdump is stopped 2.5 s after the flood and once idle: libpcap's
# TPACKET_V3 ring is made of 256 KiB blocks (8 with -B 2048), and the
# kernel hands over the last, partly filled one on its block timer (tcpdump's
# 1 s timeout) when that block was already the current one at the previous
# tick: up to 2 s after the flood (seen: 1.5 s left ~1000 datagrams
# unread, neither captured nor dropped). CPU: the consumer's
# utime+stime (all threads) as in row 5, from just before the flood until it
# is idle again, and the kworkers' meanwhile (magnet-read's AIO copies).

FSIZES=${BENCH_FLOOD_SIZES:-100 500 1000 2000 4000}
FDUR=${BENCH_FLOOD_DUR:-1}
FREPS=${BENCH_FLOOD_REPS:-3}
FBUF=${BENCH_FLOOD_BUF:-2097152}
FWQ=${BENCH_FLOOD_WQ_CPUMASK:-2}	# none: leave the unbound workqueues be
JOURNEY="ip_send_skb ip_finish_output2 __dev_queue_xmit udp_rcv"

# magnet-dump --stats: the trace's records per probe name.
trace_counts() { # prefix file
	magnet-dump -s "$2" >$TMP/dump.out 2>$TMP/dump.err ||
		{ cat $TMP/dump.err; die "magnet-dump -s $2"; }
	awk -v p="$1" '/^id\tevent/ { on = 1; next } on && NF == 0 { on = 0 }
		on { printf "bench: %s_file_%s=%s\n", p, $2, $4; t += $4 }
		$1 == "all" && !done { printf "bench: %s_file_lost_records=%s\nbench: %s_file_lost=%.0f\n",
			p, $3, p, $4 + $5 + $6 + $10; done = 1 }
		END { printf "bench: %s_file=%.0f\n", p, t }' $TMP/dump.out
}

# Until magnet-read has emptied every ring (buffers: used 0), at most 30 s.
# settle alone (the reader's CPU time stopped growing for 0.5 s) once let a
# reader stop with a full ring unread: on a busy host its vCPU can wait
# that long.
drain_wait() {
	i=0
	while [ "$(awk 'NR > 1 { u += $4 } END { print u + 0 }' $M/buffers)" != 0 ]; do
		i=$((i + 1))
		[ $i -lt 150 ] || { echo "vm-bench: rings not drained after 30 s"; cat $M/buffers; return; }
		sleep 0.2
	done
}

flood_run() { # prefix config size
	p=$1 c=$2 s=$3
	cap=$((s + 28)); [ $cap -le 4072 ] || cap=4072
	[ "$c" != split ] || { cap=$((s / 4)); [ $cap -ge 20 ] || cap=20; }
	snap=$((s + 42))
	CPID=''
	rm -f $FT/f.trace $FT/f.pcap
	case $c in
	loaded | dev | journey | split)
		insmod $KO "buf_size=$FBUF" || die "insmod" ;;
	esac
	case $c in
	dev)
		magnet-ctl probe add kprobe __dev_queue_xmit handler skb capture $cap \
			name __dev_queue_xmit >/dev/null || die "probe add __dev_queue_xmit" ;;
	journey | split)
		for f in $JOURNEY; do
			magnet-ctl probe add kprobe "$f" handler skb capture $cap name "$f" >/dev/null ||
				die "probe add $f"
		done ;;
	esac
	case $c in
	dev | journey | split)
		taskset $R magnet-read -o $FT/f.trace 2>$TMP/cons.err &
		CPID=$! ;;
	tcpdump)
		taskset $R tcpdump -Z root -n -i lo -s $snap -B $((FBUF / 1024)) \
			-w $FT/f.pcap inbound 2>$TMP/cons.err &
		CPID=$!
		i=0
		until grep -q 'listening on' $TMP/cons.err; do
			i=$((i + 1))
			{ [ $i -lt 100 ] && kill -0 $CPID 2>/dev/null; } ||
				{ cat $TMP/cons.err; die "tcpdump did not start"; }
			sleep 0.1
		done ;;
	esac
	sleep 0.5
	[ -z "$CPID" ] || kill -0 $CPID 2>/dev/null || { cat $TMP/cons.err; die "$c did not start"; }
	if [ -n "$CPID" ]; then
		kw0=$(kw_ticks)
		before=$(cpu_ticks $CPID)
	fi
	taskset $W udpflood -w 0.25 "$FDUR" "$s" >$TMP/flood.out || die "udpflood $FDUR $s"
	awk -v p="$p" '{ for (i = 1; i <= NF; i++)
		if ($i ~ /^(sent|send_failed|secs|pps|mbps|rcv_lost)=/) print "bench: " p "_" $i }' $TMP/flood.out
	if [ -n "$CPID" ]; then
		[ "$c" = tcpdump ] || drain_wait
		settle $CPID
		# libpcap's TPACKET_V3 hands a block over when it is full or
		# on the kernel's block timer (tcpdump's 1 s), within 2 s:
		# wait for the last one.
		[ "$c" != tcpdump ] || { sleep 2.5; settle $CPID; }
		out "${p}_ticks" $(($(cpu_ticks $CPID) - before))
		out "${p}_kwticks" $(($(kw_ticks) - kw0))
	fi
	case $c in
	dev | journey | split)
		magnet_counts "$p"
		kill -INT $CPID
		wait $CPID || { cat $TMP/cons.err; df $FT; die "magnet-read failed"; }
		magnet_read_counts "$p" $TMP/cons.err
		trace_counts "$p" $FT/f.trace ;;
	tcpdump)
		kill -INT $CPID
		wait $CPID || { cat $TMP/cons.err; df $FT; die "tcpdump failed"; }
		sed 's/^/tcpdump: /' $TMP/cons.err
		awk -v p="$p" '$2 ~ /^packets?$/ && $3 == "captured" { print "bench: " p "_td_captured=" $1 }
			$2 ~ /^packets?$/ && $3 == "received" { print "bench: " p "_td_filter=" $1 }
			$2 ~ /^packets?$/ && $3 == "dropped" && $5 == "kernel" { print "bench: " p "_td_dropped=" $1 }
			$2 ~ /^packets?$/ && $3 == "dropped" && $5 == "interface" { print "bench: " p "_td_ifdropped=" $1 }' \
			$TMP/cons.err
		out "${p}_file" "$(wc -c <$FT/f.pcap | awk -v r=$((16 + snap)) \
			'{ n = ($1 - 24) / r; print n == int(n) ? n : "bad-size-" $1 }')" ;;
	esac
	case $c in
	loaded | dev | journey | split) magnet_off ;;
	esac
	rm -f $FT/f.trace $FT/f.pcap
}

if want 6; then
	# The traces: up to ~0.7 GB a run (4 probes x 4 KiB records).
	FT=$TMP/flood
	mkdir -p $FT
	mount -t tmpfs -o size=2g flood $FT || die "mount tmpfs $FT"
	# tcpdump -Z root looks root up by name (to drop privileges to
	# it): the initramfs has no passwd of its own.
	[ -f /etc/passwd ] || { mkdir -p /etc && echo 'root:x:0:0:root:/:/bin/sh' >/etc/passwd; }
	[ -f /etc/group ] || echo 'root:x:0:' >/etc/group
	if command -v tcpdump >/dev/null && tcpdump --version >$TMP/td.v 2>&1; then
		FCONFIGS="none loaded dev journey split tcpdump"
		out flood_tcpdump "$(head -n 1 $TMP/td.v | sed 's/^tcpdump version //')"
	else
		cat $TMP/td.v 2>/dev/null
		echo "vm-bench: row 6: no tcpdump that runs in the guest; its runs are skipped"
		FCONFIGS="none loaded dev journey split"
		out flood_tcpdump none
	fi
	# shellcheck disable=SC2086 # split: one size a word, however spaced
	out flood_sizes "$(echo $FSIZES | tr ' ' ,)"
	out flood_dur "$FDUR"
	out flood_reps "$FREPS"
	out flood_configs "$(echo "$FCONFIGS" | tr ' ' ,)"
	out flood_buf "$FBUF"
	out flood_td_buf_kib $((FBUF / 1024))
	# The unbound workqueues' CPUs: magnet-read's AIO reads are copied by
	# magnet's WQ_UNBOUND|WQ_HIGHPRI kworkers, which the scheduler
	# otherwise often wakes on the flood's CPU, where they take the
	# sender's time (nice -20); the consumer's CPU is theirs as it is
	# magnet-read's. (tcpdump reads its ring mmapped: no such copy.)
	WQM=/sys/devices/virtual/workqueue/cpumask
	wqm0=$(cat $WQM)
	if [ "$FWQ" != none ]; then
		echo "$FWQ" >$WQM || die "cannot set $WQM to $FWQ"
	fi
	out flood_wq_cpumask "$(cat $WQM)"
	# Not counted: the first flood of the boot runs code TCG has not
	# translated yet.
	taskset $W udpflood 1 1000 >/dev/null || die "udpflood"
	r=1
	while [ $r -le "$FREPS" ]; do
		for s in $FSIZES; do
			for c in $FCONFIGS; do
				flood_run "fl_${s}_${c}_$r" "$c" "$s"
			done
		done
		r=$((r + 1))
	done
	echo "$wqm0" >$WQM
	umount $FT
	out flood_done 1
fi

# ---- 7. loss vs record size (the paper's Figure 6 / Table 3 shape) -----
#
# Row 3's large flood at every size SIZE of $BENCH_SWEEP_SIZES (default the
# paper's 100 500 1000 2000 4000): loadgen write-for writes SIZE-byte
# buffers (SIZE-1 'x' and a NUL) to /dev/full on CPU 0 for
# $BENCH_SWEEP_DUR (1) s, probed at write_full with 3 args and the SIZE
# bytes at arg 1:
#   magnet  kprobe:write_full:3:SIZE@1 (SIZE + 72-byte records), drained by
#           magnet-read with its defaults (4 AIO reads of 256 KiB in flight)
#   magnetm the same, drained by magnet-read -m (the ring mapped: records
#           written to the trace from the mapping, no AIO, no kernel copy)
#   ftrace  p:w write_full a=$arg1 b=$arg2 c=$arg3 buf=+0($arg2):ustring
#           (SIZE + 52-byte events), drained by ftrace-read on
#           trace_pipe_raw
#   lttng   (if staged) see below
#   bpf, bpff  bpf-ring's kprobe and fentry programs on write_full, 3 args
#           and the SIZE bytes (magnet's SIZE + 72-byte record), one BPF ring
#           buffer of BUF x CPUs (see "eBPF" above)
#   bt, btf bpftrace's kprobe and kfunc on write_full printing the same
#           fields, the bytes as a string: SIZE <= 200 only (bpftrace 0.17)
#   mdd     magnet as an operator runs it (row 3's "default settings"):
#           the module loaded with no parameter, magnetd with its defaults
#           (it grows the rings to its ring_size, 4 MiB, and reads them
#           mapped) and a trace directory in $TMP/sweep, the probe from its
#           own -p; drained: what reached the trace (STATS read -
#           trace_dropped); lost: the kernel's and magnetd's own drops
# each reader on CPU 1 writing its trace to a file in $TMP/sweep (a 2 GiB
# tmpfs of its own, emptied after each run). Per size: one run paced at
# $BENCH_SWEEP_RATE (25000) writes/s, the same for every size and tracer:
# at 4000 bytes 100 MB/s, which every probe reaches (ftrace's, the slowest,
# ~56000/s unpaced in TCG) and about half of what either reader can write
# into the tmpfs in TCG (~150-200 MB/s: at 50000/s both lost ~23%), so a
# loss is the tracer's, not the tmpfs'; then one unpaced (the tracer's probe
# sets the rate).
# $BENCH_SWEEP_REPS (3) rounds, the tracers interleaved within each.
# The same ring per CPU for every tracer: $BENCH_BUF bytes (magnet
# buf_size, ftrace buffer_size_kb, lttng 4 sub-buffers of BUF/4), the same
# loss policy (discard). Offered: probe hits (magnet, ftrace; lttng: the
# writes loadgen made); lost: the kernel's counters (row 3's); drained:
# what the reader counted; MB/s: the drained records as stored; CPU: the
# reader's utime+stime (all threads) from just before the load until it is
# idle again (rings empty), as row 5, and the kworkers' meanwhile
# (magnet's AIO copies, kept on the readers' CPU as in row 6:
# $BENCH_FLOOD_WQ_CPUMASK).
#
# LTTng (lttng-modules built by bench/lttng-build, lttng-tools staged by
# bench/run from the host): a session daemon for the whole row
# (--kmod-probes=lttng-probe-sched: no tracepoint probe is needed), and per
# run a session writing to $TMP/sweep, one kernel channel of 4 sub-buffers
# of BUF/4 bytes (discard mode, the default), its lttng-consumerd draining
# it. Two event types, two separate lines in the table:
#   lttngkp  a kprobe event on write_full, the same workload as the
#             others: LTTng's kprobe events record the address and nothing
#             else (no args, no user bytes): a fixed ~20-byte record
#             whatever SIZE is, so its line is the event rate, not SIZE
#             bytes of payload
#   lttnglg  the lttng_logger event: loadgen writes the same SIZE-byte
#             buffers to /proc/lttng-logger instead of /dev/full; each
#             write is one event carrying its bytes (a user-space copy, as
#             the others' fetch). The logger takes at most 1024 bytes per
#             write, so only SIZE <= 1024 runs. Its text field is copied
#             one byte per __copy_from_user_inatomic() (it stops at a NUL:
#             lib_ring_buffer_do_strcpy_from_user_inatomic() in lttng-modules'
#             ringbuffer/backend.h), so its probe, not its consumer, sets
#             how many 1000-byte writes it can take (~12000/s in TCG).
# lttng's offered: loadgen's writes; lost: the discarded events that
# `lttng stop` reports; drained: offered - discarded; bytes: the trace's
# stream files (records with their packet headers; not the indexes); CPU:
# lttng-consumerd's (both of its processes, all threads), as the others'
# readers.

SSIZES=${BENCH_SWEEP_SIZES:-100 500 1000 2000 4000}
SREPS=${BENCH_SWEEP_REPS:-3}
SRATE=${BENCH_SWEEP_RATE:-25000}
SDUR=${BENCH_SWEEP_DUR:-1}

# The reader's CPU ticks; lttng's consumer daemon runs as two processes
# (pidof lttng-consumerd): their sum.
sweep_ticks() {
	t=0
	for pid in $rp; do t=$((t + $(cpu_ticks "$pid"))); done
	echo $t
}

# One tracer, one size, one rate (0: unpaced).
sweep_run() { # prefix tracer size rate
	p=$1 c=$2 s=$3 rate=$4
	rm -rf "${SW:?}"/*
	dev=/dev/full
	case $c in
	magnet*)
		magnet_on "kprobe:write_full:3:$s@1"
		reader_start "$c" $SW/s.trace ;;
	mdd)
		insmod $KO || die "insmod $KO"
		mkdir -p $SW/md
		md_start -c /dev/null --trace $SW/md -p "kprobe write_full args 3 capture $s@1"
		md_serving "$p"
		RPID=$DPID ;;
	ftrace)
		# shellcheck disable=SC2016 # $argN: ftrace's kprobe_events syntax
		ftrace_on 'p:w write_full a=$arg1 b=$arg2 c=$arg3 buf=+0($arg2):ustring' w
		reader_start ftrace $SW/s.trace ;;
	lttngkp)
		lttng_start $SW/lt kprobe:write_full ;;
	lttnglg)
		lttng_start $SW/lt logger
		dev=/proc/lttng-logger ;;
	bpf* | bt*)
		ebpf_start "$c" write_full 3 "$s" $SW/s.trace ;;
	esac
	rp=$RPID
	case $c in lttng*) rp=$LPIDS ;; esac
	kw0=$(kw_ticks)
	before=$(sweep_ticks)
	if [ "$rate" -gt 0 ]; then
		taskset $W loadgen write-for "$SDUR" "$s" $dev "$rate" >$TMP/load.out
	else
		taskset $W loadgen write-for "$SDUR" "$s" $dev >$TMP/load.out
	fi || die "loadgen write-for $SDUR $s $dev $rate"
	awk -v p="$p" '{ for (i = 1; i <= NF; i++) if ($i ~ /^(ops|secs)=/) print "bench: " p "_" $i }' \
		$TMP/load.out
	case $c in magnet* | mdd) drain_wait ;; esac
	# shellcheck disable=SC2086 # lttng: its consumer's processes
	settle $rp
	out "${p}_ticks" $(($(sweep_ticks) - before))
	out "${p}_kwticks" $(($(kw_ticks) - kw0))
	case $c in
	magnet*)
		magnet_counts "$p"
		reader_stop "$c" "$p"
		magnet_off ;;
	mdd)
		md_stats "$p"
		md_stop
		magnet_counts "$p" >$TMP/counts.out
		sed "s/^bench: ${p}_lost=/bench: ${p}_kernel_lost=/" $TMP/counts.out
		kl=$(sed -n "s/^bench: ${p}_lost=//p" $TMP/counts.out)
		head -n 1 $TMP/stats.out | tr ' ' '\n' | awk -v p="$p" -v kl="$kl" -F= '
			{ v[$1] = $2 }
			END { printf "bench: %s_drained=%.0f\n", p, v["read"] - v["trace_dropped"]
			      printf "bench: %s_drained_bytes=%.0f\n", p, v["trace_bytes"]
			      printf "bench: %s_lost=%.0f\n", p, kl + v["trace_dropped"] + v["queue_dropped"] }'
		magnet_off ;;
	ftrace)
		ftrace_counts "$p" w
		reader_stop ftrace "$p"
		ftrace_off w ;;
	lttng*)
		lttng_stop "$p" $SW/lt ;;
	bpf* | bt*)
		ebpf_stop "$c" "$p" "$(sed -n 's/.*ops=\([0-9]*\).*/\1/p' $TMP/load.out)" ;;
	esac
	rm -rf "${SW:?}"/*
}

if want 7; then
	SW=$TMP/sweep
	mkdir -p $SW
	mount -t tmpfs -o size=2g sweep $SW || die "mount tmpfs $SW"
	SCONF="magnet magnetm ftrace"
	[ $LTTNG = 0 ] || SCONF="$SCONF lttngkp lttnglg"
	[ $BPF = 0 ] || SCONF="$SCONF bpf bpff"
	[ $BT = 0 ] || SCONF="$SCONF bt btf"
	if command -v magnetd >/dev/null && command -v mdtest >/dev/null; then
		SCONF="$SCONF mdd"
	else
		echo "vm-bench: row 7 without magnetd's default-settings line (no magnetd or mdtest)"
	fi
	# shellcheck disable=SC2086 # split: one size a word
	out sweep_sizes "$(echo $SSIZES | tr ' ' ,)"
	out sweep_reps "$SREPS"
	out sweep_rate "$SRATE"
	out sweep_dur "$SDUR"
	out sweep_buf "$BUF"
	out sweep_configs "$(echo "$SCONF" | tr ' ' ,)"
	# As row 6: magnet-read's AIO copies run in magnet's unbound
	# kworkers, which the scheduler otherwise often wakes on the load's
	# CPU; on the readers' CPU, where ftrace-read and lttng-consumerd do
	# their copies.
	WQM=/sys/devices/virtual/workqueue/cpumask
	wqm0=$(cat $WQM)
	if [ "$FWQ" != none ]; then
		echo "$FWQ" >$WQM || die "cannot set $WQM to $FWQ"
	fi
	out sweep_wq_cpumask "$(cat $WQM)"
	# Not counted: the first write flood of the boot (TCG translates).
	taskset $W loadgen write-for 0.2 4000 /dev/full >/dev/null || die "loadgen"
	r=1
	while [ $r -le "$SREPS" ]; do
		for s in $SSIZES; do
			for mode in paced flood; do
				rate=0
				[ $mode = flood ] || rate=$SRATE
				for c in $SCONF; do
					[ "$c" != lttnglg ] || [ "$s" -le 1024 ] || continue
					# bpftrace 0.17: strings of 200 bytes at most
					case $c in bt*) [ "$s" -le 200 ] || continue ;; esac
					sweep_run "sw_${s}_${mode}_${c}_$r" "$c" "$s" "$rate"
				done
			done
		done
		r=$((r + 1))
	done
	echo "$wqm0" >$WQM
	umount $SW
	out sweep_done 1
fi

[ $LTTNG = 0 ] || { kill "$SDPID"; sleep 1; }
[ $PERF = 0 ] || umount $PD
out 'done' 1
