#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Ganglia against a hostile node, the real programs (Debian's gmond,
# gmetad, xmllint): jobs (cgroups) named as any user may name them in a
# delegated subtree, control bytes (j\x01), invalid UTF-8 (x\xffy),
# UTF-8 (café), markup (<&>"') and a 4 KiB path of all of them, kept busy
# so that they are the top jobs. gmond's XML and gmetad's stay valid
# (xmllint --valid), gmetad keeps the node and its metrics, and the names
# read as docs/ganglia.md says (%XX, "..." and the end of a long one).
# Then magnetd stopped, and stalled (SIGSTOP: its port takes connections,
# nothing answers): gmond's other metrics (load_one, collected every
# second by modload.so) keep coming, measured as load_one's longest gap
# (its TN) with magnetd well, stopped and stalled. Every check runs; the
# test fails at the end if any failed.
set -euo pipefail
. tests/monitors/lib.sh

so=$PWD/build/monitors/ganglia/modmagnet.so
[[ -f $so ]] || mon_fail "$so not built (make)"
command -v gmond gmetad xmllint >/dev/null || mon_fail "gmond, gmetad, xmllint: run tools/bootstrap"
GPORT=${MON_GMOND_PORT:-18649}
GM_XML=${MON_GMETAD_PORT:-18651}
TIMEOUT_S=2		# the drop-in's timeout, 2000ms
MAX_GAP=$((TIMEOUT_S + 3))
failed=()
check() { # what command...: run it, note a failure
	local what=$1
	shift
	if "$@"; then mon_log "ok: $what"; else failed+=("$what"); echo "FAILED: $what" >&2; fi
}

