#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# magnetd's TOTALS on a real node (the ground truth the monitor tests
# compare with): exact events per job for bursts of getppid() calls, the
# bytes one send() gave tcp_sendmsg's sock records, per job and per probe;
# a job whose cgroup is removed leaves the table; counters only go up, and
# start again from 0 when magnetd restarts (uptime says so).
set -euo pipefail
. tests/monitors/lib.sh

mon_boot
mon_work burst a 1000 >/dev/null
mon_work burst b 250 >/dev/null
mon_wait_job a 1000
mon_wait_job b 250
sleep 1
[[ $(mon_job_events a) == 1000 ]] || mon_fail "job /a: $(mon_job_events a) events, want 1000"
[[ $(mon_job_events b) == 250 ]] || mon_fail "job /b: $(mon_job_events b) events, want 250"
p=$(mon_probe_events __x64_sys_getppid)
((p >= 1250)) || mon_fail "__x64_sys_getppid: $p events, want at least 1250"
mon_log "jobs /a 1000 and /b 250 events, exactly; __x64_sys_getppid $p"

sent=$(mon_probe_events tcp_sendmsg)
mon_work send a 100000 >/dev/null
mon_wait_job a 1001
sleep 1
line=$(mon_totals | awk '$1 == "job" && $3 == "/a"')
[[ $line == *" events=1001 sock_bytes=100000 exported=1 intr=0 lost_fair=0" ]] ||
	mon_fail "job /a after one send of 100000 bytes: $line"
line=$(mon_totals | awk '$1 == "probe" && $4 == "tcp_sendmsg"')
# Loaded, and no hit skipped (missed=0: no other probe's handler ran).
[[ $line == *" sock=1 loaded=1 symbol=tcp_sendmsg missed=0" ]] || mon_fail "tcp_sendmsg: $line"
bytes=${line#* sock_bytes=}
bytes=${bytes%% *}
((bytes >= 100000)) || mon_fail "tcp_sendmsg sock_bytes $bytes, want at least 100000"
mon_log "one send() of 100000 bytes in /a: $line"
((sent < $(mon_probe_events tcp_sendmsg))) || mon_fail "tcp_sendmsg events did not grow"

head=$(mon_totals | sed -n 1p)
[[ $head == *" module=up "* && $head == *" probes=2 "* ]] || mon_fail "TOTALS: $head"
mon_log "$head"

mon_work end b >/dev/null
sleep 2
mon_totals | awk '$1 == "job" && $3 == "/b" { exit 1 }' ||
	mon_fail "job /b still listed after its cgroup went"
mon_log "job /b gone from TOTALS once its cgroup was removed"

records=$(mon_total records)
mon_work run stop-magnetd >/dev/null
mon_work run start-magnetd >/dev/null
mon_work burst a 10 >/dev/null
mon_wait_job a 10
after=$(mon_total records)
((after < records)) || mon_fail "records $after after a restart, $records before: not restarted"
[[ $(mon_job_events a) == 10 ]] || mon_fail "job /a after the restart: $(mon_job_events a), want 10"
mon_log "after a restart: records=$after (was $records), job /a 10"
echo "ok - t-totals"
