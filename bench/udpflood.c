// SPDX-License-Identifier: GPL-2.0
/*
 * udpflood: row 6's traffic (bench/vm-bench.sh), static: a UDP flood over
 * lo, as the paper's iperf UDP stream, in one process.
 *
 *   udpflood [-w WARMUP] SECONDS SIZE [PORT]
 *
 * A sink thread binds 127.0.0.1:PORT (default 5001) and recv()s every
 * datagram, so each one really goes down the send path and up the receive
 * path to a socket (on lo the receive half runs in the sender's softirq, on
 * the sender's CPU). The main thread send()s SIZE-byte datagrams (UDP
 * payload) on a connected socket as fast as it can for SECONDS. A send that
 * fails (ENOBUFS, EAGAIN) is counted apart, not as sent: "sent" is what
 * entered the stack, the packets a capture is offered.
 *
 * -w: send for WARMUP seconds first (default 0), as fast, before the timed
 * SECONDS: under TCG the first packets after a probe is set run code that
 * is translated anew, which is not the steady rate. Those datagrams are
 * sent (and captured) like the others: they count in sent, not in pps.
 *
 * Prints one line of key=value on stdout:
 *   size= sent= send_failed= bytes= secs= pps= mbps= recv= rcv_lost=
 * sent, send_failed, bytes, recv and rcv_lost cover the warm-up too; secs,
 * pps and mbps only the timed part. bytes and mbps (10^6 bytes/s) count
 * UDP payload; recv is what the sink
 * read; rcv_lost is sent - recv (the sink's socket buffer overflowed: the
 * datagram still reached udp_rcv, so captures count it). Time is
 * CLOCK_MONOTONIC.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SIZE_MAX_UDP	65507		/* IPv4: 65535 - 20 - 8 */
#define SINK_RCVBUF	(8 << 20)

static volatile int stop;
static unsigned long received;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: udpflood [-w WARMUP] SECONDS SIZE [PORT]\n");
	exit(1);
}

static void die(const char *what)
{
	fprintf(stderr, "udpflood: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Drains the socket until told to stop and it has been idle for 100 ms. */
static void *sink(void *arg)
{
	int fd = *(int *)arg;
	static char buf[SIZE_MAX_UDP];
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n >= 0) {
			received++;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			die("recv");
		if (stop)
			return NULL;
	}
}

static void send_burst(int fd, const char *buf, size_t size, unsigned long *sent,
		       unsigned long *failed)
{
	int i;

	for (i = 0; i < 16; i++) {
		if (send(fd, buf, size, 0) == (ssize_t)size)
			(*sent)++;
		else if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED)
			(*failed)++;
		else
			die("send");
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct timeval tmo = { .tv_usec = 100000 };
	unsigned long sent = 0, failed = 0, timed = 0, port = 5001;
	int rfd, sfd, rcvbuf = SINK_RCVBUF;
	double secs, warmup = 0, t0, t1;
	size_t size;
	pthread_t th;
	char *buf, *end;

	if (argc > 2 && !strcmp(argv[1], "-w")) {
		warmup = strtod(argv[2], &end);
		if (*end || !(warmup >= 0))
			usage();
		argc -= 2;
		argv += 2;
	}
	if (argc != 3 && argc != 4)
		usage();
	secs = strtod(argv[1], &end);
	if (*end || !(secs > 0))
		usage();
	size = strtoul(argv[2], &end, 10);
	if (*end || !size || size > SIZE_MAX_UDP)
		usage();
	if (argc == 4) {
		port = strtoul(argv[3], &end, 10);
		if (*end || !port || port > 65535)
			usage();
	}
	buf = malloc(size);
	if (!buf)
		die("malloc");
	memset(buf, 'x', size);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	rfd = socket(AF_INET, SOCK_DGRAM, 0);
	if (rfd < 0)
		die("socket");
	/* As big as rmem_max lets it be: the sink shares the sender's CPU. */
	setsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(rfd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)))
		die("SO_RCVTIMEO");
	if (bind(rfd, (struct sockaddr *)&a, sizeof(a)))
		die("bind");
	sfd = socket(AF_INET, SOCK_DGRAM, 0);
	if (sfd < 0)
		die("socket");
	if (connect(sfd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	errno = pthread_create(&th, NULL, sink, &rfd);
	if (errno)
		die("pthread_create");

	t0 = now();
	if (warmup > 0) {
		do {
			send_burst(sfd, buf, size, &sent, &failed);
			t1 = now();
		} while (t1 - t0 < warmup);
		t0 = t1;
	}
	timed = sent;
	do {
		send_burst(sfd, buf, size, &sent, &failed);
		t1 = now();
	} while (t1 - t0 < secs);
	timed = sent - timed;
	free(buf);

	stop = 1;
	pthread_join(th, NULL);
	close(sfd);
	close(rfd);
	printf("size=%zu sent=%lu send_failed=%lu bytes=%llu secs=%.6f pps=%.0f mbps=%.3f recv=%lu rcv_lost=%lu\n",
	       size, sent, failed, (unsigned long long)sent * size, t1 - t0,
	       timed / (t1 - t0), timed * (double)size / (t1 - t0) / 1e6, received,
	       sent - received);
	return 0;
}
