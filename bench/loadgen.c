// SPDX-License-Identifier: GPL-2.0
/*
 * loadgen: the workloads of the in-VM bench (bench/vm-bench.sh), static.
 *
 *   loadgen getpid N            N x syscall(SYS_getpid); prints ns_per_op
 *   loadgen getpid-for SECONDS [RATE]
 *                               getpid for SECONDS; prints ops and secs
 *   loadgen write-for SECONDS SIZE FILE [RATE]
 *                               write(2) SIZE-byte buffers to FILE for
 *                               SECONDS (ENOSPC is not an error: the bench
 *                               writes to /dev/full, see vm-bench.sh); the
 *                               buffer is SIZE-1 'x' and a NUL, so a string
 *                               fetch sees exactly SIZE bytes
 *
 * RATE (ops per second, 0 = as fast as possible) paces the loop: after every
 * batch of 16 ops it spins until it is no longer ahead of RATE, so two runs
 * with the same RATE offer a tracer the same load.
 *
 * Output is key=value on stdout. Time is CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: loadgen getpid N | getpid-for SECONDS [RATE] | "
		"write-for SECONDS SIZE FILE [RATE]\n");
	exit(2);
}

static int fd = -1;
static char *buf;
static size_t size;

static void op_getpid(void)
{
	syscall(SYS_getpid);
}

static void op_write(void)
{
	if (write(fd, buf, size) != (ssize_t)size && errno != ENOSPC) {
		perror("loadgen: write");
		exit(1);
	}
}

/* Run op for secs seconds, paced at rate ops/s if rate > 0. */
static void run_for(void (*op)(void), double secs, double rate)
{
	unsigned long ops = 0, i;
	double t0 = now(), t1;

	do {
		for (i = 0; i < 16; i++)
			op();
		ops += 16;
		t1 = now();
		while (rate > 0 && ops > rate * (t1 - t0) && t1 - t0 < secs)
			t1 = now();
	} while (t1 - t0 < secs);
	printf("ops=%lu secs=%.6f ns_per_op=%.1f\n", ops, t1 - t0, (t1 - t0) * 1e9 / ops);
}

int main(int argc, char **argv)
{
	unsigned long i, n;
	double t0, t1;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "getpid") && argc == 3) {
		n = strtoul(argv[2], NULL, 0);
		if (!n)
			usage();
		t0 = now();
		for (i = 0; i < n; i++)
			syscall(SYS_getpid);
		t1 = now();
		printf("ops=%lu secs=%.6f ns_per_op=%.1f\n", n, t1 - t0, (t1 - t0) * 1e9 / n);
	} else if (!strcmp(argv[1], "getpid-for") && (argc == 3 || argc == 4)) {
		run_for(op_getpid, atof(argv[2]), argc == 4 ? atof(argv[3]) : 0);
	} else if (!strcmp(argv[1], "write-for") && (argc == 5 || argc == 6)) {
		size = strtoul(argv[3], NULL, 0);
		if (!size || !(buf = malloc(size)))
			usage();
		memset(buf, 'x', size - 1);
		buf[size - 1] = '\0';
		fd = open(argv[4], O_WRONLY);
		if (fd < 0) {
			perror(argv[4]);
			return 1;
		}
		run_for(op_write, atof(argv[2]), argc == 6 ? atof(argv[5]) : 0);
	} else {
		usage();
	}
	return 0;
}
