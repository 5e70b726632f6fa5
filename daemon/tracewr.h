/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace writer for magnetd: the collection thread hands it data chunks
 * (whole records as read from one cpuN file) and goes on at once; a writer
 * thread appends them to a sequence of trace files (docs/trace-format.md)
 * DIR/PREFIX-NNNNNN.mgt, NNNNNN counting from 000000. Each file is a
 * complete trace: a header with the open's info, data chunks, a trailer.
 *
 * Durability. The file being written is PREFIX-NNNNNN.mgt.part. Finished
 * (rotated, or the last at close) it gets its trailer, is synced
 * (fdatasync), and only then renamed to PREFIX-NNNNNN.mgt, the directory
 * synced after: a file of that name has all its bytes on the disk, a
 * crash (panic, power cut) can cut short only the .part. The .part's own
 * name is made durable (the directory synced) when it is created. Files
 * are created 0600 whatever the umask, O_NOFOLLOW, relative to the
 * directory opened once (mg_tracewr_dir_open checks it for magnetd). All
 * of this happens in the writer thread, never in collection's way.
 *
 * Never blocks collection. mg_tracewr_put copies the chunk into a ring of
 * max_queue_bytes allocated at open (8 bytes of framing per chunk) and
 * returns; when the ring has no room the chunk is dropped and counted
 * (chunks, bytes, records). It takes no lock, never allocates, and makes a
 * system call only to wake a writer that sleeps on an empty ring (one
 * eventfd write).
 *
 * Batches. Woken by a chunk, the writer waits up to MG_TRACEWR_GATHER_MS
 * for more (or until an eighth of the queue, at most 1 MiB, is queued)
 * before it writes what came: a few wakeups a second under a steady
 * stream, not one per chunk, and a file at most that much behind.
 *
 * Rotation. A file holds its header, chunks and trailer in at most
 * max_file_bytes: a chunk that would push it over (counting the trailer the
 * file would then need) starts the next file, and a chunk too large even
 * for an empty file goes alone into a file of its own. 0: one file.
 *
 * Names. The writer keeps a mirror of the stream's TASK records
 * (lib/tasks.h) and begins every file with the TASK records of the threads
 * named so far (one chunk per CPU, stamped with that CPU's last record
 * timestamp), so each file names its records on its own. Those chunks are
 * not counted in max_file_bytes (at most 3584 bytes per CPU, more than
 * the limit only by them). After the queue dropped chunks the mirror starts
 * again: a name then unknown is not replayed, a stale one never is.
 *
 * Probe names. The header of every file holds the probe table: the one
 * passed at open, and the lines of every probe added since (union: an id
 * keeps its first name). Given probes_dir, a chunk with a probe id the
 * table lacks makes the writer read probes_dir/probes again, once per id
 * (a custom event, a probe removed meanwhile, stays unknown), and write
 * the new lines in a PRBS chunk before that chunk (docs/trace-format.md).
 *
 * Trailers. Every file but the last gets the writer's own trailer: one
 * entry per CPU with data in that file (records, bytes and LOST sums of
 * that file; no kernel counters), stop_clock the file's largest record
 * timestamp and stop_realtime that instant by the header's clock
 * (CLOCK_REALTIME at the rotation when the clock cannot be converted). The
 * last file gets the trailer passed to mg_tracewr_close (the session's, as
 * magnet-read writes; it is not counted in the size limit), or that same
 * per-file trailer when none is passed. Their records, as the trace format's,
 * exclude LOST and TASK records.
 *
 * Disk errors (open, write, close failing: ENOSPC, EIO, EACCES, ...) never
 * stop the writer. Each is counted; the first of each kind (operation and
 * errno) is passed to the log callback, later ones are not; the chunk is
 * dropped and counted apart from queue drops. A failed chunk write is cut
 * off again (ftruncate) so the file stays valid and later chunks go on in
 * it; a file that cannot be opened is tried again with the next chunk, so
 * the writer recovers by itself once the disk or directory does. Names
 * already taken (a .mgt, or a .part a crash left) are skipped: files are
 * created O_EXCL and renamed without replacing, never clobbered. A file
 * that could not be synced or renamed stays a .part.
 */
#ifndef MAGNET_DAEMON_TRACEWR_H
#define MAGNET_DAEMON_TRACEWR_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/magnet.h>

#include "trace.h"

/* A file name: DIR/PREFIX-NNNNNN.mgt; .part appended while written. */
#define MG_TRACEWR_SUFFIX	".mgt"
#define MG_TRACEWR_PART		".part"
#define MG_TRACEWR_PATH_MAX	4096
/* How long a woken writer waits for more chunks before it writes. */
#define MG_TRACEWR_GATHER_MS	100

