// SPDX-License-Identifier: GPL-2.0
/*
 * twtest: TCP timewait and request socks with known addresses and ports,
 * each handed by the kernel to functions whose first argument is a
 * struct sock * (tests/vm/t-35-sock-tw.sh).
 *
 *   twtest CLIENT BASEPORT SERVER PORT N
 *
 * A listener on SERVER:PORT; N connections, the i-th from CLIENT:BASEPORT+i
 * (bound before connect), i from 0. Each SYN makes a request sock
 * (TCP_NEW_SYN_RECV) at the listener, hashed by inet_ehash_insert(). The
 * client closes first (shutdown, then close once its FIN is ACKed): once
 * the server has read the EOF, the client end
 * becomes a timewait sock in its FIN_WAIT2 substate, /proc/net/tcp shows
 * it (timer 3). Then, by the parity of i:
 *   even, "rst": the server writes a byte; new data after a half-close
 *     make the timewait sock answer with a reset, tcp_v4_send_reset() or
 *     tcp_v6_send_reset() with the timewait sock, and it is killed
 *     (inet_twsk_deschedule_put(): tcp_twsk_destructor()). Done when the
 *     server's end is CLOSE and the timewait sock left /proc/net/tcp.
 *   odd, "fin": the server closes too; its FIN moves the timewait sock to
 *     its TIME_WAIT substate and it ACKs it (tcp_v4_timewait_ack(),
 *     tcp_v4_send_ack(); tcp_v6_... for IPv6). Done when /proc/net/tcp
 *     shows it in TIME_WAIT (06) and the server's end left the table (the
 *     ACK reached it). It stays there for TCP_TIMEWAIT_LEN (60 s).
 * CLIENT and SERVER are IPv4 or IPv6 addresses, of one family. Prints one
 * line per connection once it is done:
 *   MODE CLIENT CPORT SERVER PORT T0 T1
 * T0 and T1: CLOCK_MONOTONIC in ns (magnet's mono trace clock) before its
 * first socket call and once it is done: every call on its socks is in
 * between.
 * Exit 0 when all of it happened; else a message and exit 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS		5000
#define TIMER_TW	3	/* /proc/net/tcp's "tr" of a timewait sock */

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fputs("twtest: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

struct end {
	struct sockaddr_storage ss;
	socklen_t len;
	int family;
	uint32_t words[4];	/* the address as /proc/net/tcp* prints it */
	unsigned int port;
};

static void parse_end(struct end *e, const char *ip, unsigned long port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&e->ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&e->ss;

	memset(e, 0, sizeof(*e));
	if (port < 1 || port > 65535)
		die("bad port %lu", port);
	e->port = port;
	if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
		in->sin_family = e->family = AF_INET;
		in->sin_port = htons(port);
		e->len = sizeof(*in);
		memcpy(e->words, &in->sin_addr, 4);
	} else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
		in6->sin6_family = e->family = AF_INET6;
		in6->sin6_port = htons(port);
		e->len = sizeof(*in6);
		memcpy(e->words, &in6->sin6_addr, 16);
	} else {
		errno = 0;
		die("bad address '%s'", ip);
	}
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno)
		die("bad number '%s'", s);
	return v;
}

static void timeouts(int fd)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("setsockopt");
}

/*
 * The line of /proc/net/tcp (tcp6) whose local and remote ends are these:
 * its state and timer into *st and *tr; false when there is none.
 */
static bool proc_find(const struct end *local, const struct end *remote, int *st, int *tr)
{
	const char *path = local->family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6";
	int words = local->family == AF_INET ? 1 : 4;
	char line[512];
	bool found = false;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		die("%s", path);
	if (!fgets(line, sizeof(line), f))	/* the header */
		die("%s: empty", path);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned int a[2][4], port[2], s, t;
		const char *p = strchr(line, ':');
		int e, w, n;

		if (!p)
			continue;
		p++;
		for (e = 0; e < 2; e++) {
			for (w = 0; w < words; w++) {
				if (sscanf(p, " %8X%n", &a[e][w], &n) != 1)
					goto next;
				p += n;
			}
			if (sscanf(p, ":%4X%n", &port[e], &n) != 1)
				goto next;
			p += n;
		}
		if (sscanf(p, " %2X %*8X:%*8X %2X:", &s, &t) != 2)
			continue;
		if (port[0] != local->port || port[1] != remote->port)
			continue;
		for (w = 0; w < words; w++)
			if (a[0][w] != local->words[w] || a[1][w] != remote->words[w])
				goto next;
		*st = s;
		*tr = t;
		found = true;
next:;
	}
	fclose(f);
	return found;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait until the client end (CLIENT:CPORT -> SERVER:PORT) is a timewait sock. */
