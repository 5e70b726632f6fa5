// SPDX-License-Identifier: GPL-2.0
/*
 * pktsend: known packets for the capture tests (tests/vm/host-pcap.sh).
 * Sends each PAYLOAD from SRC:SPORT to DST:DPORT, both ends local (lo), and
 * receives it at the other end before the next, so the packets go in the
 * order given, one UDP datagram or one TCP segment per payload.
 *
 *   pktsend udp|tcp SRC SPORT DST DPORT PAYLOAD...
 *
 * SRC and DST are IPv4 or IPv6 addresses (the same family). TCP: one
 * connection (TCP_NODELAY: a write is a segment), closed by both ends
 * after the last payload. Exit 0 when every payload arrived intact; else a
 * message and exit 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("pktsend: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (errno)
		fprintf(stderr, ": %s", strerror(errno));
	fputc('\n', stderr);
	exit(1);
}

static socklen_t addr(struct sockaddr_storage *ss, const char *ip, const char *port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char *end;
	long p;

	errno = 0;
	p = strtol(port, &end, 10);
	if (*end || p < 1 || p > 65535)
		die("bad port '%s'", port);
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(p);
		return sizeof(*in);
	}
	if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(p);
		return sizeof(*in6);
	}
	die("bad address '%s'", ip);
	return 0;
}

static int bound(int family, int type, const struct sockaddr_storage *ss, socklen_t len)
{
	int one = 1, fd = socket(family, type, 0);

	if (fd < 0)
		die("socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("SO_REUSEADDR");
	if (bind(fd, (const struct sockaddr *)ss, len))
		die("bind");
	return fd;
}

/* Read exactly n bytes (a stream) and compare them with want. */
static void expect(int fd, const char *want, size_t n)
{
	char buf[4096];
	size_t got = 0;
	ssize_t r;

	if (n > sizeof(buf))
		die("payload longer than %zu bytes", sizeof(buf));
	while (got < n) {
		r = recv(fd, buf + got, n - got, 0);
		if (r <= 0)
			die("recv: %zu of %zu bytes", got, n);
		got += r;
	}
	errno = 0;
	if (memcmp(buf, want, n))
		die("received other bytes than '%s'", want);
}

int main(int argc, char **argv)
{
	struct sockaddr_storage src, dst;
	socklen_t slen, dlen;
	int i, one = 1, tcp, tx, rx, lfd = -1;
	char buf[4096];
	ssize_t r;

	if (argc < 7 || (strcmp(argv[1], "udp") && strcmp(argv[1], "tcp"))) {
		fprintf(stderr, "usage: pktsend udp|tcp SRC SPORT DST DPORT PAYLOAD...\n");
		return 1;
	}
	tcp = !strcmp(argv[1], "tcp");
	slen = addr(&src, argv[2], argv[3]);
	dlen = addr(&dst, argv[4], argv[5]);
	errno = 0;
	if (src.ss_family != dst.ss_family)
		die("SRC and DST of two families");

	if (tcp) {
		lfd = bound(dst.ss_family, SOCK_STREAM, &dst, dlen);
		if (listen(lfd, 1))
			die("listen");
		tx = bound(src.ss_family, SOCK_STREAM, &src, slen);
		if (setsockopt(tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
			die("TCP_NODELAY");
		if (connect(tx, (struct sockaddr *)&dst, dlen))
			die("connect");
		rx = accept(lfd, NULL, NULL);
		if (rx < 0)
			die("accept");
	} else {
		rx = bound(dst.ss_family, SOCK_DGRAM, &dst, dlen);
		tx = bound(src.ss_family, SOCK_DGRAM, &src, slen);
	}
	for (i = 6; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (!n || n > sizeof(buf))
			die("payload %d: 1 to %zu bytes", i - 5, sizeof(buf));
		if (sendto(tx, argv[i], n, 0, tcp ? NULL : (struct sockaddr *)&dst,
			   tcp ? 0 : dlen) != (ssize_t)n)
			die("send '%s'", argv[i]);
		if (tcp) {
			expect(rx, argv[i], n);
			continue;
		}
		r = recv(rx, buf, sizeof(buf), 0);
		if (r < 0)
			die("recv");
		errno = 0;
		if ((size_t)r != n || memcmp(buf, argv[i], n))
			die("received other bytes than '%s'", argv[i]);
	}
	if (tcp) {
		/* Both ends close: the FINs, and the reader sees the end. */
		if (shutdown(tx, SHUT_WR))
			die("shutdown");
		r = recv(rx, buf, sizeof(buf), 0);
		if (r != 0)
			die("no end of stream (recv %zd)", r);
		close(rx);
		close(lfd);
	}
	close(tx);
	if (!tcp)
		close(rx);
	return 0;
}
