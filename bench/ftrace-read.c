// SPDX-License-Identifier: GPL-2.0
/*
 * ftrace-read: drain ftrace's per-CPU ring buffers, the counterpart of
 * magnet-read in the bench (bench/vm-bench.sh). Static, for the VM.
 *
 *   ftrace-read -o FILE [-d TRACEFS] [-t SECONDS]
 *
 * One thread per CPU does blocking read(2)s of one page from
 * per_cpu/cpuN/trace_pipe_raw (the binary interface trace-cmd and perf's
 * ftrace readers use), counts the events in it and writes the page to FILE
 * ("-" for stdout), as trace-cmd stores pages. A read of trace_pipe_raw
 * returns at most one page, and returns as soon as one event is there (a
 * partial page is copied out event by event), so it drains everything,
 * like magnet-read with a timeout. read() rather than splice(): it is what
 * magnet-read does too (copy to user space, parse, write), the data passes
 * through the reader so the reader can count it, and splice in 6.1 only
 * moves whole pages once the buffer is buffer_percent full, so a
 * splice reader needs read() for the tail anyway.
 *
 * Stops on SIGINT/SIGTERM or after -t SECONDS. Prints per-CPU counts and a
 * total on stderr:
 *   cpuN: events E bytes B pages P missed M zero_reads Z
 *   ftrace_events=E ftrace_bytes=B ftrace_pages=P ftrace_missed=M
 * (bytes: event bytes, ring headers and time extends included, padding
 * excluded; missed: what the pages' RB_MISSED flags report, overwrite mode
 * only; losses of discard mode are in per_cpu/cpuN/stats "dropped events").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE		4096
/* struct buffer_data_page: u64 time_stamp; local_t commit; data[] */
#define PAGE_HDR	16
#define RB_MISSED_EVENTS	(1UL << 31)
#define RB_MISSED_STORED	(1UL << 30)
#define RB_FLAGS	(RB_MISSED_EVENTS | RB_MISSED_STORED)
/* struct ring_buffer_event type_len values */
#define TYPE_DATA_MAX	28
#define TYPE_PADDING	29
#define TYPE_TIME_EXTEND 30
#define TYPE_TIME_STAMP	31

struct cpu_reader {
	unsigned int cpu;
	int fd;
	pthread_t thread;
	int started;
	volatile int done;
	unsigned long long events, bytes, pages, missed, zero_reads;
	int error;
};

static volatile sig_atomic_t stop;
static int out_fd = -1;
static int out_failed;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_wake(int sig)
{
	(void)sig;	/* only interrupts a blocking read */
}

/* Count the events of one page as trace_pipe_raw returns it. */
static void parse_page(struct cpu_reader *c, const unsigned char *page)
{
	uint64_t commit;
	size_t len, off = 0;

	memcpy(&commit, page + 8, sizeof(commit));
	len = commit & ~RB_FLAGS & 0xffffffffUL;
	if (len > PAGE - PAGE_HDR) {
		fprintf(stderr, "ftrace-read: cpu%u: bad page (commit %#llx)\n", c->cpu,
			(unsigned long long)commit);
		c->error = 1;
		return;
	}
	if (commit & RB_MISSED_STORED) {
		uint64_t missed;

		if (len + sizeof(missed) <= PAGE - PAGE_HDR) {
			memcpy(&missed, page + PAGE_HDR + len, sizeof(missed));
			c->missed += missed;
		}
	} else if (commit & RB_MISSED_EVENTS) {
		c->missed++;	/* some, count unknown */
	}
	while (off + 4 <= len) {
		const unsigned char *ev = page + PAGE_HDR + off;
		uint32_t hdr, arr0 = 0;
		unsigned int type_len;
		size_t size;

		memcpy(&hdr, ev, 4);
		type_len = hdr & 31;
		if (off + 8 <= len)
			memcpy(&arr0, ev + 4, 4);
		if (type_len == 0) {
			size = (size_t)arr0 + 4;
			c->events++;
			c->bytes += size;
		} else if (type_len <= TYPE_DATA_MAX) {
			size = type_len * 4 + 4;
			c->events++;
			c->bytes += size;
		} else if (type_len == TYPE_PADDING) {
			if (!(hdr >> 5))
				break;	/* null padding: the rest of the page */
			size = (size_t)arr0 + 4;	/* a discarded event */
		} else {
			size = 8;	/* time extend or time stamp */
			c->bytes += size;
		}
		if (size < 4 || off + size > len) {
			fprintf(stderr, "ftrace-read: cpu%u: bad event at %zu\n", c->cpu, off);
			c->error = 1;
			return;
		}
		off += size;
	}
}

