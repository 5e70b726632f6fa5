#!/bin/sh
# The sock handler on timewait and request socks: the kernel hands them to
# functions whose first argument is a struct sock *, but they are only a
# struct sock_common and a little more. The record takes what sock_common
# holds (state, local port skc_num, remote port, addresses) and protocol 0;
# nothing past the object (sk_protocol, inet_sport lie there).
#
# twtest (tests/vm/twtest.c) makes TCP connections with known ends, IPv4
# 127.0.35.1:7351.. -> 127.0.35.2:7350 and IPv6 [::1]:7361.. -> [::1]:7360;
# each client closes first and becomes a timewait sock, then alternately
# the server writes (the timewait sock answers with a reset and is killed)
# or closes (the timewait sock ACKs the FIN). Request socks: each SYN.
#   state 12 (NEW_SYN_RECV): inet_ehash_insert (hashing the request),
#     sock_gen_put (the SYN-ACK's skb freed: sock_edemux)
#   state 6 (TIME_WAIT): tcp_v4_send_reset, tcp_v6_send_reset (rst),
#     tcp_v4_send_ack (fin), tcp_v6_send_response (both), and
#     tcp_twsk_destructor (rst: the kill)
# plus inet_ehash_insert of the server's full socket (SYN_RECV, tcp).
# Every record of these connections must match the ground truth: the
# local end's address and port, the remote end's, the state, protocol 0
# for states 6 and 12 and tcp otherwise; and every function above must
# have recorded each connection it was called for.
. ./lib.sh
N=6	# connections per family: 3 rst, 3 fin

load buf_size=1048576
# Exported and called through pointers or from several places: always
# probeable. The static ones may be inlined on another build of 6.1.
probes=
add() { # kprobe|fentry function required
	if magnet-ctl probe add "$1" "$2" handler sock >/dev/null 2>/tmp/err; then
		probes="$probes $2"
	elif [ "$3" = required ]; then
		fail "probe add $1 $2 handler sock: $(cat /tmp/err)"
	else
		echo "not probed: $2: $(cat /tmp/err)"
	fi
}
add kprobe inet_ehash_insert required
add fentry sock_gen_put required
add fentry tcp_twsk_destructor required
for f in tcp_v4_send_reset tcp_v4_send_ack tcp_v6_send_reset tcp_v6_send_response; do
	add kprobe $f optional
done

magnet-read -o /tmp/tw.mgt 2>/tmp/read.err &
rpid=$!
written /tmp/tw.mgt /tmp/read.err "magnet-read wrote no header"
twtest 127.0.35.1 7351 127.0.35.2 7350 $N >/tmp/tw.conns || fail "twtest IPv4"
twtest ::1 7361 ::1 7360 $N >>/tmp/tw.conns || fail "twtest IPv6"
rings_empty "magnet-read left records in the rings"
kill -INT $rpid
wait $rpid || fail "magnet-read: $(cat /tmp/read.err)"
magnet-dump -j /tmp/tw.mgt >/tmp/tw.json || fail "magnet-dump -j"
unload

