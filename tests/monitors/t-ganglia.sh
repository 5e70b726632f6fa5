#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Ganglia, the real programs (Debian's gmond, gmetad, rrdtool): gmond -f
# loads modmagnet.so with the shipped drop-in (monitors/ganglia/magnet.conf,
# only its path, port, names and interval changed, and munge = yes with
# this host's munged: the node's magnetd sees a remote client, which
# authenticates with a MUNGE credential), on loopback-only
# channels with deaf = no, against magnetd in the node. gmond's XML carries
# every magnet metric: counts exactly what a workload of known size did,
# rates within 10 % of a paced workload's; gmetad polling gmond writes
# RRDs whose rrdtool fetch shows the same; magnetd gone gives a log line
# and NaN, never a crash, and its return is found; a bad configuration
# gives a log line and no magnet metric, gmond running on.
set -euo pipefail
. tests/monitors/lib.sh

so=$PWD/build/monitors/ganglia/modmagnet.so
[[ -f $so ]] || mon_fail "$so not built (make)"
command -v gmond gmetad rrdtool >/dev/null || mon_fail "gmond, gmetad, rrdtool: run tools/bootstrap"
GPORT=${MON_GMOND_PORT:-18649}
GM_XML=${MON_GMETAD_PORT:-18651}

# gmond's globals: foreground, no setuid, loopback channels, deaf = no.
gmond_conf() { # dir port dropin
	cat >"$1/gmond.conf" <<CONF
globals {
  daemonize = no
  setuid = no
  debug_level = 0
  mute = no
  deaf = no
  host_dmax = 0
  cleanup_threshold = 300
  gexec = no
  send_metadata_interval = 5
}
cluster { name = "magnet-test" }
host { location = "vm" }
udp_send_channel { host = 127.0.0.1  port = $2  ttl = 1 }
udp_recv_channel { bind = 127.0.0.1  port = $2 }
tcp_accept_channel { bind = 127.0.0.1  port = $2 }
include ('$3')
CONF
}

