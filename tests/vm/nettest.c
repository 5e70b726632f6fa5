// SPDX-License-Identifier: GPL-2.0
/*
 * nettest: which job talks to which hosts, checked against the traffic
 * the test makes itself.
 *
 *   nettest jobs      magnetd on its Unix socket (or MDTEST_ADDR, HOST:PORT), the
 *                     module's net-jobs probe set loaded: its AGG net reports
 *   nettest totals HOST:PORT WANT
 *                     the same traffic, then magnetd's TOTALS (since it
 *                     started) and its Prometheus page at HOST:PORT: each
 *                     job's traffic per protocol and per peer host, exact;
 *                     the expectation written to the file WANT
 *   nettest jobs-out WANT FILE
 *                     magnet-jobs -m's output (FILE), of an interval that
 *                     held the traffic: the same counts, and each flow's
 *                     peer job (the servers' for the jobs, the jobs' for
 *                     the servers)
 *
 * Four cgroups under /sys/fs/cgroup: net-srv runs the servers, net-a,
 * net-b and net-c one job each. Every process joins its cgroup before it
 * makes a socket. The servers: TCP on 127.0.0.2:5001 and [::1]:5003 (read
 * to EOF, answer n / 10 + 7 bytes, close), UDP on 127.0.0.3:5002 (answer
 * each datagram with one of half its size) and 127.0.0.4:5004 (a sink).
 * 5001 defers accept (TCP_DEFER_ACCEPT): the client's first data segment,
 * not its bare ACK, completes the handshake, and the new socket takes it
 * straight from the listener's lookup, not through tcp_v4_do_rcv(), as on
 * a LAN that lost the ACK. [::1]:5003 accepts the usual way.
 * The jobs:
 *   a: TCP 100000 bytes to 127.0.0.2:5001; 5 datagrams of 300 bytes to
 *      127.0.0.3:5002 on a connected socket
 *   b: 7 datagrams of 1000 bytes to 127.0.0.3:5002 with sendto() on an
 *      unconnected socket; 3 of 200 bytes to the sink 127.0.0.4:5004
 *   c: TCP over IPv6, 50000 bytes to [::1]:5003; TCP 3000 bytes to
 *      127.0.0.2:5001
 * Each job reports what it sent and received, per exchange, with both
 * ends' addresses; the servers report their TCP ends. From that the test
 * knows every job's bytes per protocol and per peer, both ways, the
 * servers' too (their peers are the jobs' ephemeral ports). TCP bytes are
 * the payload written, each byte once: a slow guest retransmits now and
 * then, and magnetd counts a segment sent twice, seen twice, once (the
 * bytes of the second in its repeated bytes). On lo the receive path runs
 * in the sender's softirq: a record's task is the sender, its socket the
 * receiver's.
 *
 * It reads `AGG net` reports and sums, for these four jobs, the J lines
 * (tx and rx bytes per protocol; UDP packets too) and the P lines (per
 * peer), until the sums equal the expectation, then three more reports
 * must add nothing. Every report must say lost=0, no evictions, nothing
 * dropped or skipped. The peer set of each job must be exactly the
 * expected one, and the J lines' labels the cgroups' paths. unkeyed (a
 * packet whose headers magnetd could not read) is printed, not refused:
 * the guest's own packets may have one now and then, and a packet of the
 * test's that was one would be missing from the exact sums.
 * TOTALS and Prometheus count since magnetd started, and a job's
 * received packets under its own socket's cgroup: on lo the receive path
 * runs in the sender's softirq, so the record's own cgroup is the
 * sender's; the servers' received bytes are the proof. Per peer host (no
 * port) the P rows are summed over protocols and ports.
 *
 * Exit 0 when all of it holds; a failure prints both sides and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>

#define CGROOT		"/sys/fs/cgroup"
#define NJOBS		4	/* srv, a, b, c */
#define MAX_ROWS	64
#define PEER_MAX	64
#define WAIT_SECS	60

static const char *const job_names[NJOBS] = { "net-srv", "net-a", "net-b", "net-c" };
static unsigned int job_ids[NJOBS];	/* the cgroups' ids, low 32 bits */

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("nettest: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* One row of the expectation or of the sums: a J line (peer "") or P line. */
struct row {
	unsigned int job;
	char proto[8];
	char peer[PEER_MAX];
	unsigned long long tx_packets, tx_bytes, rx_packets, rx_bytes;
};

struct table {
	struct row r[MAX_ROWS];
	unsigned int n;
};

static struct row *row_of(struct table *t, unsigned int job, const char *proto,
			  const char *peer)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		if (t->r[i].job == job && !strcmp(t->r[i].proto, proto) &&
		    !strcmp(t->r[i].peer, peer))
			return &t->r[i];
	if (t->n == MAX_ROWS)
		die("more than %d rows", MAX_ROWS);
	memset(&t->r[t->n], 0, sizeof(t->r[0]));
	t->r[t->n].job = job;
	snprintf(t->r[t->n].proto, sizeof(t->r[0].proto), "%s", proto);
	snprintf(t->r[t->n].peer, sizeof(t->r[0].peer), "%s", peer);
	return &t->r[t->n++];
}

static int job_index(unsigned int id)
{
	int i;

	for (i = 0; i < NJOBS; i++)
		if (job_ids[i] == id)
			return i;
	return -1;
}