# The shipped drop-in with 8 top slots, every 5 s.
sed -e "s|/usr/lib/x86_64-linux-gnu/ganglia/modmagnet.so|$so|" \
	-e 's|param munge { value = "auto" }|param munge { value = "yes" }|' \
	-e "s|param munge_socket { value = \"\" }|param munge_socket { value = \"$MON_MUNGE_SOCKET\" }|" \
	-e "s|param socket { value = \"/run/magnet/magnetd.sock\" }|param host { value = \"127.0.0.1\" }\\
    param port { value = \"$MON_MAGNETD_PORT\" }|" \
	-e 's|param top_jobs { value = "3" }|param top_jobs { value = "8" }|' \
	-e 's|collect_every = 10|collect_every = 5|' \
	monitors/ganglia/magnet.conf >"$MON_DIR/magnet.conf"
if ! grep -q 'value = "8" }' "$MON_DIR/magnet.conf" ||
	! grep -q 'value = "2000ms"' "$MON_DIR/magnet.conf"; then
	mon_fail "the drop-in changed shape: fix this test's sed"
fi
cat >"$MON_DIR/gmond.conf" <<CONF
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
udp_send_channel { host = 127.0.0.1  port = $GPORT  ttl = 1 }
udp_recv_channel { bind = 127.0.0.1  port = $GPORT }
tcp_accept_channel { bind = 127.0.0.1  port = $GPORT }
modules {
  module { name = "load_module"  path = "/usr/lib/x86_64-linux-gnu/ganglia/modload.so" }
}
collection_group {
  collect_every = 1
  time_threshold = 1
  metric { name = "load_one" }
}
include ('$MON_DIR/magnet.conf')
CONF

gmond_xml() { # file: gmond's whole XML
	local fd
	exec {fd}<>"/dev/tcp/127.0.0.1/$GPORT" || return 1
	cat <&"$fd" >"$1"
	exec {fd}>&-
}
gmetad_xml() { # file
	local fd
	exec {fd}<>"/dev/tcp/127.0.0.1/$GM_XML" || return 1
	cat <&"$fd" >"$1"
	exec {fd}>&-
}
# METRIC NAME VAL of one metric in an XML file (as written, escaped).
xml_val() { # file metric
	grep -a -o "<METRIC NAME=\"$2\" VAL=\"[^\"]*\"" "$1" | sed 's/.* VAL="\(.*\)"$/\1/' | head -n 1
}
# The top jobs gmond shows, one a line, sorted.
top_jobs() { # file
	grep -a -o '<METRIC NAME="magnet_top[0-9]*_job" VAL="[^"]*"' "$1" |
		sed 's/.* VAL="\(.*\)"$/\1/' | grep -v '^$' | LC_ALL=C sort || true
}

mon_boot
gmond -f -c "$MON_DIR/gmond.conf" >"$MON_DIR/gmond.log" 2>&1 &
gmond_pid=$!
mon_at_exit "kill $gmond_pid 2>/dev/null; wait $gmond_pid 2>/dev/null"
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
sleep 2
kill -0 $gmond_pid 2>/dev/null || mon_fail "gmond did not start: $(cat "$MON_DIR/gmond.log")"

## The hostile jobs, as mon-workload takes them (%XX), busiest first.
# A level of 250 bytes: \x01 \xff \xc3\xa9 < & > x, 31 times, and "yy".
level=$(printf '%%01%%FF%%C3%%A9<&>x%.0s' {1..31})yy
long=long
for _ in {1..16}; do long+=/$level; done	# 4020 bytes under the root
jobs=('j%01' 'x%FFy' 'caf%C3%A9' '%3C%26%3E%22%27' "$long")
rates=(250 200 150 100 50)
for i in "${!jobs[@]}"; do
	mon_work rate "${jobs[$i]}" "${rates[$i]}" 100 >/dev/null
done
# How the module writes them (docs/ganglia.md); the long one is checked
# against magnetd's own name for it below.
want=$(printf '%s\n' '/j%01' '/x%FFy' '/caf%C3%A9' '/%3C%26%3E%22%27' | LC_ALL=C sort)
mon_log "jobs: /j\\x01 250/s, /x\\xffy 200/s, /café 150/s, /<&>\"' 100/s, /long/... (4020 bytes) 50/s"

# Each of want among the names (one a line).
has_all() { # names want
	local w
	while IFS= read -r w; do
		grep -qxF -- "$w" <<<"$1" || return 1
	done <<<"$2"
}
# Printable ASCII without < > & " ': what gmond and gmetad pass as is.
all_safe() { # names
	! LC_ALL=C grep -q -e '[^ -~]' -e "[<>&\"']" <<<"$1"
}
# "..." and, within 63 bytes in all, the end of the module's form of
# magnetd's name for it (TOTALS's %XX, but for < > & " ', which the
# module escapes too, and the space, which it does not).
long_shown() { # shown magnetd-name
	local mod
	mod=$(sed -e 's/%20/ /g' -e 's/</%3C/g' -e 's/&/%26/g' -e 's/>/%3E/g' \
		-e 's/"/%22/g' -e "s/'/%27/g" <<<"$2")
	[[ -n $1 && -n $2 && ${#1} -le 63 && ${#1} -ge 61 && $1 == ...* && $mod == *"${1:3}" ]]
}

# Until gmond names them all (two collections make a rate).
i=0
while :; do
	gmond_xml "$MON_DIR/gmond.xml"
	got=$(top_jobs "$MON_DIR/gmond.xml")
	has_all "$got" "$want" && grep -q '^\.\.\.' <<<"$got" && break
	i=$((i + 1))
	((i < 60)) || break
	sleep 1
done
printf '%s\n' "$got" | sed 's/^/# gmond: magnet_topN_job /'

## gmond's XML: well-formed and valid, the names as documented.
xml_valid() { # file: its first errors, if any
	xmllint --noout --valid "$1" 2>"$1.err" || { head -n 6 "$1.err" >&2; return 1; }
}
check "xmllint --valid: gmond's XML" xml_valid "$MON_DIR/gmond.xml"
check "gmond names the four short jobs %XX" has_all "$got" "$want"
check "gmond's job names printable ASCII, no markup" all_safe "$got"
magnetd_long=$(mon_totals | awk '$1 == "job" && $3 ~ /^\/long\// { print $3; exit }')
shown=$(grep '^\.\.\.' <<<"$got" || true)
mon_log "the long job: magnetd names it ${magnetd_long:0:40}... (${#magnetd_long} bytes), gmond shows '$shown'"
check "gmond shows the long job as ... and its end (63 bytes at most)" long_shown "$shown" "$magnetd_long"

## gmetad: keeps the node and its metrics, its own XML valid.
i=0
while :; do
	gmetad_xml "$MON_DIR/gmetad.xml" || true
	gtop=$(top_jobs "$MON_DIR/gmetad.xml")
	[[ -n $gtop && $gtop == "$got" ]] && break
	i=$((i + 1))
	((i < 30)) || break
	sleep 1
done
check "xmllint --valid: gmetad's XML" xml_valid "$MON_DIR/gmetad.xml"
check "gmetad has the node" grep -a -q '<HOST NAME=' "$MON_DIR/gmetad.xml"
parsed() { ! grep -A1 'XML_ParseBuffer() error' "$MON_DIR/gmetad.log" >&2; }
check "gmetad parses gmond's XML (no XML_ParseBuffer() error in its log)" parsed
load=$(xml_val "$MON_DIR/gmetad.xml" load_one)
records=$(xml_val "$MON_DIR/gmetad.xml" magnet_records)
mon_log "gmetad: load_one $load, magnet_records $records, top jobs: $(tr '\n' ' ' <<<"$gtop")"
numbers() { [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9]+$ ]]; }
check "gmetad has the node's metrics (load_one, magnet_records)" numbers "$load" "$records"
same() { [[ -n $1 && $1 == "$2" ]]; }
check "gmetad names the same top jobs as gmond" same "$gtop" "$got"

## gmond responsive: load_one's longest gap (its TN, seconds since it
## last came) over a window, magnetd well, stopped, stalled.
longest_gap() { # seconds
	local end=$((SECONDS + $1)) tn max=0
	while ((SECONDS < end)); do
		gmond_xml "$MON_DIR/tn.xml" || continue
		tn=$(grep -a -o '<METRIC NAME="load_one" [^>]*' "$MON_DIR/tn.xml" | grep -o 'TN="[0-9]*"' | tr -dc 0-9)
		[[ -n $tn ]] && ((tn > max)) && max=$tn
		sleep 0.5
	done
	echo "$max"
}
wait_xml() { # metric regex seconds
	local i=0
	while gmond_xml "$MON_DIR/w.xml" && ! [[ $(xml_val "$MON_DIR/w.xml" "$1") =~ $2 ]]; do
		i=$((i + 1))
		((i < $3)) || return 1
		sleep 1
	done
}

well=$(longest_gap 15)
mon_work run stop-magnetd >/dev/null
wait_xml magnet_records '^nan$' 60 || failed+=("magnet_records nan with magnetd stopped")
down=$(longest_gap 30)
mon_work run start-magnetd >/dev/null
wait_xml magnet_up '^1' 60 || failed+=("magnetd found again after a stop")
mon_work run stall-magnetd >/dev/null
wait_xml magnet_records '^nan$' 60 || failed+=("magnet_records nan with magnetd stalled")
stalled=$(longest_gap 30)
mon_work run resume-magnetd >/dev/null
wait_xml magnet_up '^1' 60 || failed+=("magnetd found again after a stall")
mon_log "load_one's longest gap (s): magnetd well $well, stopped $down, stalled $stalled (the timeout: ${TIMEOUT_S} s)"
grep 'magnet_module' "$MON_DIR/gmond.log" | sed 's/^/# gmond: /'
check "load_one on time with magnetd stopped (gap $down s <= $MAX_GAP)" test "$down" -le "$MAX_GAP"
check "load_one on time with magnetd stalled (gap $stalled s <= $MAX_GAP)" test "$stalled" -le "$MAX_GAP"
kill -0 $gmond_pid || failed+=("gmond alive")
kill -0 $gmetad_pid || failed+=("gmetad alive")

((${#failed[@]} == 0)) || mon_fail "${#failed[@]} checks failed: $(printf '%s; ' "${failed[@]}")"
echo "ok - t-ganglia-hostile"