# The shipped drop-in, pointed at this build and the forwarded magnetd.
sed -e "s|/usr/lib/x86_64-linux-gnu/ganglia/modmagnet.so|$so|" \
	-e "s|param socket { value = \"/run/magnet/magnetd.sock\" }|param host { value = \"127.0.0.1\" }\\
    param port { value = \"$MON_MAGNETD_PORT\" }|" \
	-e 's|param probes { value = "tcp_sendmsg" }|param probes { value = "__x64_sys_getppid, tcp_sendmsg" }|' \
	-e 's|param jobs { value = "" }|param jobs { value = "/a, /b" }|' \
	-e 's|collect_every = 10|collect_every = 5|' \
	-e 's|param munge { value = "auto" }|param munge { value = "yes" }|' \
	-e "s|param munge_socket { value = \"\" }|param munge_socket { value = \"$MON_MUNGE_SOCKET\" }|" \
	monitors/ganglia/magnet.conf >"$MON_DIR/magnet.conf"
{ grep -q "value = \"$MON_MAGNETD_PORT\"" "$MON_DIR/magnet.conf" &&
	grep -q 'param munge { value = "yes" }' "$MON_DIR/magnet.conf" &&
	grep -q "value = \"$MON_MUNGE_SOCKET\"" "$MON_DIR/magnet.conf"; } ||
	mon_fail "the drop-in changed shape: fix this test's sed"
gmond_conf "$MON_DIR" "$GPORT" "$MON_DIR/magnet.conf"

# gmond's XML: name VAL pairs of the magnet metrics.
xml() {
	exec {fd}<>"/dev/tcp/127.0.0.1/$GPORT" || return 1
	cat <&"$fd" | grep -o '<METRIC NAME="magnet[^"]*" VAL="[^"]*"' |
		sed 's/<METRIC NAME="\([^"]*\)" VAL="\([^"]*\)"/\1 \2/' | sort
	exec {fd}>&-
}
val() { xml | awk -v k="$1" '$1 == k { print $2 }'; }
wait_val() { # metric want [seconds]
	local i=0 got
	while got=$(val "$1") && [[ $got != "$2" ]]; do
		i=$((i + 1))
		((i < ${3:-60} * 2)) || mon_fail "gmond: $1 = '$got', want $2"
		sleep 0.5
	done
}

mon_boot
gmond -f -c "$MON_DIR/gmond.conf" >"$MON_DIR/gmond.log" 2>&1 &
gmond_pid=$!
mon_at_exit "kill $gmond_pid 2>/dev/null; wait $gmond_pid 2>/dev/null"
sleep 2
kill -0 $gmond_pid 2>/dev/null || mon_fail "gmond did not start: $(cat "$MON_DIR/gmond.log")"
grep -q "magnet_module: 38 metrics from magnetd at 127.0.0.1:$MON_MAGNETD_PORT (2 probes, 2 jobs, 3 top slots)" "$MON_DIR/gmond.log" ||
	mon_fail "gmond's log: $(cat "$MON_DIR/gmond.log")"

# gmetad polling gmond, from the start: its RRDs are checked below.
mkdir -p "$MON_DIR/rrds"
cat >"$MON_DIR/gmetad.conf" <<CONF
data_source "magnet" 5 127.0.0.1:$GPORT
gridname "magnet-grid"
setuid off
rrd_rootdir "$MON_DIR/rrds"
xml_port $GM_XML
interactive_port $((GM_XML + 1))
server_threads 2
CONF
gmetad -d 1 -c "$MON_DIR/gmetad.conf" >"$MON_DIR/gmetad.log" 2>&1 &
gmetad_pid=$!
mon_at_exit "kill $gmetad_pid 2>/dev/null; wait $gmetad_pid 2>/dev/null"
rrd_last() { # metric: the last known value in its RRD
	local f
	# The host's RRD (gmetad also keeps summaries, two values a row).
	f=$(find "$MON_DIR/rrds" -name "$1.rrd" -not -path '*__SummaryInfo__*' | head -n 1)
	[[ -n $f ]] || return 0
	rrdtool fetch "$f" AVERAGE -s -300 | awk 'NF == 2 && $2 !~ /nan/ { v = $2 } END { if (v != "") printf "%.6f\n", v }'
}
wait_rrd() { # metric check-awk-expr
	local i=0 got
	while :; do
		got=$(rrd_last "$1")
		[[ -n $got ]] && awk -v v="$got" "BEGIN { exit !($2) }" && { echo "$got"; return 0; }
		i=$((i + 1))
		((i < 180)) || mon_fail "RRD $1: '$got' (gmetad.log: $(tail -n 5 "$MON_DIR/gmetad.log"))"
		sleep 1
	done
}

## Counts, exactly.
mon_work burst a 1000 >/dev/null
mon_work send a 50000 >/dev/null
mon_work burst b 40 >/dev/null
mon_wait_job a 1001
mon_wait_job b 40
wait_val magnet_job_a_events 1001
wait_val magnet_job_a_bytes 50000
wait_val magnet_job_b_events 40
wait_val magnet_job_b_bytes 0
wait_val magnet_up 1
wait_val magnet_probes 2
sleep 6		# one more collection: the probe's count is stable
truth=$(mon_probe_events __x64_sys_getppid)
wait_val magnet_probe___x64_sys_getppid_events "$truth"
# Records grow by themselves (magnetd's replies hit tcp_sendmsg): gmond's
# value, from a collection at most 5 s old, lies between two TOTALS.
t0=$(mon_total records)
sleep 6
records=$(val magnet_records)
t1=$(mon_total records)
((t0 <= records && records <= t1)) || mon_fail "magnet_records $records, TOTALS $t0 then $t1"
[[ $(val magnet_kernel_lost) == 0 && $(val magnet_daemon_dropped) == 0 ]] || mon_fail "losses: $(xml | grep -E 'lost|dropped')"
n=$(xml | wc -l)
[[ $n == 38 ]] || mon_fail "gmond's XML has $n magnet metrics, want 38: $(xml)"
mon_log "gmond's XML, all 38 magnet metrics; counts: magnet_job_a_events 1001, magnet_job_a_bytes 50000, magnet_job_b_events 40 (the workload), magnet_probe___x64_sys_getppid_events $truth and magnet_records $records (TOTALS $t0..$t1)"

## Rates, within 10 %: /a paced at 100 calls/s for 40 s. Each collection
## (every 5 s) from 12 s to 37 s gives a sample. A rate is exact over the
## node's clock, but a stalled guest (a busy CI host) moves the calls it
## owed into the next interval (the pace catches up): one low sample, one
## high; the median of the samples is what must be 100.
mon_work rate a 100 40 >/dev/null
start=$SECONDS
sleep 12
rates=() prates=() seen=
get() { awk -v k="$1" '$1 == k { print $2 }' <<<"$x"; }	# from one XML, x
while ((SECONDS - start < 37)); do
	x=$(xml)
	key="$(get magnet_records) $(get magnet_job_a_rate)"
	if [[ $key != "$seen" ]]; then	# a new collection
		seen=$key
		r=$(get magnet_job_a_rate) t=$(get magnet_top1_job) tr=$(get magnet_top1_job_rate)
		pr=$(get magnet_probe___x64_sys_getppid_rate)
		mon_log "magnet_job_a_rate $r, magnet_top1_job $t at $tr events/s, probe rate $pr (workload: 100/s)"
		[[ $t == /a ]] || mon_fail "magnet_top1_job '$t', want /a"
		[[ $tr == "$r" ]] || mon_fail "magnet_top1_job_rate $tr, magnet_job_a_rate $r: the same job, the same rate"
		rates+=("$r") prates+=("$pr")
	fi
	sleep 1
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
((${#rates[@]} >= 4)) || mon_fail "${#rates[@]} collections in 25 s, want 5 or more (collect_every = 5)"
r=$(median "${rates[@]}") pr=$(median "${prates[@]}")
awk -v r="$r" 'BEGIN { exit !(r >= 90 && r <= 110) }' || mon_fail "magnet_job_a_rate: median $r of ${rates[*]}, not within 10 % of 100"
awk -v r="$pr" 'BEGIN { exit !(r >= 90 && r <= 130) }' || mon_fail "magnet_probe___x64_sys_getppid_rate: median $pr of ${prates[*]}"
mon_log "rates, median of ${#rates[@]} collections: magnet_job_a_rate $r, probe $pr (100/s paced; the node's other getppid() callers add to the probe's)"

## The RRDs: the same values as gmond's XML.
mon_wait_job a 5001 60		# 1001 + 40 s at 100/s: the pace is over
wait_val magnet_job_a_events 5001
a=$(wait_rrd magnet_job_a_events 'v == 5001')
b=$(wait_rrd magnet_job_a_bytes 'v == 50000')
f=$(find "$MON_DIR/rrds" -name magnet_job_a_rate.rrd -not -path '*__SummaryInfo__*')
rows=$(rrdtool fetch "$f" AVERAGE -s -300 | awk 'NF == 2 && $2 !~ /nan/ { v = $2 + 0; if (v >= 90 && v <= 110) n++ } END { print n + 0 }')
((rows >= 1)) || mon_fail "no RRD row of magnet_job_a_rate within 10 % of 100: $(rrdtool fetch "$f" AVERAGE -s -300 | tail -n 20)"
mon_log "gmetad's RRDs, rrdtool fetch: magnet_job_a_events $a, magnet_job_a_bytes $b (gmond: 5001, 50000); $rows rows of magnet_job_a_rate within 10 % of 100"

## magnetd gone: a log line, NaN, gmond alive; back: found again.
mon_work run stop-magnetd >/dev/null
wait_val magnet_records nan 30
wait_val magnet_top1_job "" 30
kill -0 $gmond_pid || mon_fail "gmond died with magnetd gone"
grep -q "magnet_module: magnetd unreachable: connect to 127.0.0.1:$MON_MAGNETD_PORT: Connection refused; magnet metrics are NaN until it is back" "$MON_DIR/gmond.log" ||
	grep -q "magnet_module: magnetd unreachable: .*; magnet metrics are NaN until it is back" "$MON_DIR/gmond.log" ||
	mon_fail "no log line for magnetd gone: $(cat "$MON_DIR/gmond.log")"
[[ $(grep -c 'magnetd unreachable' "$MON_DIR/gmond.log") == 1 ]] || mon_fail "the outage was logged more than once"
mon_log "magnetd stopped: $(grep 'magnetd unreachable' "$MON_DIR/gmond.log"); magnet_records nan"
mon_work run start-magnetd >/dev/null
mon_work burst a 7 >/dev/null
mon_wait_job a 7
wait_val magnet_job_a_events 7
grep -q "magnet_module: magnetd at 127.0.0.1:$MON_MAGNETD_PORT is back" "$MON_DIR/gmond.log" || mon_fail "no log line for magnetd back"
mon_log "magnetd restarted: found again, counts from 0 (magnet_job_a_events 7)"

## A bad configuration: a clear line, no magnet metric, gmond runs on.
mkdir -p "$MON_DIR/bad"
sed 's|param top_jobs { value = "3" }|param top_jobs { value = "99" }|' "$MON_DIR/magnet.conf" >"$MON_DIR/bad/magnet.conf"
gmond_conf "$MON_DIR/bad" $((GPORT + 10)) "$MON_DIR/bad/magnet.conf"
gmond -f -c "$MON_DIR/bad/gmond.conf" >"$MON_DIR/bad/gmond.log" 2>&1 &
bad_pid=$!
mon_at_exit "kill $bad_pid 2>/dev/null; wait $bad_pid 2>/dev/null"
sleep 8
kill -0 $bad_pid || mon_fail "gmond died on a bad magnet configuration: $(cat "$MON_DIR/bad/gmond.log")"
grep -q "magnet_module: param top_jobs: '99' is not 0 to 20" "$MON_DIR/bad/gmond.log" || mon_fail "bad config log: $(cat "$MON_DIR/bad/gmond.log")"
n=$(exec {fd}<>"/dev/tcp/127.0.0.1/$((GPORT + 10))"; cat <&"$fd" | grep -c 'METRIC NAME="magnet' || true)
[[ $n == 0 ]] || mon_fail "$n magnet metrics with a bad configuration"
mon_log "bad configuration: $(grep 'param top_jobs' "$MON_DIR/bad/gmond.log"); gmond runs on without magnet metrics"
echo "ok - t-ganglia"
