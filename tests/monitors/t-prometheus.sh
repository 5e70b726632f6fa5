#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prometheus, the real server (Debian's prometheus), scraping magnetd in
# the node through the forwarded port: a query through its HTTP API gives
# each job's events and sock bytes exactly as the workload made them, and
# the probe's counter as TOTALS has it; Debian's promtool accepts the
# page; magnetd answers other paths and methods with the right status.
set -euo pipefail
. tests/monitors/lib.sh

PROM_PORT=${MON_PROMETHEUS_WEB_PORT:-19090}
command -v prometheus >/dev/null || mon_fail "prometheus not installed (run tools/bootstrap)"

mon_boot

# The page, as any scraper gets it.
curl -sS -D "$MON_DIR/headers" -o "$MON_DIR/metrics" "http://127.0.0.1:$MON_PROM_PORT/metrics" ||
	mon_fail "no /metrics from magnetd"
grep -q '^HTTP/1.1 200 OK' "$MON_DIR/headers" || mon_fail "status: $(head -n 1 "$MON_DIR/headers")"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$MON_DIR/headers" || mon_fail "content type: $(cat "$MON_DIR/headers")"
promtool check metrics <"$MON_DIR/metrics" || mon_fail "promtool check metrics refused magnetd's page"
mon_log "promtool check metrics: the page ($(wc -l <"$MON_DIR/metrics") lines) is valid"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MON_PROM_PORT/")
[[ $code == 404 ]] || mon_fail "GET /: $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$MON_PROM_PORT/metrics")
[[ $code == 405 ]] || mon_fail "POST /metrics: $code, want 405"

# A real Prometheus, scraping every second.
cat >"$MON_DIR/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: magnet
    static_configs:
      - targets: ['127.0.0.1:$MON_PROM_PORT']
        labels:
          node: magnet-vm
CONF
prometheus --config.file="$MON_DIR/prometheus.yml" \
	--storage.tsdb.path="$MON_DIR/tsdb" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$MON_DIR/prometheus.log" 2>&1 &
prom=$!
mon_at_exit "kill $prom; wait $prom"

# Instant query; prints the value of the single result, or nothing.
query() { # promql
	curl -sS -G "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json,sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
res = r["data"]["result"]
if len(res) == 1:
    print(res[0]["value"][1])
elif len(res) > 1:
    sys.exit("more than one series: %s" % res)'
}

wait_value() { # promql want [seconds]
	local i=0 got
	while :; do
		got=$(query "$1" 2>/dev/null || true)
		[[ $got == "$2" ]] && return 0
		i=$((i + 1))
		((i < ${3:-60} * 2)) || mon_fail "Prometheus: $1 = '${got}', want $2 (prometheus.log: $(tail -n 5 "$MON_DIR/prometheus.log"))"
		sleep 0.5
	done
}

wait_value 'up{job="magnet"}' 1 120
mon_log "Prometheus scrapes the node: up{job=\"magnet\"} = 1"

mon_work burst a 2000 >/dev/null
mon_work burst b 300 >/dev/null
mon_work send a 65536 >/dev/null
mon_wait_job a 2001
mon_wait_job b 300
wait_value 'magnet_job_events_total{cgroup="/a"}' 2001
wait_value 'magnet_job_events_total{cgroup="/b"}' 300
wait_value 'magnet_job_sock_bytes_total{cgroup="/a"}' 65536
mon_log "Prometheus: magnet_job_events_total{cgroup=\"/a\"} = 2001, {cgroup=\"/b\"} = 300, magnet_job_sock_bytes_total{cgroup=\"/a\"} = 65536 (the workload: 2000 + 1 send, 300, one send of 65536 bytes)"

# The probe's counter: TOTALS is the ground truth (other programs in the
# node may call getppid too); Prometheus must catch up with it.
truth=$(mon_probe_events __x64_sys_getppid)
((truth >= 2300)) || mon_fail "TOTALS: __x64_sys_getppid $truth, want at least 2300"
sleep 2
truth=$(mon_probe_events __x64_sys_getppid)
wait_value 'magnet_probe_events_total{probe="__x64_sys_getppid"}' "$truth"
mon_log "Prometheus: magnet_probe_events_total{probe=\"__x64_sys_getppid\"} = $truth = TOTALS"
wait_value 'magnet_probes' 2
wait_value 'magnet_up' 1
echo "ok - t-prometheus"