/* Framing of a chunk in the queue. */
#define MG_TRACEWR_CHUNK_OVERHEAD	8
#define MG_TRACEWR_MIN_QUEUE	64
/* Chunks larger cannot be framed (and no queue holds them anyway). */
#define MG_TRACEWR_MAX_CHUNK	0xfffffff8U

struct mg_tracewr;

/* Called from the writer thread, once per error kind; msg has no newline. */
typedef void (*mg_tracewr_log_fn)(void *arg, const char *msg);

struct mg_tracewr_stats {
	__u64 files;		/* files created (header written) */
	__u64 finished;		/* synced and renamed to .mgt */
	__u64 bytes;		/* bytes written to them, all of them */
	__u64 chunks;		/* data chunks written */
	__u64 records;		/* records in them (LOST records included) */
	/* Queue full: dropped by mg_tracewr_put. */
	__u64 drop_chunks;
	__u64 drop_bytes;	/* data bytes (framing not counted) */
	__u64 drop_records;
	/* Disk errors. */
	__u64 write_errors;	/* failed opens, writes, truncates, closes */
	__u64 err_chunks;	/* chunks dropped because of them */
	__u64 err_bytes;
	__u64 err_records;
	/* The queue. */
	__u64 queued_chunks;	/* accepted by mg_tracewr_put */
	size_t queue_bytes;	/* its size, framing included */
	size_t queue_used;	/* now */
	size_t queue_peak;	/* highest since open */
};

/*
 * magnetd's trace directory: dir, made 0700 when missing, opened without
 * following a symbolic link (O_NOFOLLOW, O_DIRECTORY), refused unless a
 * directory owned by the effective uid and writable by neither its group
 * nor others. Its descriptor, or -errno with why (a phrase: "owned by uid
 * 1000, not by uid 0 (magnetd's): refused") written into why.
 */
int mg_tracewr_dir_open(const char *dir, char *why, size_t size);

/*
 * Start a writer. dir names the directory (in messages and
 * mg_tracewr_path); dirfd is that directory, open, taken over by the
 * writer (closed by mg_tracewr_free, or here on failure), or -1: the writer
 * opens dir itself when it first needs it (it need not exist yet: the
 * opens fail, are counted, and are tried again). prefix is a non-empty
 * file name part without '/'. info is copied (probes included): every
 * file's header. probes_dir (may be NULL: the table never grows) is the
 * magnet directory whose probes file names probes added later.
 * max_queue_bytes (>= MG_TRACEWR_MIN_QUEUE, rounded down to
 * a multiple of 8) is allocated here, once. log may be NULL (errors are
 * then only counted). 0 with *out set; -EINVAL, -ENOMEM, or the error
 * creating the thread.
 */
int mg_tracewr_open(const char *dir, int dirfd, const char *prefix,
		    size_t max_file_bytes, size_t max_queue_bytes,
		    const struct mg_trace_info *info, const char *probes_dir,
		    mg_tracewr_log_fn log, void *log_arg, struct mg_tracewr **out);

/*
 * Queue a data chunk of cpu: len > 0 bytes, a multiple of 8, of whole
 * records (records are counted, for drops and trailers, by their size
 * fields). One thread may put at a time (a single producer). 0 queued;
 * -ENOBUFS dropped (counted); -EINVAL for a chunk the format cannot hold
 * (cpu >= info->ncpus, len 0 or unaligned; not counted). Never blocks.
 */
int mg_tracewr_put(struct mg_tracewr *w, __u32 cpu, const void *data,
		   size_t len);

/*
 * No more puts: the writer drains the queue, writes the last file's trailer
 * (trailer, or its own when NULL) and exits, and is joined. 0 when no disk
 * error ever happened, else -EIO (the stats say what). w stays valid for
 * mg_tracewr_stats until mg_tracewr_free.
 */
int mg_tracewr_close(struct mg_tracewr *w, const struct mg_trailer *trailer);

/* Closes first (no trailer of the caller's) when not closed yet. */
void mg_tracewr_free(struct mg_tracewr *w);

/* Any thread, any time: a consistent-enough snapshot (each field exact). */
void mg_tracewr_stats(const struct mg_tracewr *w, struct mg_tracewr_stats *st);

/*
 * Path of finished file number seq: DIR/PREFIX-NNNNNN.mgt, into buf (size
 * bytes); MG_TRACEWR_PART appended while it is written.
 */
int mg_tracewr_path(const struct mg_tracewr *w, unsigned int seq, char *buf,
		    size_t size);

/*
 * Test hook: hold true parks the writer before its next chunk (returning
 * once it is parked: nothing more leaves the queue), false lets it go on.
 * mg_tracewr_close ends a hold.
 */
void mg_tracewr_test_hold(struct mg_tracewr *w, bool hold);

#endif /* MAGNET_DAEMON_TRACEWR_H */
