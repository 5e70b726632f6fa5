# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tests/monitors/lib.sh: the host's half of the monitor tests. Each test
# (tests/monitors/t-*.sh, bash, run from the repository root after
# `make`) boots a node in QEMU (tests/monitors/node.sh: Debian's kernel,
# magnet with two probes, magnetd with its Prometheus and Supermon
# listeners), forwards its ports to this host's loopback, drives workloads
# of known size in it, and checks what the real monitor, running here,
# shows.
#
#   . tests/monitors/lib.sh
#   mon_boot                    boot the node; returns once it serves
#   mon_work burst JOB N        N getppid() calls in job (cgroup) /JOB;
#                               prints "done N" when they are made
#   mon_work rate JOB R S       R calls/s for S s, paced, in the background:
#                               prints "started R*S" at once
#   mon_work send JOB BYTES     one send() of BYTES on a TCP connection
#                               (one tcp_sendmsg, sock handler) in /JOB
#   mon_work end JOB            the job's process exits, its cgroup goes
#   mon_work run stop-magnetd | mon_work run start-magnetd
#   mon_work run stall-magnetd | mon_work run resume-magnetd (SIGSTOP, SIGCONT)
#   mon_totals                  magnetd's TOTALS reply (docs/protocol.md),
#                               after AUTH MUNGE (magnetd is remote)
#   mon_total KEY               one key of its OK line (records, probes, ...)
#   mon_probe_events NAME       events of probe NAME (0 if none yet)
#   mon_job_events JOB          events of job /JOB (0 if none yet)
#   mon_wait_job JOB N [S]      until job /JOB's events reach N (S s, 60)
#   mon_shutdown                end the node (also on exit): fails the test
#                               on a kernel problem in its console
#   mon_fail MSG                print MSG (and the node's log) and exit 1
#   mon_munge_cred              a fresh MUNGE credential for magnetd (one
#                               use), from this host's munged
#
# Under `set -o pipefail`, read mon_totals whole (sed -n 1p, not head -n 1).
#
# The probes, by the names monitors show: __x64_sys_getppid (generic) and
# tcp_sendmsg (handler sock). Jobs are cgroup paths: "burst a 10" counts
# towards job /a; a/b is nested, and %XX stands for any byte ("j%01").
#
# MUNGE: one key, made for the test, in two munged of its own: the node's
# (tests/vm/munged.sh in the guest; magnetd's munge_socket) and this
# host's, whose socket is MON_MUNGE_SOCKET (never the system's), so a
# credential minted here for a client of the node's magnetd (magnet-cat
# --munge-socket, the gmond module's munge_socket) decodes there.
#
# Ports on 127.0.0.1 (override if taken): MON_MAGNETD_PORT (18650 ->
# guest 8650), MON_PROM_PORT (18653 -> 8653), MON_SUPERMON_PORT (12709 ->
# 2709), MON_WORK_PORT (17000 -> mon-workload's 7000). MON_DIR is this
# test's scratch directory (removed at exit unless MON_KEEP=1); the node's
# console is $MON_DIR/console.log.

MON_MAGNETD_PORT=${MON_MAGNETD_PORT:-18650}
MON_PROM_PORT=${MON_PROM_PORT:-18653}
MON_SUPERMON_PORT=${MON_SUPERMON_PORT:-12709}
MON_WORK_PORT=${MON_WORK_PORT:-17000}
MON_DIR=$(mktemp -d "${TMPDIR:-/tmp}/magnet-mon.XXXXXX")
MON_MUNGE_SOCKET=$MON_DIR/munge/socket
MON_VM_PID=
_mon_exit_hooks=()

mon_log() { printf '# %s\n' "$*"; }

mon_fail() {
	printf 'FAIL: %s\n' "$*" >&2
	if [[ -s $MON_DIR/console.log ]]; then
		echo "--- the node's console (last 40 lines):" >&2
		tail -n 40 "$MON_DIR/console.log" >&2
	fi
	exit 1
}

# Run at exit, before the node is ended (stop the monitors first).
mon_at_exit() { _mon_exit_hooks+=("$*"); }

_mon_exit() {
	local rc=$? h
	trap - EXIT
	for h in "${_mon_exit_hooks[@]}"; do eval "$h" || true; done
	if [[ -n $MON_VM_PID ]]; then
		mon_shutdown || rc=1
	fi
	sh tests/vm/munged.sh stop "$MON_DIR/munge" || rc=1
	if [[ ${MON_KEEP:-0} == 1 ]]; then
		echo "# kept $MON_DIR"
	else
		rm -rf "$MON_DIR"
	fi
	exit "$rc"
}
trap _mon_exit EXIT

# One line to a host:port, and the reply lines until the peer closes or
# goes quiet for a second (bash's /dev/tcp, no other tool needed).
_mon_ask() { # port line [lines]
	local port=$1 line=$2 want=${3:-1} reply n=0
	exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf '%s\n' "$line" >&"$fd"
	while ((n < want)) && IFS= read -r -t 600 reply <&"$fd"; do
		printf '%s\n' "${reply%$'\r'}"
		n=$((n + 1))
	done
	exec {fd}>&-
	((n == want))
}