/* ---- the traffic ---------------------------------------------------------- */

static void join(const char *name)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), CGROOT "/%s/cgroup.procs", name);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		die("join %s: %s", path, strerror(errno));
}

static socklen_t addr_of(const char *host, unsigned int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		return sizeof(*in);
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
		die("bad address %s", host);
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	return sizeof(*in6);
}

/* "A.B.C.D:P" or "[V6]:P", as magnetd writes a peer. */
static void name_of(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
	} else {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(in6->sin6_port));
	}
}

static int bound(int type, const char *host, unsigned int port, int defer_accept)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_of(host, port, &ss);
	int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (defer_accept && setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_accept,
					sizeof(defer_accept))) ||
	    bind(fd, (struct sockaddr *)&ss, sl) ||
	    (type == SOCK_STREAM && listen(fd, 16)))
		die("server socket %s:%u: %s", host, port, strerror(errno));
	return fd;
}

static void write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w <= 0)
			die("write: %s", w ? strerror(errno) : "closed");
		buf += w;
		n -= w;
	}
}

static char filler[1 << 16];

static void report(int out, const char *proto, int fd, const struct sockaddr_storage *dst,
		   socklen_t dl, unsigned long long sent, unsigned long long rcvd,
		   unsigned int dgrams_out, unsigned int dgrams_in);

/*
 * The payload bytes this end of a TCP connection sent, each once: what it
 * wrote, TCP_INFO's bytes_sent less what it retransmitted (on a busy TCG
 * guest a delayed ACK can draw a tail-loss probe or a timeout), which the
 * probes see, on both ends, and magnetd counts as repeated bytes. Checked
 * once the peer has acknowledged everything.
 */
static unsigned long long tcp_sent_bytes(int fd, unsigned long long written)
{
	struct tcp_info ti;
	socklen_t tl;
	int i;

	for (i = 0; i < 1000; i++) {
		tl = sizeof(ti);
		memset(&ti, 0, sizeof(ti));
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl))
			die("TCP_INFO: %s", strerror(errno));
		if (!ti.tcpi_unacked)
			break;
		usleep(10000);
	}
	if (ti.tcpi_unacked)
		die("tcp: %u segments still unacknowledged after 10 s", ti.tcpi_unacked);
	if (ti.tcpi_bytes_sent != written + ti.tcpi_bytes_retrans)
		die("tcp: TCP_INFO says %llu bytes sent, %llu retransmitted, for %llu written",
		    (unsigned long long)ti.tcpi_bytes_sent,
		    (unsigned long long)ti.tcpi_bytes_retrans, written);
	if (ti.tcpi_bytes_retrans)
		printf("  (a tcp end retransmitted %llu bytes: magnet sees them, counts them once)\n",
		       (unsigned long long)ti.tcpi_bytes_retrans);
	return written;
}

/* Read to EOF; answer n / 10 + 7 bytes; report the connection. */
static void serve_tcp(int lfd, int out)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	int fd;
	size_t n = 0, want;
	ssize_t r;

	memset(&peer, 0, sizeof(peer));
	fd = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);

	if (fd < 0)
		die("accept: %s", strerror(errno));
	while ((r = read(fd, filler, sizeof(filler))) > 0)
		n += r;
	if (r < 0)
		die("server read: %s", strerror(errno));
	for (want = n / 10 + 7; want; ) {
		size_t k = want < sizeof(filler) ? want : sizeof(filler);

		write_all(fd, filler, k);
		want -= k;
	}
	if (shutdown(fd, SHUT_WR))
		die("server shutdown: %s", strerror(errno));
	report(out, "tcp", fd, &peer, pl, tcp_sent_bytes(fd, n / 10 + 7), n, 0, 0);
	close(fd);
}

/* The servers, until ctl (a pipe) is closed. */
static void servers(int ready, int ctl, int out)
{
	int fds[4], i;
	struct pollfd p[5];

	join("net-srv");
	fds[0] = bound(SOCK_STREAM, "127.0.0.2", 5001, 30);
	fds[1] = bound(SOCK_STREAM, "::1", 5003, 0);
	fds[2] = bound(SOCK_DGRAM, "127.0.0.3", 5002, 0);
	fds[3] = bound(SOCK_DGRAM, "127.0.0.4", 5004, 0);
	if (write(ready, "r", 1) != 1)
		die("ready: %s", strerror(errno));
	close(ready);
	for (;;) {
		for (i = 0; i < 4; i++)
			p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		p[4] = (struct pollfd){ .fd = ctl, .events = POLLIN };
		if (poll(p, 5, -1) < 0)
			die("poll: %s", strerror(errno));
		if (p[4].revents)
			exit(0);
		for (i = 0; i < 2; i++)
			if (p[i].revents)
				serve_tcp(fds[i], out);
		for (i = 2; i < 4; i++) {
			struct sockaddr_storage from;
			socklen_t fl = sizeof(from);
			ssize_t r;

			if (!p[i].revents)
				continue;
			r = recvfrom(fds[i], filler, sizeof(filler), 0, (struct sockaddr *)&from, &fl);
			if (r < 0)
				die("recvfrom: %s", strerror(errno));
			if (i == 2 && sendto(fds[i], filler, r / 2, 0, (struct sockaddr *)&from, fl) != r / 2)
				die("sendto: %s", strerror(errno));
		}
	}
}

