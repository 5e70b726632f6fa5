/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way records are printed, as text or JSON lines; the formats are
 * documented in docs/magnet-dump.md.
 */
#ifndef MAGNET_LIB_PRINT_H
#define MAGNET_LIB_PRINT_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/magnet.h>

#include "probes.h"

struct mg_trace_info;

struct mg_print_opts {
	bool json;
	bool wall;		/* also print wall-clock time (mono clock only) */
	bool tsc;		/* timestamps are TSC cycles, not ns */
	const struct mg_probe_table *probes;	/* names; may be NULL */
	__u64 realtime0;	/* CLOCK_REALTIME ns ... */
	__u64 clock0;		/* ... at this trace-clock time */
};

/* Options for a trace: clock kind and start time from its header. */
void mg_print_opts_init(struct mg_print_opts *o,
			const struct mg_trace_info *info,
			const struct mg_probe_table *probes);

/* Print one valid record and a newline. 0, or -EIO on a stdio error. */
int mg_print_record(FILE *f, const struct mg_print_opts *o,
		    const struct magnet_record *r);

/* Write s as a JSON string literal, quotes included. */
void mg_print_json_string(FILE *f, const char *s);

/* Format ns since the epoch as "2024-05-01T12:00:00.000000000Z". */
void mg_format_wall(char *buf, size_t len, __u64 ns);

#endif /* MAGNET_LIB_PRINT_H */
