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
struct mg_tasks;

struct mg_print_opts {
	bool json;
	bool wall;		/* also print wall-clock time (mono, or tsc with
				 * tsc_khz known) */
	bool tsc;		/* timestamps are TSC cycles, not ns */
	__u32 tsc_khz;		/* TSC frequency, 0 if unknown */
	const struct mg_probe_table *probes;	/* names; may be NULL */
	__u64 realtime0;	/* CLOCK_REALTIME ns ... */
	__u64 clock0;		/* ... at this trace-clock time */
	/*
	 * Names records' threads (lib/tasks.h); the caller feeds it each
	 * record before printing it. NULL: every comm is unknown.
	 */
	const struct mg_tasks *tasks;
	/*
	 * Or, when set, the thread of the next record printed, as the caller
	 * named it at the record's place in the stream (tasks is then unused).
	 */
	const struct mg_task *task;
};

/* Options for a trace: clock kind and start time from its header. */
void mg_print_opts_init(struct mg_print_opts *o,
			const struct mg_trace_info *info,
			const struct mg_probe_table *probes);

/*
 * Print one valid record and a newline. 0, or -EIO on a stdio error.
 * TASK records print as lines of their own; callers that hide them (the
 * comm is on every record's line) do not call this for them.
 */
int mg_print_record(FILE *f, const struct mg_print_opts *o,
		    const struct magnet_record *r);

/*
 * Signed ns between two trace-clock values: b - a, converted from cycles
 * when o->tsc (then o->tsc_khz must be non-zero); modulo 2^64, as the
 * unsigned sums it goes into.
 */
__s64 mg_print_clock_delta_ns(const struct mg_print_opts *o, __u64 a, __u64 b);

/* Format ns since the epoch as "2024-05-01T12:00:00.000000000Z". */
void mg_format_wall(char *buf, size_t len, __u64 ns);

#endif /* MAGNET_LIB_PRINT_H */