static int cur_job;	/* in a job's process: its index; 0 in the servers' */

/* What a job reports of one exchange, on its result pipe. */
/*
 * The source address the kernel picks for dst: an unconnected socket's
 * own name is the wildcard, its datagrams carry the route's source.
 */
static void route_source(const struct sockaddr_storage *dst, socklen_t dl,
			 struct sockaddr_storage *me)
{
	int fd = socket(dst->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socklen_t ml = sizeof(*me);
	in_port_t port = me->ss_family == AF_INET ? ((struct sockaddr_in *)me)->sin_port :
			 ((struct sockaddr_in6 *)me)->sin6_port;

	if (fd < 0 || connect(fd, (const struct sockaddr *)dst, dl) ||
	    getsockname(fd, (struct sockaddr *)me, &ml))
		die("route source: %s", strerror(errno));
	close(fd);
	if (me->ss_family == AF_INET)
		((struct sockaddr_in *)me)->sin_port = port;
	else
		((struct sockaddr_in6 *)me)->sin6_port = port;
}

static bool wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	return !memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &in6addr_any,
		       sizeof(in6addr_any));
}

static void report(int out, const char *proto, int fd, const struct sockaddr_storage *dst,
		   socklen_t dl, unsigned long long sent, unsigned long long rcvd,
		   unsigned int dgrams_out, unsigned int dgrams_in)
{
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);
	char local[PEER_MAX], peer[PEER_MAX], line[256];
	int n;

	memset(&me, 0, sizeof(me));	/* the analyser cannot see getsockname() fill it */
	if (getsockname(fd, (struct sockaddr *)&me, &ml))
		die("getsockname: %s", strerror(errno));
	if (wildcard(&me))
		route_source(dst, dl, &me);
	name_of(&me, local, sizeof(local));
	name_of(dst, peer, sizeof(peer));
	n = snprintf(line, sizeof(line), "%d %s %s %s %llu %llu %u %u\n", cur_job, proto, local,
		     peer, sent, rcvd, dgrams_out, dgrams_in);
	write_all(out, line, n);
}

static void tcp_exchange(int out, const char *host, unsigned int port, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_of(host, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned long long got = 0;
	size_t left = n;
	ssize_t r;

	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl))
		die("connect %s:%u: %s", host, port, strerror(errno));
	while (left) {
		size_t k = left < sizeof(filler) ? left : sizeof(filler);

		write_all(fd, filler, k);
		left -= k;
	}
	shutdown(fd, SHUT_WR);
	while ((r = read(fd, filler, sizeof(filler))) > 0)
		got += r;
	if (r < 0 || got != n / 10 + 7)
		die("tcp %s:%u: got %llu bytes back, want %zu", host, port, got, n / 10 + 7);
	report(out, "tcp", fd, &ss, sl, tcp_sent_bytes(fd, n), got, 0, 0);
	close(fd);
}

/* count datagrams of size bytes; connected or with sendto(); answers? */
static void udp_exchange(int out, const char *host, unsigned int port, unsigned int count,
			 size_t size, bool connected, bool answered)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_of(host, port, &ss);
	int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = 10 };
	unsigned long long got = 0;
	unsigned int i;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    (connected && connect(fd, (struct sockaddr *)&ss, sl)))
		die("udp socket to %s:%u: %s", host, port, strerror(errno));
	for (i = 0; i < count; i++) {
		ssize_t r = connected ? send(fd, filler, size, 0) :
			    sendto(fd, filler, size, 0, (struct sockaddr *)&ss, sl);

		if (r != (ssize_t)size)
			die("udp send to %s:%u: %s", host, port, strerror(errno));
		if (!answered)
			continue;
		r = recv(fd, filler, sizeof(filler), 0);
		if (r != (ssize_t)size / 2)
			die("udp answer from %s:%u: %zd bytes (%s)", host, port, r,
			    r < 0 ? strerror(errno) : "want half");
		got += r;
	}
	report(out, "udp", fd, &ss, sl, (unsigned long long)count * size, got, count,
	       answered ? count : 0);
	close(fd);
}

static void job(int which, int out)
{
	cur_job = which;
	join(job_names[which]);
	switch (which) {
	case 1:
		tcp_exchange(out, "127.0.0.2", 5001, 100000);
		udp_exchange(out, "127.0.0.3", 5002, 5, 300, true, true);
		break;
	case 2:
		udp_exchange(out, "127.0.0.3", 5002, 7, 1000, false, true);
		udp_exchange(out, "127.0.0.4", 5004, 3, 200, true, false);
		break;
	case 3:
		tcp_exchange(out, "::1", 5003, 50000);
		tcp_exchange(out, "127.0.0.2", 5001, 3000);
		break;
	}
	exit(0);
}

/* One exchange as one end reported it (the servers report their TCP ends). */
struct exchange {
	int which;		/* the reporting job's index, 0 for the servers */
	char proto[8], local[PEER_MAX], peer[PEER_MAX];
	unsigned long long sent, rcvd;	/* sent: written (TCP: each byte once) */
	unsigned int dout, din;
};

#define MAX_EXCHANGES	32

