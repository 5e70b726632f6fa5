/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace files: what magnet-read writes and magnet-dump reads. The format is
 * specified byte by byte in docs/trace-format.md.
 */
#ifndef MAGNET_LIB_TRACE_H
#define MAGNET_LIB_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/magnet.h>

#include "probes.h"
#include "stats.h"

#define MG_TRACE_MAGIC		"MAGNETTR"
#define MG_TRACE_VERSION	1
#define MG_TRACE_BYTE_ORDER	0x01020304U
#define MG_TRACE_FIXED_HEADER	224
#define MG_TRACE_MAX_CPUS	65536

#define MG_CHUNK_HEADER		16
#define MG_CHUNK_DATA		0x41544144U	/* "DATA" when little-endian */
#define MG_CHUNK_TRAILER	0x524c5254U	/* "TRLR" when little-endian */
#define MG_CHUNK_PROBES		0x53425250U	/* "PRBS" when little-endian */
#define MG_CHUNK_NO_CPU		0xffffffffU	/* cpu field of TRLR and PRBS */

#define MG_TRAILER_HEADER	24
#define MG_TRAILER_CPU_SIZE	104
#define MG_TRAILER_KSTATS	(1U << 0)	/* kstats holds the kernel's line */

struct mg_trace_info {
	unsigned int version;		/* file format; filled in by the reader */
	__u32 header_len;		/* offset of the first chunk; reader */
	unsigned int record_version;	/* records' MAGNET_FORMAT_VERSION */
	__u32 ncpus;			/* data chunks have cpu < ncpus */
	__u64 start_realtime_ns;	/* CLOCK_REALTIME at the start, and */
	__u64 start_clock_ns;		/* the trace clock at the same instant */
	char clock[16];			/* "mono" or "tsc" */
	__u32 tsc_khz;			/* TSC frequency; 0 unknown (or mono) */
	char hostname[80];
	char release[80];		/* uname -r of the traced kernel */
	const char *probes;		/* magnet/probes text, probes_len bytes */
	size_t probes_len;
};

struct mg_trailer_cpu {
	__u32 cpu;
	__u32 flags;			/* MG_TRAILER_* */
	__u64 records;			/* event records read (LOST excluded) */
	__u64 bytes;			/* bytes read, all records */
	struct magnet_lost lost;	/* sum of the LOST records read */
	struct mg_kstats kstats;	/* magnet/stats line at exit */
};

struct mg_trailer {
	__u64 stop_realtime_ns;
	__u64 stop_clock_ns;
	__u32 ncpus;			/* entries in cpu[] */
	struct mg_trailer_cpu *cpu;
};

/*
 * Writing. A file is one header, any number of data chunks (whole records
 * as read from one cpuN file), and a trailer at a clean exit. Each returns
 * 0 or -errno and retries short writes and EINTR, so fd may be a pipe.
 */
int mg_trace_write_header(int fd, const struct mg_trace_info *info);
int mg_trace_write_chunk(int fd, __u32 cpu, const void *data, size_t len);
int mg_trace_write_trailer(int fd, const struct mg_trailer *t);
/* A PRBS chunk: probe table lines (len > 0), zero-padded to 8 bytes. */
int mg_trace_write_probes(int fd, const char *text, size_t len);

/*
 * The probe table as a writer has written it so far: the header's text,
 * then every line a PRBS chunk added. A probe added while the trace runs
 * gets a PRBS chunk before the first data chunk with one of its records:
 * before writing a chunk, mg_probe_watch_need() says whether it holds a
 * probe id (>= MAGNET_EVENT_FIRST_DYNAMIC) neither named nor looked up
 * yet; if so the writer reads magnet/probes again, gives the text to
 * mg_probe_watch_update() with the chunk, and writes what it added. An id
 * still unknown then (a custom event, a probe already removed) is looked
 * up once, never again: ids are not reused soon, so a name never changes.
 */
struct mg_probe_watch;

/* Starts from the header's table (text may be NULL). NULL: no memory. */
struct mg_probe_watch *mg_probe_watch_new(const char *text, size_t len);
void mg_probe_watch_free(struct mg_probe_watch *pw);
bool mg_probe_watch_need(const struct mg_probe_watch *pw, const void *data,
			 size_t len);
/*
 * Append the lines of text (a fresh magnet/probes; may be NULL) whose id
 * the table does not hold, and mark every probe id of the chunk data as
 * looked up. *added: the table's length before, so the new lines are
 * mg_probe_watch_text() from there on (none when it equals the length).
 * 0 or -ENOMEM (then nothing changed, and the next need asks again).
 */
int mg_probe_watch_update(struct mg_probe_watch *pw, const char *text,
			  size_t len, const void *data, size_t dlen,
			  size_t *added);
/* The whole table so far: a new file's header. */
const char *mg_probe_watch_text(const struct mg_probe_watch *pw, size_t *len);

/* Reading. */
struct mg_trace;

struct mg_trace_error {
	__u64 offset;		/* file offset of what is bad */
	const char *what;	/* "header", "chunk", "record", "trailer", "file" */
	char reason[160];
};

/* Where a record returned by mg_trace_next() came from. */
struct mg_trace_pos {
	__u32 cpu;		/* the data chunk's cpu */
	__u64 offset;		/* file offset of the record */
};

/*
 * Open and index a trace: the header is read and checked, then every
 * chunk header (not the data) is read to build per-CPU chunk lists, so
 * memory grows with the number of chunks, not the file size. The file must
 * be seekable. Returns 0; -errno for a system error; -EBADMSG when the
 * header is bad or unsupported (err says why and where). Corruption past
 * the header does not fail the open: it is reported by mg_trace_next()
 * once every record before it has been returned.
 */
int mg_trace_open(struct mg_trace **tp, const char *path,
		  struct mg_trace_error *err);
/* Same on an open fd, which the trace does not close. */
int mg_trace_fdopen(struct mg_trace **tp, int fd, struct mg_trace_error *err);

const struct mg_trace_info *mg_trace_info(const struct mg_trace *t);
const struct mg_probe_table *mg_trace_probes(const struct mg_trace *t);
/* NULL when the file has none (the reader did not exit cleanly). */
const struct mg_trailer *mg_trace_trailer(const struct mg_trace *t);

/*
 * Next record of all CPUs merged by timestamp; ties go to the lower CPU,
 * then stream order. *rec stays valid until the next call. Returns 1, 0 at
 * the end, -EBADMSG at the end when the file is corrupt somewhere (a
 * stream stops at its first bad record, the others go on; see
 * mg_trace_error() for the lowest bad offset), -errno on I/O errors.
 * pos may be NULL.
 */
int mg_trace_next(struct mg_trace *t, const struct magnet_record **rec,
		  struct mg_trace_pos *pos);

/* The first corruption found so far, or NULL. */
const struct mg_trace_error *mg_trace_error(const struct mg_trace *t);

void mg_trace_close(struct mg_trace *t);

#endif /* MAGNET_LIB_TRACE_H */