static void *reader(void *arg)
{
	struct cpu_reader *c = arg;
	unsigned char *page = aligned_alloc(PAGE, PAGE);

	if (!page) {
		c->error = 1;
		c->done = 1;
		return NULL;
	}
	while (!stop) {
		ssize_t n = read(c->fd, page, PAGE);

		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			fprintf(stderr, "ftrace-read: cpu%u: read: %s\n", c->cpu, strerror(errno));
			c->error = 1;
			break;
		}
		/*
		 * 0 is not end of file: tracing_buffers_read() returns 0 when
		 * it could not take a page although the buffer is not empty
		 * (a writer was on the reader page); read again.
		 */
		if (n == 0) {
			c->zero_reads++;
			continue;
		}
		if (n != PAGE) {
			fprintf(stderr, "ftrace-read: cpu%u: short read %zd\n", c->cpu, n);
			c->error = 1;
			break;
		}
		c->pages++;
		parse_page(c, page);
		if (out_fd >= 0 && !out_failed && write(out_fd, page, PAGE) != PAGE) {
			fprintf(stderr, "ftrace-read: write: %s\n", strerror(errno));
			out_failed = 1;
		}
	}
	free(page);
	c->done = 1;
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: ftrace-read -o FILE [-d TRACEFS] [-t SECONDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = "/sys/kernel/tracing", *out = NULL;
	struct cpu_reader *cpus = NULL;
	unsigned int ncpus = 0, i, cap = 0;
	unsigned long long ev = 0, by = 0, pg = 0, mi = 0;
	double secs = 0;
	struct sigaction sa;
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int opt, err = 0;
	struct timespec t0, t;

	while ((opt = getopt(argc, argv, "o:d:t:")) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'd': dir = optarg; break;
		case 't': secs = atof(optarg); break;
		default: usage();
		}
	}
	if (!out || optind != argc)
		usage();
	if (!strcmp(out, "-"))
		out_fd = STDOUT_FILENO;
	else if ((out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) {
		perror(out);
		return 2;
	}

	snprintf(path, sizeof(path), "%s/per_cpu", dir);
	d = opendir(path);
	if (!d) {
		perror(path);
		return 2;
	}
	while ((de = readdir(d))) {
		unsigned int n;
		char extra;

		if (sscanf(de->d_name, "cpu%u%c", &n, &extra) != 1)
			continue;
		if (ncpus == cap) {
			cap = cap ? 2 * cap : 16;
			cpus = realloc(cpus, cap * sizeof(*cpus));
			if (!cpus)
				return 2;
		}
		memset(&cpus[ncpus], 0, sizeof(*cpus));
		cpus[ncpus].cpu = n;
		ncpus++;
	}
	closedir(d);
	if (!ncpus) {
		fprintf(stderr, "ftrace-read: no CPUs in %s\n", path);
		return 2;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_wake;	/* no SA_RESTART: interrupt read() */
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	for (i = 0; i < ncpus; i++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", dir, cpus[i].cpu);
		cpus[i].fd = open(path, O_RDONLY);
		if (cpus[i].fd < 0) {
			perror(path);
			free(cpus);
			return 2;
		}
	}
	for (i = 0; i < ncpus; i++) {
		if (pthread_create(&cpus[i].thread, NULL, reader, &cpus[i])) {
			fprintf(stderr, "ftrace-read: pthread_create failed\n");
			return 2;
		}
		cpus[i].started = 1;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		const struct timespec slice = { 0, 20 * 1000000 };

		nanosleep(&slice, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (secs > 0 && (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
			stop = 1;
	}
	/*
	 * A thread blocked in read() wakes on a signal; one that was busy
	 * sees stop at its next loop. Signal until all have ended (a signal
	 * between the check of stop and the read would otherwise be lost).
	 */
	for (;;) {
		int busy = 0;

		for (i = 0; i < ncpus; i++) {
			if (cpus[i].started && !cpus[i].done) {
				pthread_kill(cpus[i].thread, SIGUSR1);
				busy = 1;
			}
		}
		if (!busy)
			break;
		usleep(2000);
	}
	for (i = 0; i < ncpus; i++) {
		struct cpu_reader *c = &cpus[i];

		pthread_join(c->thread, NULL);
		fprintf(stderr, "cpu%u: events %llu bytes %llu pages %llu missed %llu zero_reads %llu\n",
			c->cpu, c->events, c->bytes, c->pages, c->missed, c->zero_reads);
		ev += c->events;
		by += c->bytes;
		pg += c->pages;
		mi += c->missed;
		err |= c->error;
		close(c->fd);
	}
	fprintf(stderr, "ftrace_events=%llu ftrace_bytes=%llu ftrace_pages=%llu ftrace_missed=%llu\n",
		ev, by, pg, mi);
	if (out_fd >= 0 && out_fd != STDOUT_FILENO && close(out_fd))
		err = 1;
	return err || out_failed ? 2 : 0;
}