static void add(struct table *want, unsigned int job, const char *proto, const char *peer,
		unsigned long long txb, unsigned long long rxb, unsigned int txp, unsigned int rxp)
{
	int i;

	for (i = 0; i < 2; i++) {	/* the job's J row, then its P row for this peer */
		struct row *r = row_of(want, job, proto, i ? peer : "");

		r->tx_bytes += txb;
		r->rx_bytes += rxb;
		r->tx_packets += txp;
		r->rx_packets += rxp;
	}
}

/*
 * Into the expectation, J rows and P rows. UDP: the job's line gives both
 * ends (each datagram arrives whole, once). TCP: each end's line gives what
 * it sent, which its peer receives; the server's end is matched
 * to its job by the job's address. Packet counts are checked for UDP only:
 * TCP's segmentation is the stack's business.
 */
static void expect(struct table *want, const struct exchange *x, unsigned int n)
{
	unsigned int i, j, srv = job_ids[0];

	printf("traffic made (the ground truth):\n");
	for (i = 0; i < n; i++) {
		const struct exchange *e = &x[i];
		unsigned int job = job_ids[e->which];

		printf("  %s: %s %s -> %s sent %llu received %llu\n", job_names[e->which],
		       e->proto, e->local, e->peer, e->sent, e->rcvd);
		if (!strcmp(e->proto, "udp")) {
			add(want, job, "udp", e->peer, e->sent, e->rcvd, e->dout, e->din);
			add(want, srv, "udp", e->local, e->rcvd, e->sent, e->din, e->dout);
			continue;
		}
		for (j = 0; j < n; j++)
			if (x[j].which != e->which && !strcmp(x[j].proto, "tcp") &&
			    !strcmp(x[j].local, e->peer) && !strcmp(x[j].peer, e->local))
				break;
		if (j == n)
			die("no report from the other end of tcp %s -> %s", e->local, e->peer);
		add(want, job, "tcp", e->peer, e->sent, 0, 0, 0);
		add(want, job_ids[x[j].which], "tcp", e->local, 0, e->sent, 0, 0);
	}
}

static void read_exchanges(FILE *f, struct exchange *x, unsigned int *n)
{
	char line[512];

	for (*n = 0; fgets(line, sizeof(line), f); ++*n) {
		struct exchange *e = &x[*n];

		if (*n == MAX_EXCHANGES)
			die("more than %d exchanges", MAX_EXCHANGES);
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%d %7s %63s %63s %llu %llu %u %u", &e->which, e->proto, e->local,
			   e->peer, &e->sent, &e->rcvd, &e->dout, &e->din) != 8 ||
		    e->which < 0 || e->which >= NJOBS ||
		    (strcmp(e->proto, "tcp") && strcmp(e->proto, "udp")))
			die("bad report line '%s'", line);
	}
}

/* ---- magnetd -------------------------------------------------------------- */

struct conn {
	int fd;
	char buf[1 << 16];
	size_t len;
};

static bool get_line(struct conn *c, char *line, size_t size, int ms)
{
	char *nl;

	while (!(nl = memchr(c->buf, '\n', c->len))) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		ssize_t r;

		if (c->len == sizeof(c->buf))
			die("line too long from magnetd");
		if (poll(&p, 1, ms) <= 0)
			return false;
		r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r <= 0)
			die("magnetd closed the connection");
		c->len += r;
	}
	*nl = 0;
	if ((size_t)(nl - c->buf) >= size)
		die("line longer than %zu bytes from magnetd", size);
	memcpy(line, c->buf, nl - c->buf + 1);
	c->len -= nl + 1 - c->buf;
	memmove(c->buf, nl + 1, c->len);
	return true;
}

static void md_open(struct conn *c)
{
	const char *addr = getenv("MDTEST_ADDR");
	char host[64] = "127.0.0.1";
	struct sockaddr_storage ss;
	unsigned int port = 8650;
	socklen_t sl;

	c->len = 0;
	if (!addr) {
		/* As root on the Unix socket: every record (docs/security.md). */
		struct sockaddr_un sun = { .sun_family = AF_UNIX,
					   .sun_path = "/run/magnet/magnetd.sock" };

		c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)))
			die("connect to magnetd at %s: %s", sun.sun_path, strerror(errno));
	} else {
		if (sscanf(addr, "%63[^:]:%u", host, &port) != 2)
			die("MDTEST_ADDR: want HOST:PORT, not '%s'", addr);
		sl = addr_of(host, port, &ss);
		c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&ss, sl))
			die("connect to magnetd at %s:%u: %s", host, port, strerror(errno));
	}
}

static void md_connect(struct conn *c)
{
	char line[512];

	md_open(c);
	write_all(c->fd, "AGG net EVERY 250ms\n", 20);
	if (!get_line(c, line, sizeof(line), 5000) || strncmp(line, "OK agg key=net ", 15))
		die("AGG net: '%s'", line);
}

static unsigned long long field(const char *hdr, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), " %s=", key);
	p = strstr(hdr, k);
	if (!p)
		die("report without %s: %s", key, hdr);
	return strtoull(p + strlen(k), NULL, 10);
}

/* One report into the sums (our jobs only); false if none came in time. */
/* Bytes counted under job 0, no socket known: a kernel without socket cgroups puts all there. */
static unsigned long long no_job_bytes;
static unsigned long long unkeyed;	/* skb records magnetd could not read, all reports */