mon_boot() {
	local i=0
	# Another uid (uid 65534's client) may reach the munged socket in it.
	chmod 0711 "$MON_DIR"
	PATH=$PATH:/usr/sbin mungekey -c -k "$MON_DIR/munge.key" >"$MON_DIR/mungekey.log" 2>&1 ||
		mon_fail "mungekey: $(cat "$MON_DIR/mungekey.log") (run tools/bootstrap: munge)"
	sh tests/vm/munged.sh start "$MON_DIR/munge" "$MON_DIR/munge.key" ||
		mon_fail "the host's munged did not start"
	mon_log "booting the node (QEMU, TCG); console: $MON_DIR/console.log"
	tests/vm/run --forward "$MON_MAGNETD_PORT:8650" \
		--file "$MON_DIR/munge.key:/magnet/munge.key" \
		--forward "$MON_PROM_PORT:8653" \
		--forward "$MON_SUPERMON_PORT:2709" \
		--forward "$MON_WORK_PORT:7000" \
		--timeout "${MON_VM_TIMEOUT:-1800}" \
		-- sh /magnet/tests/monitors/node.sh >"$MON_DIR/console.log" 2>&1 &
	MON_VM_PID=$!
	until grep -qs '^MAGNET-NODE-READY' "$MON_DIR/console.log"; do
		kill -0 "$MON_VM_PID" 2>/dev/null || { MON_VM_PID=; mon_fail "the node did not come up"; }
		i=$((i + 1))
		((i < 3000)) || mon_fail "the node was not ready in 300 s"
		sleep 0.1
	done
	mon_log "node up: magnetd on 127.0.0.1:$MON_MAGNETD_PORT, Prometheus on :$MON_PROM_PORT, Supermon on :$MON_SUPERMON_PORT"
}

mon_work() { # words...
	local reply
	reply=$(_mon_ask "$MON_WORK_PORT" "$*") || mon_fail "mon_work $*: no reply"
	[[ $reply == error* ]] && mon_fail "mon_work $*: $reply"
	printf '%s\n' "$reply"
}

mon_totals() {
	local fd head n line cred
	cred=$(mon_munge_cred) || return 1
	exec {fd}<>"/dev/tcp/127.0.0.1/$MON_MAGNETD_PORT" || return 1
	printf 'AUTH MUNGE %s\nTOTALS\n' "$cred" >&"$fd"
	IFS= read -r -t 60 head <&"$fd" || { exec {fd}>&-; return 1; }
	[[ $head == "OK AUTH "* ]] || { printf '%s\n' "$head"; exec {fd}>&-; return 1; }
	IFS= read -r -t 60 head <&"$fd" || { exec {fd}>&-; return 1; }
	printf '%s\n' "$head"
	n=$(awk '{ print $2 }' <<<"$head")
	[[ $head == OK* ]] || { exec {fd}>&-; return 1; }
	while ((n-- > 0)) && IFS= read -r -t 60 line <&"$fd"; do
		printf '%s\n' "$line"
	done
	exec {fd}>&-
}

mon_total() { # key
	mon_totals | sed -n 1p | tr ' ' '\n' | sed -n "s/^$1=//p"
}

mon_probe_events() { # name
	mon_totals | awk -v n="$1" '$1 == "probe" && $4 == n {
		sub("events=", "", $5); print $5; f = 1 } END { if (!f) print 0 }'
}

mon_job_events() { # job
	mon_totals | awk -v n="/$1" '$1 == "job" && $3 == n {
		sub("events=", "", $4); print $4; f = 1 } END { if (!f) print 0 }'
}

mon_wait_job() { # job n [seconds]
	local i=0 max=$((${3:-60} * 10)) got
	while got=$(mon_job_events "$1") && ((got < $2)); do
		i=$((i + 1))
		((i < max)) || mon_fail "job /$1: $got events after ${3:-60} s, want $2"
		sleep 0.1
	done
}

mon_munge_cred() {
	munge -S "$MON_MUNGE_SOCKET" -s magnetd
}

mon_shutdown() {
	local pid=$MON_VM_PID i=0 rc=0
	[[ -n $pid ]] || return 0
	MON_VM_PID=
	_mon_ask "$MON_WORK_PORT" quit >/dev/null 2>&1 || true
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		if ((i > 600)); then
			kill "$pid" 2>/dev/null
			echo "FAIL: the node did not shut down in 60 s" >&2
			rc=1
			break
		fi
		sleep 0.1
	done
	wait "$pid" || rc=$?
	if ((rc)); then
		echo "FAIL: the node ended with status $rc (tests/vm/run: a kernel problem, or the node's script failed)" >&2
		tail -n 40 "$MON_DIR/console.log" >&2
		return 1
	fi
	grep -q '^MAGNET-NODE-DONE' "$MON_DIR/console.log" || {
		echo "FAIL: the node did not finish cleanly" >&2
		tail -n 40 "$MON_DIR/console.log" >&2
		return 1
	}
	return 0
}