# The connections (twtest's lines: MODE CLIENT CPORT SERVER PORT T0 T1)
# against the records. A record is of the test when its addresses are the
# test's and its remote port the server's (the client's timewait sock) or
# a client's (the server's request sock and socket): addresses, remote
# port and state are sock_common's, in old and new code alike. Its time
# says which connection it belongs to (twtest makes them one after the
# other), hence which local port is the truth; and the protocol must be 0
# in states 6 and 12, tcp otherwise.
awk -v conns=/tmp/tw.conns -v probes=" $probes " -v nwant=$N '
function val(k) {
	if (!match($0, "\"" k "\":(\"[^\"]*\"|[^,}]*)"))
		return ""
	s = substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3)
	gsub(/"/, "", s)
	return s
}
function want(fam, fn, port, state) {
	if (index(probes, " " fn " "))
		need[fam SUBSEP fn SUBSEP port SUBSEP state] = 0
}
function bad(why) {
	print "bad record (" why "): " $0
	nbad++
}
BEGIN {
	while ((getline line < conns) > 0) {
		split(line, f, " ")
		fam = index(f[2], ":") ? "inet6" : "inet"
		v = fam == "inet" ? "v4" : "v6"
		c = ++nc
		cfam[c] = fam; cport[c] = f[3]; t0[c] = f[6] + 0; t1[c] = f[7] + 0
		client[fam SUBSEP f[3]] = 1
		caddr[fam] = f[2]; saddr[fam] = f[4]; sport[fam] = f[5]
		nconn[fam]++
		want(fam, "inet_ehash_insert", f[3], 12)
		want(fam, "inet_ehash_insert", f[3], 3)
		want(fam, "sock_gen_put", f[3], 12)
		if (f[1] == "rst") {
			want(fam, "tcp_" v "_send_reset", f[3], 6)
			want(fam, "tcp_twsk_destructor", f[3], 6)
		}
		if (v == "v6")
			want(fam, "tcp_v6_send_response", f[3], 6)
		else if (f[1] == "fin")
			want(fam, "tcp_v4_send_ack", f[3], 6)
	}
	if (nconn["inet"] != nwant || nconn["inet6"] != nwant) {
		print "twtest reported " nconn["inet"] + 0 "+" nconn["inet6"] + 0 " connections, want " nwant "+" nwant
		nbad++
	}
}
!/"sock":/ { next }
/"sock":\{"family":null/ { nnull[val("event")]++; next }
{
	fn = val("event"); fam = val("family"); proto = val("proto")
	src = val("src"); sp = val("sport"); dst = val("dst"); dp = val("dport")
	state = val("state") + 0; ts = val("ts") + 0
	if (!(fam in caddr) || !(src == caddr[fam] && dst == saddr[fam] || src == saddr[fam] && dst == caddr[fam]) ||
	    dp != sport[fam] && !((fam SUBSEP dp) in client)) {
		nforeign++
		print "not of the test: " $0
		if ((state == 6 || state == 12) && proto != "ipproto0")
			bad("state " state ": protocol " proto ", want 0")
		next
	}
	for (c = 1; c <= nc; c++)
		if (cfam[c] == fam && t0[c] <= ts && ts <= t1[c])
			break
	if (c > nc)
		{ bad("outside every connection of the test"); next }
	port = cport[c]
	if (dp == sport[fam]) {
		# The client end: only its timewait sock is handed to these.
		if (src != caddr[fam] || sp != port)
			{ bad("client end " src ":" sp ", want " caddr[fam] ":" port); next }
		if (state != 6)
			{ bad("client end in state " state ", want 6"); next }
	} else {
		# The server end: its request sock and the accepted socket.
		if (dp != port)
			{ bad("the server end of port " dp " in the time of port " port); next }
		if (src != saddr[fam] || sp != sport[fam])
			{ bad("server end " src ":" sp ", want " saddr[fam] ":" sport[fam]); next }
		if (state != 12 && state != 3)
			{ bad("server end in state " state ", want 12 or 3"); next }
	}
	if ((state == 6 || state == 12) && proto != "ipproto0")
		{ bad("state " state ": protocol " proto ", want 0"); next }
	if (state != 6 && state != 12 && proto != "tcp")
		{ bad("state " state ": protocol " proto ", want tcp"); next }
	if (!((fam SUBSEP fn SUBSEP port SUBSEP state) in need))
		{ bad("no " fn " call in state " state " expected for port " port); next }
	need[fam SUBSEP fn SUBSEP port SUBSEP state]++
	n[state]++
	seen[fn "/" state]++
}
END {
	for (k in need)
		if (!need[k]) {
			split(k, f, SUBSEP)
			print "missing: " f[2] " of " f[1] " port " f[3] " in state " f[4]
			nbad++
		}
	for (k in nnull)
		print "family null: " nnull[k] " records of " k
	for (k in seen)
		print "recorded: " k ": " seen[k]
	print "state 6: " n[6] + 0 ", state 12: " n[12] + 0 ", state 3: " n[3] + 0 \
	    " records of the test, " nforeign + 0 " of other sockets, " nbad + 0 " bad"
	if (!n[6] || !n[12])
		nbad++
	exit nbad ? 1 : 0
}' /tmp/tw.json || fail "sock records of timewait and request socks disagree with the connections"
echo "sock-tw: timewait and request socks recorded from sock_common, $N connections per family"