static bool read_report(struct conn *c, struct table *got, char labels[NJOBS][128])
{
	static const char *const zero[] = { "lost", "evicted_jobs", "evicted_peers", "dropped",
					    "skipped" };
	char hdr[1024], line[512], proto[8], peer[PEER_MAX], label[128];
	unsigned long long v[4];
	unsigned int n, i, job;
	struct row *r;
	size_t k;

	if (!get_line(c, hdr, sizeof(hdr), 2000))
		return false;
	if (sscanf(hdr, "A net %u ", &n) != 1)
		die("not an AGG net report: '%s'", hdr);
	for (k = 0; k < sizeof(zero) / sizeof(zero[0]); k++)
		if (field(hdr, zero[k]))
			die("report with %s != 0: %s", zero[k], hdr);
	unkeyed += field(hdr, "unkeyed");
	for (i = 0; i < n; i++) {
		if (!get_line(c, line, sizeof(line), 2000))
			die("report cut short: %s", hdr);
		if (sscanf(line, "J %u %7s %llu %llu %llu %llu %127s", &job, proto, &v[0], &v[1],
			   &v[2], &v[3], label) == 7) {
			peer[0] = 0;
			if (job_index(job) >= 0)
				snprintf(labels[job_index(job)], 128, "%s", label);
		} else if (sscanf(line, "P %u %7s %63s %llu %llu %llu %llu", &job, proto, peer,
				  &v[0], &v[1], &v[2], &v[3]) != 7) {
			die("bad report line '%s'", line);
		}
		if (!job && !peer[0])
			no_job_bytes += v[1] + v[3];
		if (job_index(job) < 0)
			continue;
		r = row_of(got, job, proto, peer);
		r->tx_packets += v[0];
		r->tx_bytes += v[1];
		r->rx_packets += v[2];
		r->rx_bytes += v[3];
	}
	return true;
}

/* Do the sums equal the expectation? TCP packet counts are not compared. */
static bool same(const struct table *want, const struct table *got, bool print)
{
	bool ok = want->n == got->n;
	unsigned int i, j;

	for (i = 0; i < want->n; i++) {
		const struct row *w = &want->r[i], *g = NULL;
		bool udp = !strcmp(w->proto, "udp");

		for (j = 0; j < got->n; j++)
			if (got->r[j].job == w->job && !strcmp(got->r[j].proto, w->proto) &&
			    !strcmp(got->r[j].peer, w->peer))
				g = &got->r[j];
		if (g && g->tx_bytes == w->tx_bytes && g->rx_bytes == w->rx_bytes &&
		    (!udp || (g->tx_packets == w->tx_packets && g->rx_packets == w->rx_packets)))
			continue;
		ok = false;
		if (print)
			printf("  want %s %s %s: tx %llu B %llu pkts, rx %llu B %llu pkts; got %s\n",
			       job_names[job_index(w->job)], w->proto, w->peer[0] ? w->peer : "(job)",
			       w->tx_bytes, w->tx_packets, w->rx_bytes, w->rx_packets,
			       g ? "other counts" : "nothing");
	}
	for (j = 0; print && j < got->n; j++)
		printf("  got %s %s %s: tx %llu B %llu pkts, rx %llu B %llu pkts\n",
		       job_names[job_index(got->r[j].job)], got->r[j].proto,
		       got->r[j].peer[0] ? got->r[j].peer : "(job)", got->r[j].tx_bytes,
		       got->r[j].tx_packets, got->r[j].rx_bytes, got->r[j].rx_packets);
	return ok;
}

/* The jobs' cgroups, made if need be: job_ids. */
static void make_cgroups(void)
{
	char path[256];
	struct stat st;
	int i;

	for (i = 0; i < NJOBS; i++) {
		snprintf(path, sizeof(path), CGROOT "/%s", job_names[i]);
		if ((mkdir(path, 0755) && errno != EEXIST) || stat(path, &st))
			die("cgroup %s: %s", path, strerror(errno));
		job_ids[i] = (unsigned int)st.st_ino;
	}
}

