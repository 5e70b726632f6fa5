// SPDX-License-Identifier: GPL-2.0
/*
 * hostile-trace: write a trace whose header holds -p probe lines and whose
 * one CPU holds -n kprobe records, for bench/dump-probes (magnet-dump's
 * cost per record against the size of the probe table).
 *
 * The lines name ids 17..65535 in turn, so a table of more lines than that
 * repeats ids; every record has id 16, which no line names: a reader that
 * looks names up by scanning the table scans all of it for each record.
 * -m adds one line naming 16 at the very end (found last by a scan).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "record.h"
#include "trace.h"

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void usage(void)
{
	fprintf(stderr, "usage: hostile-trace -p PROBE_LINES -n RECORDS [-m] FILE\n");
	exit(1);
}

/* The probe table's text: lines naming 17..65535 in turn. */
static char *table(unsigned long lines, bool name_16, size_t *len)
{
	size_t cap = (lines + 1) * 40, at = 0;
	char *s = malloc(cap);
	unsigned long i;

	if (!s)
		die("malloc");
	for (i = 0; i < lines; i++) {
		unsigned int id = 17 + i % (MAGNET_EVENT_MAX - 16);

		at += snprintf(s + at, cap - at, "%u\tkprobe\tf%u\t1\t0\t0\n", id, id);
	}
	if (name_16)
		at += snprintf(s + at, cap - at, "16\tkprobe\tsixteen\t1\t0\t0\n");
	*len = at;
	return s;
}

int main(int argc, char **argv)
{
	unsigned long lines = 0, records = 0, i;
	struct mg_trace_info info = {
		.ncpus = 1,
		.start_realtime_ns = 1700000000000000000ULL,
		.clock = "mono",
		.hostname = "bench",
		.release = "bench",
	};
	struct mg_trailer_cpu tc = { .cpu = 0 };
	struct mg_trailer tr = { .ncpus = 1, .cpu = &tc };
	static __u64 chunk[8192];
	bool name_16 = false;
	size_t at = 0;
	int opt, fd;

	while ((opt = getopt(argc, argv, "p:n:m")) != -1) {
		switch (opt) {
		case 'p':
			lines = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			records = strtoul(optarg, NULL, 10);
			break;
		case 'm':
			name_16 = true;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	info.probes = table(lines, name_16, &info.probes_len);
	fd = open(argv[optind], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(argv[optind]);
	if (mg_trace_write_header(fd, &info))
		die("header");
	for (i = 0; i < records; i++) {
		struct mg_record_hdr h = {
			.event_id = 16,
			.timestamp = 1000 + i,
			.pid = 100,
			.tgid = 100,
		};
		__u64 arg = i;
		ssize_t n;

		n = mg_record_encode_kprobe((char *)chunk + at, sizeof(chunk) - at,
					    &h, &arg, 1);
		if (n < 0) {
			if (mg_trace_write_chunk(fd, 0, chunk, at))
				die("chunk");
			at = 0;
			i--;
			continue;
		}
		at += n;
		tc.bytes += n;
	}
	if ((at && mg_trace_write_chunk(fd, 0, chunk, at)))
		die("chunk");
	tc.records = records;
	tr.stop_clock_ns = 1000 + records;
	tr.stop_realtime_ns = info.start_realtime_ns + records;
	if (mg_trace_write_trailer(fd, &tr) || close(fd))
		die("trailer");
	free((void *)info.probes);
	return 0;
}
