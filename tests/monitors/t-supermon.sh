#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Supermon's mon protocol on magnetd's listener in the node, read by a
# client built on sfsexp (tests/monitors/supermon-client.c): the
# description's categories, bits and variables; a sample's values against
# a workload of known size and magnetd's TOTALS; a mask per client;
# malformed and oversized requests answered with an error while another
# client keeps its mask and its samples; samples composed as the
# concentrator composes nodes.
set -euo pipefail
. tests/monitors/lib.sh

client=build/tests/monitors/supermon-client
[[ -x $client ]] || mon_fail "$client not built (make)"
sm() { "$client" -s "127.0.0.1:$MON_SUPERMON_PORT" "$@"; }
value() { # output key
	awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) exit 1 }' <<<"$1"
}

mon_boot

desc=$(sm '#') || mon_fail "describe: $desc"
for c in "category node 1" "category probes 2" "category jobs 4" \
	"category net 8" "category peers 16" "var net.tx_bytes u64 counter" \
	"var peers.peer string label" \
	"var node.records u64 counter" "var node.kernel_lost u64 counter" \
	"var probes.events u64 counter" "var probes.sock_bytes u64 counter" \
	"var jobs.path string label" "var jobs.events u64 counter"; do
	grep -qx "$c" <<<"$desc" || mon_fail "description lacks '$c':
$desc"
done
mon_log "description: $(grep -c '^var ' <<<"$desc") variables in $(grep -c '^category ' <<<"$desc") categories (node 1, probes 2, jobs 4, net 8, peers 16)"

mon_work burst a 500 >/dev/null
mon_work send a 10000 >/dev/null
mon_work burst b 70 >/dev/null
mon_wait_job a 501
mon_wait_job b 70
sleep 1
before=$(mon_probe_events __x64_sys_getppid)
s=$(sm S) || mon_fail "sample: $s"
after=$(mon_probe_events __x64_sys_getppid)
[[ $(value "$s" host) == magnet-vm ]] || mon_fail "the sample does not name its node: $s"
[[ $(value "$s" jobs./a.events) == 501 ]] || mon_fail "jobs./a.events: $(value "$s" jobs./a.events), want 501"
[[ $(value "$s" jobs./a.sock_bytes) == 10000 ]] || mon_fail "jobs./a.sock_bytes: want 10000"
[[ $(value "$s" jobs./b.events) == 70 ]] || mon_fail "jobs./b.events: want 70"
p=$(value "$s" probes.__x64_sys_getppid.events)
((before <= p && p <= after)) || mon_fail "probes.__x64_sys_getppid.events $p, TOTALS said $before then $after"
[[ $(value "$s" node.module) == up && $(value "$s" node.probes) == 2 ]] || mon_fail "node: $s"
((p >= 570)) || mon_fail "probes.__x64_sys_getppid.events $p < 570"
mon_log "sample: jobs./a.events 501, jobs./a.sock_bytes 10000, jobs./b.events 70 (the workload), probes.__x64_sys_getppid.events $p (TOTALS $before..$after), node.records $(value "$s" node.records)"

# A mask: the client's samples hold those categories only.
out=$(sm 'M 4' S) || mon_fail "mask: $out"
grep -qx 'mask 4' <<<"$out" || mon_fail "M 4: $out"
grep -q '^node\.\|^probes\.' <<<"$out" && mon_fail "mask 4 sample holds other categories: $out"
grep -q '^jobs\./a\.events 501$' <<<"$out" || mon_fail "mask 4 sample: $out"
mon_log "M 4: samples hold jobs only"

# Bad requests on one connection; another client is untouched.
exec {good}<>"/dev/tcp/127.0.0.1/$MON_SUPERMON_PORT"
printf 'M 2\n' >&"$good"
IFS= read -r -t 30 r <&"$good"
[[ $r == "(mask 2)" ]] || mon_fail "second client: M 2 -> $r"
exec {bad}<>"/dev/tcp/127.0.0.1/$MON_SUPERMON_PORT"
long=$(head -c 10000 /dev/zero | tr '\0' S)
{
	printf 'X\n'
	printf 'M 33\n'
	printf '%s\n' "$long"
	printf 'M\n'
	printf '\n'	# a blank line is no request: no reply, no error
	printf 'S\n'
} >&"$bad"
for want in '(error "unknown request' '(error "mask must be 1 to 31' \
	'(error "request longer than 4096 bytes")' '(error "M needs a mask'; do
	IFS= read -r -t 30 r <&"$bad" || mon_fail "no reply to a bad request"
	[[ $r == "$want"* ]] || mon_fail "bad request: got '$r', want '$want...'"
done
IFS= read -r -t 30 r <&"$bad"
[[ $r == '(sample "magnet-vm" '*'(node '*'(probes '*'(jobs '* ]] ||
	mon_fail "after the errors, the mask is still all: $r"
printf 'S\n' >&"$good"
IFS= read -r -t 30 r <&"$good"
[[ $r == '(sample "magnet-vm" '*'(probes '* && $r != *'(node '* && $r != *'(jobs '* ]] ||
	mon_fail "the other client's sample changed: $r"
printf 'Q\n' >&"$bad"
IFS= read -r -t 30 r <&"$bad"
[[ $r == "(bye)" ]] || mon_fail "Q: $r"
exec {bad}>&- {good}>&-
mon_log "X, M 33, a 10000-byte line, M, an empty line: each an error; that client keeps mask 31, the other its mask 2"

# The concentrator's composition: samples of two connections in one list.
out=$("$client" -s "127.0.0.1:$MON_SUPERMON_PORT" -s "127.0.0.1:$MON_SUPERMON_PORT" S) ||
	mon_fail "composed: $out"
[[ $(grep -c '^magnet-vm: host magnet-vm$' <<<"$out") == 2 ]] || mon_fail "composed: $out"
grep -q '^magnet-vm: jobs\./b\.events 70$' <<<"$out" || mon_fail "composed: $out"
mon_log "two samples composed as (concentrator (sample \"magnet-vm\" ...) (sample \"magnet-vm\" ...)) parse as one"
echo "ok - t-supermon"