/* The servers and the three jobs, to their end: the expectation. */
static void traffic(struct table *want)
{
	static struct exchange x[MAX_EXCHANGES];
	unsigned int nx;
	char buf[4096];
	int ready[2], ctl[2], res[2], i, status;
	pid_t srv, kids[NJOBS];
	FILE *f;

	if (pipe(ready) || pipe(ctl) || pipe(res))
		die("pipe: %s", strerror(errno));
	srv = fork();
	if (srv < 0)
		die("fork: %s", strerror(errno));
	if (!srv) {
		close(ready[0]);
		close(ctl[1]);
		close(res[0]);
		servers(ready[1], ctl[0], res[1]);
	}
	close(ready[1]);
	close(ctl[0]);
	if (read(ready[0], buf, 1) != 1)
		die("the servers did not start");
	for (i = 1; i < NJOBS; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			die("fork: %s", strerror(errno));
		if (!kids[i]) {
			close(res[0]);
			job(i, res[1]);
		}
	}
	close(res[1]);
	for (i = 1; i < NJOBS; i++)
		if (waitpid(kids[i], &status, 0) != kids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			die("job %s failed", job_names[i]);
	close(ctl[1]);
	if (waitpid(srv, &status, 0) != srv || !WIFEXITED(status) || WEXITSTATUS(status))
		die("the servers failed");

	/* The jobs' reports: one line per exchange, tagged by the job. */
	f = fdopen(res[0], "r");
	if (!f)
		die("fdopen: %s", strerror(errno));
	read_exchanges(f, x, &nx);
	fclose(f);
	expect(want, x, nx);
}

static void run_jobs(void)
{
	static struct table want, got;
	char labels[NJOBS][128] = { "", "", "", "" }, path[256];
	struct conn *c = malloc(sizeof(*c));
	time_t end;
	int i;

	if (!c)
		die("out of memory");
	make_cgroups();
	md_connect(c);
	traffic(&want);

	end = time(NULL) + WAIT_SECS;
	while (!same(&want, &got, false)) {
		if (time(NULL) > end) {
			printf("after %d s the reports still differ:\n", WAIT_SECS);
			same(&want, &got, true);
			if (!got.n && no_job_bytes)
				printf("  all %llu bytes were under job 0: has this kernel CONFIG_SOCK_CGROUP_DATA (CONFIG_CGROUP_BPF)?\n",
				       no_job_bytes);
			die("traffic per job and peer: not exact");
		}
		read_report(c, &got, labels);
	}
	for (i = 0; i < 3; i++)
		if (!read_report(c, &got, labels))
			die("no report after the traffic was counted");
	if (!same(&want, &got, true))
		die("later reports counted more than the test sent");
	for (i = 0; i < NJOBS; i++) {
		snprintf(path, sizeof(path), "/%s", job_names[i]);
		if (strcmp(labels[i], path))
			die("job %u labelled '%s', want '%s'", job_ids[i], labels[i], path);
	}
	printf("4 jobs, %u rows (per protocol and per peer, both ways): every byte and peer exact, nothing more in 3 later reports; %llu unkeyed\n",
	       want.n, unkeyed);
	free(c);
}

/* ---- totals, Prometheus, magnet-jobs -------------------------------------- */

/* "127.0.0.2:5001" -> "127.0.0.2", "[::1]:5003" -> "::1". */
static void host_of(const char *end, char *buf, size_t size)
{
	const char *colon = strrchr(end, ':');

	if (end[0] == '[')
		snprintf(buf, size, "%.*s", (int)(strchr(end, ']') - end - 1), end + 1);
	else
		snprintf(buf, size, "%.*s", (int)(colon - end), end);
}

/*
 * The expectation as the totals have it: the J rows (protocol, peer ""),
 * and per job and peer host (protocol "*") the P rows' sums.
 */
static void by_host(const struct table *want, struct table *hosts)
{
	unsigned int i;

	memset(hosts, 0, sizeof(*hosts));
	for (i = 0; i < want->n; i++) {
		const struct row *w = &want->r[i];
		char host[PEER_MAX];
		struct row *r;

		if (!w->peer[0]) {
			*row_of(hosts, w->job, w->proto, "") = *w;
			continue;
		}
		host_of(w->peer, host, sizeof(host));
		r = row_of(hosts, w->job, "*", host);
		r->tx_packets += w->tx_packets;
		r->tx_bytes += w->tx_bytes;
		r->rx_packets += w->rx_packets;
		r->rx_bytes += w->rx_bytes;
	}
}

/* Rows equal, both ways: bytes always, packets of UDP protocol rows. */
static bool same_rows(const struct table *want, const struct table *got, const char *what,
		      bool print)
{
	bool ok = want->n == got->n;
	unsigned int i, j;

	for (i = 0; i < want->n; i++) {
		const struct row *w = &want->r[i], *g = NULL;
		bool udp = !strcmp(w->proto, "udp");

		for (j = 0; j < got->n; j++)
			if (got->r[j].job == w->job && !strcmp(got->r[j].proto, w->proto) &&
			    !strcmp(got->r[j].peer, w->peer))
				g = &got->r[j];
		if (g && g->tx_bytes == w->tx_bytes && g->rx_bytes == w->rx_bytes &&
		    (!udp || (g->tx_packets == w->tx_packets && g->rx_packets == w->rx_packets)))
			continue;
		ok = false;
		if (print)
			printf("  %s: want %s %s %s: tx %llu B %llu pkts, rx %llu B %llu pkts; got %s\n",
			       what, job_names[job_index(w->job)], w->proto,
			       w->peer[0] ? w->peer : "(job)", w->tx_bytes, w->tx_packets,
			       w->rx_bytes, w->rx_packets, g ? "other counts" : "nothing");
	}
	for (j = 0; print && j < got->n; j++)
		printf("  %s: got %s %s %s: tx %llu B %llu pkts, rx %llu B %llu pkts\n", what,
		       job_names[job_index(got->r[j].job)], got->r[j].proto,
		       got->r[j].peer[0] ? got->r[j].peer : "(job)", got->r[j].tx_bytes,
		       got->r[j].tx_packets, got->r[j].rx_bytes, got->r[j].rx_packets);
	return ok;
}

static unsigned long long kv(const char *line, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), " %s=", key);
	p = strstr(line, k);
	if (!p)
		die("no %s in '%s'", key, line);
	return strtoull(p + strlen(k), NULL, 10);
}

/*
 * TOTALS' net and peer lines of our jobs into got (net lines by protocol,
 * peer lines by host, protocol "*"); "other" peers must be 0, with no
 * eviction.
 */