static void wait_tw(const struct end *client, const struct end *server, int want_state)
{
	int st = -1, tr = -1, ms;

	for (ms = 0; ms < WAIT_MS; ms += 10) {
		if (proc_find(client, server, &st, &tr) && tr == TIMER_TW &&
		    (!want_state || st == want_state))
			return;
		sleep_ms(10);
	}
	errno = 0;
	die("port %u: no timewait sock%s after %d ms (last: state %d timer %d)", client->port,
	    want_state ? " in TIME_WAIT" : "", WAIT_MS, st, tr);
}

/* Wait until no line of /proc/net/tcp has these ends. */
static void wait_gone(const struct end *local, const struct end *remote, const char *what)
{
	int st = -1, tr = -1, ms;

	for (ms = 0; ms < WAIT_MS; ms += 10) {
		if (!proc_find(local, remote, &st, &tr))
			return;
		sleep_ms(10);
	}
	errno = 0;
	die("port %u: %s still there after %d ms (state %d timer %d)", local->port, what,
	    WAIT_MS, st, tr);
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int tcp_state(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		die("TCP_INFO");
	return ti.tcpi_state;
}

int main(int argc, char **argv)
{
	struct end server, client;
	unsigned long base, n, i;
	char buf[16];
	int lfd;

	if (argc != 6) {
		fprintf(stderr, "usage: twtest CLIENT BASEPORT SERVER PORT N\n");
		return 2;
	}
	base = number(argv[2]);
	n = number(argv[5]);
	parse_end(&server, argv[3], number(argv[4]));
	parse_end(&client, argv[1], base);
	if (client.family != server.family) {
		errno = 0;
		die("%s and %s: not one family", argv[1], argv[3]);
	}
	if (base + n > 65536)
		die("ports past 65535");

	lfd = socket(server.family, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket");
	timeouts(lfd);
	if (bind(lfd, (struct sockaddr *)&server.ss, server.len))
		die("bind %s:%u", argv[3], server.port);
	if (listen(lfd, (int)n + 1))
		die("listen");

	for (i = 0; i < n; i++) {
		unsigned long long t0 = now_ns();
		bool rst = i % 2 == 0;
		int cfd, sfd, ms;
		ssize_t r;

		parse_end(&client, argv[1], base + i);
		cfd = socket(client.family, SOCK_STREAM, 0);
		if (cfd < 0)
			die("socket");
		timeouts(cfd);
		if (bind(cfd, (struct sockaddr *)&client.ss, client.len))
			die("bind %s:%u", argv[1], client.port);
		if (connect(cfd, (struct sockaddr *)&server.ss, server.len))
			die("connect from port %u", client.port);
		sfd = accept(lfd, NULL, NULL);
		if (sfd < 0)
			die("accept");
		timeouts(sfd);

		/*
		 * The client closes first: its end becomes a timewait sock.
		 * Its FIN goes first (shutdown), and close() comes once the
		 * ACK made it FIN_WAIT2: close() then makes the timewait sock
		 * itself. A close() that the ACK overtakes while it holds the
		 * socket may leave a FIN_WAIT2 sock on its keepalive timer
		 * instead, for 60 s (tcp_rcv_state_process(), seen on the
		 * debug kernel).
		 */
		if (shutdown(cfd, SHUT_WR))
			die("port %u: shutdown", client.port);
		r = read(sfd, buf, sizeof(buf));
		if (r != 0)
			die("port %u: read %zd, want EOF", client.port, r);
		for (ms = 0; tcp_state(cfd) != TCP_FIN_WAIT2; ms += 10) {
			if (ms >= WAIT_MS) {
				errno = 0;
				die("port %u: the FIN not ACKed in %d ms (state %d)", client.port,
				    WAIT_MS, tcp_state(cfd));
			}
			sleep_ms(10);
		}
		close(cfd);
		wait_tw(&client, &server, 0);

		if (rst) {
			if (write(sfd, "x", 1) != 1)
				die("port %u: write", client.port);
			for (ms = 0; tcp_state(sfd) != TCP_CLOSE; ms += 10) {
				if (ms >= WAIT_MS) {
					errno = 0;
					die("port %u: no reset from the timewait sock in %d ms (server end in state %d)",
					    client.port, WAIT_MS, tcp_state(sfd));
				}
				sleep_ms(10);
			}
			wait_gone(&client, &server, "the reset timewait sock");
			close(sfd);
		} else {
			close(sfd);
			wait_tw(&client, &server, TCP_TIME_WAIT);
			wait_gone(&server, &client, "the server's end");
		}
		printf("%s %s %u %s %u %llu %llu\n", rst ? "rst" : "fin", argv[1], client.port,
		       argv[3], server.port, t0, now_ns());
		fflush(stdout);
	}
	close(lfd);
	return 0;
}