static void read_totals(struct table *got)
{
	struct conn *c = malloc(sizeof(*c));
	char line[1024], kind[8], name[PEER_MAX];
	unsigned int n, i, job;

	if (!c)
		die("out of memory");
	memset(got, 0, sizeof(*got));
	md_open(c);
	write_all(c->fd, "TOTALS\n", 7);
	if (!get_line(c, line, sizeof(line), 5000) || sscanf(line, "OK %u totals ", &n) != 1)
		die("TOTALS: '%s'", line);
	for (i = 0; i < n; i++) {
		struct row *r;

		if (!get_line(c, line, sizeof(line), 5000))
			die("TOTALS cut short");
		if (sscanf(line, "%7s %u %63s ", kind, &job, name) != 3 || job_index(job) < 0 ||
		    (strcmp(kind, "net") && strcmp(kind, "peer")))
			continue;
		if (!strcmp(kind, "peer") && !strcmp(name, "other")) {
			if (kv(line, "tx_bytes") || kv(line, "rx_bytes") || kv(line, "evictions"))
				die("a job's other peer is not 0: %s", line);
			continue;
		}
		r = !strcmp(kind, "net") ? row_of(got, job, name, "") : row_of(got, job, "*", name);
		r->tx_packets = kv(line, "tx_packets");
		r->tx_bytes = kv(line, "tx_bytes");
		r->rx_packets = kv(line, "rx_packets");
		r->rx_bytes = kv(line, "rx_bytes");
	}
	close(c->fd);
	free(c);
}

/* The metrics page at HOST:PORT, its body, malloc'd. */
static char *scrape(const char *where)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	char host[64], *buf = malloc(1 << 20), *body;
	struct sockaddr_storage ss;
	unsigned int port;
	size_t len = 0;
	socklen_t sl;
	ssize_t r;
	int fd;

	if (!buf || sscanf(where, "%63[^:]:%u", host, &port) != 2)
		die("Prometheus: want HOST:PORT, not '%s'", where);
	sl = addr_of(host, port, &ss);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl))
		die("connect to %s: %s", where, strerror(errno));
	write_all(fd, req, sizeof(req) - 1);
	while ((r = read(fd, buf + len, (1 << 20) - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = 0;
	body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.1 200 ", 13) || !body)
		die("Prometheus answered '%.60s'", buf);
	memmove(buf, body + 4, strlen(body + 4) + 1);
	return buf;
}

/* One sample's value; -1 (all ones) when the page has no such series. */
static unsigned long long sample(const char *page, const char *series)
{
	const char *p = page;
	size_t n = strlen(series);

	while ((p = strstr(p, series)))
		if ((p == page || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
		else
			p++;
	return ~0ULL;
}

/* The page's series of our jobs, as the rows want them: exact. */
static bool same_prom(const struct table *hosts, const char *page, bool print)
{
	static const char *const dirs[2] = { "tx", "rx" };
	bool ok = true;
	unsigned int i, d;
	char series[256];

	for (i = 0; i < hosts->n; i++) {
		const struct row *w = &hosts->r[i];
		bool peer = !strcmp(w->proto, "*");

		for (d = 0; d < 2; d++) {
			unsigned long long want = d ? w->rx_bytes : w->tx_bytes, got;

			snprintf(series, sizeof(series), "%s{cgroup=\"/%s\",%s=\"%s\",direction=\"%s\"}",
				 peer ? "magnet_job_peer_bytes_total" : "magnet_job_net_bytes_total",
				 job_names[job_index(w->job)], peer ? "peer" : "proto",
				 peer ? w->peer : w->proto, dirs[d]);
			got = sample(page, series);
			if (got == want)
				continue;
			ok = false;
			if (print)
				printf("  Prometheus: %s %lld, want %llu\n", series,
				       got == ~0ULL ? -1LL : (long long)got, want);
		}
	}
	return ok;
}

static void write_want(const char *path, const struct table *want)
{
	FILE *f = fopen(path, "w");
	unsigned int i;

	if (!f)
		die("%s: %s", path, strerror(errno));
	for (i = 0; i < NJOBS; i++)
		fprintf(f, "job %u %s\n", job_ids[i], job_names[i]);
	for (i = 0; i < want->n; i++)
		fprintf(f, "row %u %s %s %llu %llu %llu %llu\n", want->r[i].job,
			want->r[i].proto, want->r[i].peer[0] ? want->r[i].peer : "-",
			want->r[i].tx_packets, want->r[i].tx_bytes, want->r[i].rx_packets,
			want->r[i].rx_bytes);
	if (fclose(f))
		die("%s: %s", path, strerror(errno));
}

static void read_want(const char *path, struct table *want)
{
	FILE *f = fopen(path, "r");
	char line[256], name[32];
	unsigned int i = 0, id;
	struct row r;

	if (!f)
		die("%s: %s", path, strerror(errno));
	memset(want, 0, sizeof(*want));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "job %u %31s", &id, name) == 2 && i < NJOBS &&
		    !strcmp(name, job_names[i])) {
			job_ids[i++] = id;
			continue;
		}
		memset(&r, 0, sizeof(r));
		if (sscanf(line, "row %u %7s %63s %llu %llu %llu %llu", &r.job, r.proto, r.peer,
			   &r.tx_packets, &r.tx_bytes, &r.rx_packets, &r.rx_bytes) != 7)
			die("%s: bad line '%s'", path, line);
		if (!strcmp(r.peer, "-"))
			r.peer[0] = 0;
		*row_of(want, r.job, r.proto, r.peer) = r;
	}
	fclose(f);
	if (i != NJOBS)
		die("%s: not the jobs' ids", path);
}

static void run_totals(const char *prom, const char *want_path)
{
	static struct table want, hosts, got;
	time_t end;
	char *page;

	make_cgroups();
	traffic(&want);
	write_want(want_path, &want);
	by_host(&want, &hosts);
	end = time(NULL) + WAIT_SECS;
	for (;;) {
		read_totals(&got);
		if (same_rows(&hosts, &got, "TOTALS", false))
			break;
		if (time(NULL) > end) {
			printf("after %d s TOTALS still differ:\n", WAIT_SECS);
			same_rows(&hosts, &got, "TOTALS", true);
			die("TOTALS: traffic per job, protocol and peer host: not exact");
		}
		usleep(250000);
	}
	/* The monitors' view of the same moment, a second at most later. */
	page = scrape(prom);
	if (!same_prom(&hosts, page, false)) {
		usleep(1100000);
		free(page);
		page = scrape(prom);
		if (!same_prom(&hosts, page, true))
			die("Prometheus: traffic per job, protocol and peer host: not exact");
	}
	free(page);
	printf("TOTALS and Prometheus: 4 jobs, %u rows (per protocol, per peer host; both ways), every byte exact, received bytes under the receiving socket's job\n",
	       hosts.n);
}

/*
 * magnet-jobs -m's lines of our jobs: its net lines the J rows; each
 * client's peer jobs the servers' /net-srv, the servers' all three
 * clients (each flow matched to its other end on this node).
 */
static void run_jobs_out(const char *want_path, const char *out_path)
{
	static struct table want, hosts, got;
	char line[2048], kind[8], job[64], node[128], name[PEER_MAX], pnode[128], pjobs[1024];
	bool peers_of[NJOBS][NJOBS] = { { false } };
	unsigned long long v[4];
	unsigned int i, k;
	FILE *f;

	read_want(want_path, &want);
	by_host(&want, &hosts);
	memset(&got, 0, sizeof(got));
	f = fopen(out_path, "r");
	if (!f)
		die("%s: %s", out_path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		int j = -1;

		if (sscanf(line, "%7s\t%63s\t", kind, job) != 2)
			continue;
		for (i = 0; i < NJOBS; i++)
			if (job[0] == '/' && !strcmp(job + 1, job_names[i]))
				j = i;
		if (j < 0)
			continue;
		if (!strcmp(kind, "net") &&
		    sscanf(line, "net\t%*s\t%127s\t%63s\t%llu\t%llu\t%llu\t%llu", node, name,
			   &v[0], &v[1], &v[2], &v[3]) == 6) {
			struct row *r = row_of(&got, job_ids[j], name, "");

			r->tx_packets = v[0], r->tx_bytes = v[1], r->rx_packets = v[2], r->rx_bytes = v[3];
		} else if (!strcmp(kind, "peer") &&
			   sscanf(line, "peer\t%*s\t%127s\t%63s\t%127s\t%llu\t%llu\t%llu\t%llu\t%1023s",
				  node, name, pnode, &v[0], &v[1], &v[2], &v[3], pjobs) == 8) {
			for (k = 0; k < NJOBS; k++) {
				char want_job[160];

				snprintf(want_job, sizeof(want_job), "%s:/%s", node, job_names[k]);
				if (strstr(pjobs, want_job))
					peers_of[j][k] = true;
			}
		}
	}
	fclose(f);
	/* Its net lines are TOTALS': the J rows alone. */
	for (i = k = 0; i < hosts.n; i++)
		if (strcmp(hosts.r[i].proto, "*"))
			want.r[k++] = hosts.r[i];
	want.n = k;
	if (!same_rows(&want, &got, "magnet-jobs", false)) {
		same_rows(&want, &got, "magnet-jobs", true);
		die("magnet-jobs: traffic per job and protocol: not exact");
	}
	for (i = 1; i < NJOBS; i++)
		if (!peers_of[i][0] || !peers_of[0][i])
			die("magnet-jobs: %s and net-srv are not each other's peer jobs (%s: %d, net-srv: %d)",
			    job_names[i], job_names[i], peers_of[i][0], peers_of[0][i]);
	for (i = 1; i < NJOBS; i++)
		for (k = 1; k < NJOBS; k++)
			if (peers_of[i][k])
				die("magnet-jobs: %s named %s its peer job: they never talked",
				    job_names[i], job_names[k]);
	printf("magnet-jobs: 4 jobs' bytes per protocol exact; net-a, net-b, net-c and net-srv each other's peer jobs by their flows, no other pair\n");
}

int main(int argc, char **argv)
{
	memset(filler, 'm', sizeof(filler));
	signal(SIGPIPE, SIG_IGN);
	if (argc == 2 && !strcmp(argv[1], "jobs")) {
		run_jobs();
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "totals")) {
		run_totals(argv[2], argv[3]);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "jobs-out")) {
		run_jobs_out(argv[2], argv[3]);
		return 0;
	}
	fprintf(stderr, "usage: nettest jobs | totals HOST:PORT WANT | jobs-out WANT FILE\n");
	return 2;
}
