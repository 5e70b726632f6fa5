// SPDX-License-Identifier: GPL-2.0
/*
 * Trace writer: a chunk queue (chunkq.h) between the collection thread and
 * a writer thread that appends to rotating trace files. See tracewr.h.
 *
 * The queue is made with MG_CHUNKQ_WHOLE: a chunk may take all of it, not
 * only half, since tracewr.h sizes nothing to the chunks and promises that
 * whatever does not fit is a counted drop. MG_CHUNKQ_PREFAULT keeps page
 * faults out of the puts.
 *
 * Waking. The writer sleeps in poll on the queue's fd after mg_chunkq_arm,
 * so a put makes a system call only to wake it. Stop and hold are stored
 * before mg_chunkq_wake and checked after arm, so a writer going to sleep
 * either sees them or is woken by them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "chunkq.h"
#include "record.h"
#include "sensor.h"
#include "tasks.h"
#include "tracewr.h"

_Static_assert(MG_TRACEWR_CHUNK_OVERHEAD == MG_CHUNKQ_OVERHEAD,
	       "tracewr.h documents the queue's framing");

#define ERRNO_KINDS	256	/* errno values told apart when logging */
#define MAX_SKIP	(1U << 20)	/* taken names skipped in one go */
/* One CPU's TASK records at most: a replay chunk. */
#define MG_TASK_REPLAY_MAX	(MAGNET_TASK_SLOTS * \
				 (MAGNET_RECORD_HEADER + sizeof(struct magnet_task)))

enum { OP_OPEN, OP_WRITE, OP_TRUNCATE, OP_CLOSE, OP_SYNC, OP_RENAME,
       OP_SYNC_DIR, OP_NR };

static const char *const op_name[OP_NR] = {
	[OP_OPEN] = "open", [OP_WRITE] = "write to",
	[OP_TRUNCATE] = "truncate", [OP_CLOSE] = "close",
	[OP_SYNC] = "sync", [OP_RENAME] = "rename",
	[OP_SYNC_DIR] = "sync the directory entry of",
};

/* Records of a chunk, by their size fields. */
struct walk {
	__u64 records;		/* all of them */
	__u64 events;		/* LOST and TASK records excluded */
	__u64 tasks;		/* TASK records */
	struct magnet_lost lost;
	__u64 max_ts;
	bool any;
};

struct mg_tracewr {
	/* The producer's. */
	alignas(64) _Atomic __u64 drop_chunks, drop_bytes, drop_records;
	_Atomic __u64 queued_chunks;

	/* The writer's. */
	alignas(64) _Atomic __u64 files, finished, bytes, chunks, records;
	_Atomic __u64 write_errors, err_chunks, err_bytes, err_records;

	/* Shared, read-mostly. */
	alignas(64) struct mg_chunkq *q;
	size_t gather;		/* bytes that end a batch early */
	_Atomic int stop;
	_Atomic int hold;

	pthread_mutex_t lock;	/* parked, exited; hold and stop changes */
	pthread_cond_t cond;
	bool parked, exited;
	pthread_t thread;
	bool closed;
	const struct mg_trailer *final;	/* close's trailer, NULL: own */

	/* Writer thread only (and close after the join). */
	char *dir, *prefix;
	int dirfd;		/* dir, -1 not open yet */
	size_t max_file;
	struct mg_trace_info info;
	size_t header_len;
	mg_tracewr_log_fn log;
	void *log_arg;
	unsigned int seq;	/* number of the next file to create */
	int fd;			/* current file, -1 none */
	__u64 fsize;		/* its bytes, the trailer excepted */
	__u64 fchunks;
	__u64 max_ts;		/* its largest record timestamp */
	bool any_ts;
	unsigned int nseen;	/* CPUs with data in it */
	struct mg_trailer_cpu *pcpu;	/* info.ncpus: its per-CPU counts */
	struct mg_trailer_cpu *scratch;	/* info.ncpus: a trailer's entries */
	char path[MG_TRACEWR_PATH_MAX];	/* of the current file (.part) */
	/*
	 * The threads the stream named so far (a mirror of the module's
	 * slots, fed every chunk taken, in order), replayed at the start of
	 * each file so that every file names its records on its own; each
	 * CPU's replay is stamped with that CPU's last timestamp, keeping
	 * its stream in order. Reset when the producer dropped chunks (a
	 * TASK record may have gone with them): unknown, never stale.
	 */
	struct mg_tasks *tasks;
	__u64 *cpu_ts;			/* info.ncpus */
	__u64 tasks_drops;		/* drop_chunks when last reset */
	unsigned char *replay;		/* MG_TASK_REPLAY_MAX: one CPU's */
	size_t replay_len;
	__u32 replay_cpu;
	/*
	 * The probe table: the open's, and the lines of probes added since,
	 * read again from probes_dir/probes before the first chunk with a
	 * probe id not in it (once per id). A file's header holds all of it;
	 * lines added later go into a PRBS chunk before that chunk.
	 */
	char *probes_dir;		/* NULL: never read again */
	struct mg_probe_watch *names;
	size_t file_names;		/* bytes of the table the file holds */
	__u64 logged[OP_NR][ERRNO_KINDS / 64];
	bool failed;
};

static inline __u32 get32(const void *p)
{
	__u32 v;

	memcpy(&v, p, 4);
	return v;
}

static inline __u64 get64(const void *p)
{
	__u64 v;

	memcpy(&v, p, 8);
	return v;
}

/* Count records by their size fields; stops at one that cannot be whole. */
static __u64 walk(const unsigned char *data, size_t len, struct walk *out)
{
	__u64 n = 0;
	size_t off = 0;

	while (len - off >= MAGNET_RECORD_HEADER) {
		const unsigned char *r = data + off;
		__u32 size = get32(r + offsetof(struct magnet_record, size));

		if (size < MAGNET_RECORD_HEADER || size % MAGNET_RECORD_ALIGN ||
		    size > len - off)
			break;
		n++;
		if (out) {
			__u16 id;
			__u64 ts = get64(r + offsetof(struct magnet_record,
						      timestamp));

			memcpy(&id, r + offsetof(struct magnet_record, event_id),
			       sizeof(id));
			if (id == MAGNET_EVENT_LOST &&
			    size >= MAGNET_RECORD_HEADER +
				    sizeof(struct magnet_lost)) {
				struct magnet_lost l;

				memcpy(&l, r + MAGNET_RECORD_HEADER, sizeof(l));
				mg_lost_add(&out->lost, &l);
			} else if (id == MAGNET_EVENT_TASK || id == MAGNET_EVENT_JOB_LOST) {
				out->tasks++;	/* metadata: no event */
			} else {
				out->events++;
			}
			if (!out->any || ts > out->max_ts)
				out->max_ts = ts;
			out->any = true;
		}
		off += size;
	}
	if (out)
		out->records = n;
	return n;
}

static size_t trailer_size(unsigned int ncpus)
{
	return MG_CHUNK_HEADER + MG_TRAILER_HEADER +
	       (size_t)ncpus * MG_TRAILER_CPU_SIZE;
}

static __u64 realtime_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Wall-clock ns of trace-clock time ts (docs/trace-format.md), or now. */
static __u64 realtime_of(const struct mg_trace_info *in, __u64 ts)
{
	__s64 d = (__s64)(ts - in->start_clock_ns);

	if (!strcmp(in->clock, "mono"))
		return in->start_realtime_ns + d;
	if (!strcmp(in->clock, "tsc") && in->tsc_khz) {
		__s64 q = d / in->tsc_khz, r = d % in->tsc_khz;

		return in->start_realtime_ns + q * 1000000 +
		       r * 1000000 / in->tsc_khz;
	}
	return realtime_now();
}

int mg_tracewr_path(const struct mg_tracewr *w, unsigned int seq, char *buf,
		    size_t size)
{
	int n = snprintf(buf, size, "%s/%s-%06u" MG_TRACEWR_SUFFIX, w->dir,
			 w->prefix, seq);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* PREFIX-NNNNNN.mgt, or the .part being written, in the directory. */
static int file_name(const struct mg_tracewr *w, unsigned int seq, bool part,
		     char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s-%06u" MG_TRACEWR_SUFFIX "%s", w->prefix,
			 seq, part ? MG_TRACEWR_PART : "");

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* fsync the directory that holds path. */
static int sync_parent(const char *path)
{
	char parent[MG_TRACEWR_PATH_MAX], *slash;
	int fd, ret;

	snprintf(parent, sizeof(parent), "%s", path);
	while ((slash = strrchr(parent, '/')) && slash > parent && !slash[1])
		*slash = '\0';		/* trailing slashes */
	slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else
		slash[slash == parent] = '\0';	/* "/x": "/" */
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = fsync(fd);
	close(fd);
	return ret;
}

int mg_tracewr_dir_open(const char *dir, char *why, size_t size)
{
	bool made = !mkdir(dir, 0700);
	struct stat st;
	int fd, err;

	if (!made && errno != EEXIST) {
		err = errno;
		snprintf(why, size, "cannot make it: %s", strerror(err));
		return -err;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (!lstat(dir, &st) && S_ISLNK(st.st_mode)) {
			snprintf(why, size, "a symbolic link: refused (name the directory itself)");
			err = ELOOP;
		} else if (err == ENOTDIR)
			snprintf(why, size, "not a directory");
		else
			snprintf(why, size, "%s", strerror(err));
		return -err;
	}
	/* Made: 0700 whatever the umask took away, its name durable. */
	if ((made && (fchmod(fd, 0700) || sync_parent(dir))) || fstat(fd, &st)) {
		err = errno;
		snprintf(why, size, "%s", strerror(err));
		goto fail;
	}
	err = EPERM;
	if (st.st_uid != geteuid()) {
		snprintf(why, size, "owned by uid %u, not by uid %u (magnetd's): refused",
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
		goto fail;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, size, "writable by its group or others (mode %04o): refused",
			 (unsigned int)(st.st_mode & 07777));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -err;
}

/* Count a disk error; log the first of its kind. */
static void disk_error(struct mg_tracewr *w, int op, int err)
{
	unsigned int e = err > 0 && err < ERRNO_KINDS ? err : ERRNO_KINDS - 1;
	char msg[MG_TRACEWR_PATH_MAX + 256];

	atomic_fetch_add(&w->write_errors, 1);
	w->failed = true;
	if (w->logged[op][e / 64] & (1ULL << (e % 64)))
		return;
	w->logged[op][e / 64] |= 1ULL << (e % 64);
	if (!w->log)
		return;
	snprintf(msg, sizeof(msg),
		 "trace writer: cannot %s %s: %s (logged once; such errors are counted, their chunks dropped)",
		 op_name[op], w->path, strerror(err));
	w->log(w->log_arg, msg);
}

static void drop_err(struct mg_tracewr *w, size_t len, __u64 records)
{
	atomic_fetch_add(&w->err_chunks, 1);
	atomic_fetch_add(&w->err_bytes, len);
	atomic_fetch_add(&w->err_records, records);
}

/* Create the next file and write its header. 0 or -1 (counted). */
static int write_replay(struct mg_tracewr *w);
static void cut_back(struct mg_tracewr *w);

static int open_file(struct mg_tracewr *w)
{
	char name[NAME_MAX + 1], part[NAME_MAX + 1];
	unsigned int skipped = 0;
	struct stat st;
	int fd, err;

	/* The header holds the whole table, lines added on the way too. */
	w->info.probes = mg_probe_watch_text(w->names, &w->info.probes_len);
	w->header_len = (MG_TRACE_FIXED_HEADER + w->info.probes_len + 7) &
			~(size_t)7;
	if (w->dirfd < 0) {
		w->dirfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (w->dirfd < 0) {
			snprintf(w->path, sizeof(w->path), "%s", w->dir);
			disk_error(w, OP_OPEN, errno);
			return -1;
		}
	}
	for (;;) {
		if (file_name(w, w->seq, false, name, sizeof(name)) ||
		    file_name(w, w->seq, true, part, sizeof(part)) ||
		    snprintf(w->path, sizeof(w->path), "%s/%s", w->dir, part) >=
		    (int)sizeof(w->path)) {
			disk_error(w, OP_OPEN, ENAMETOOLONG);
			return -1;
		}
		/* Never clobber a trace: a taken name is skipped. */
		if (fstatat(w->dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
			fd = openat(w->dirfd, part, O_WRONLY | O_CREAT | O_EXCL |
				    O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd >= 0)
				break;
			if (errno != EEXIST) {
				disk_error(w, OP_OPEN, errno);
				return -1;
			}
		}
		if (++skipped >= MAX_SKIP) {
			disk_error(w, OP_OPEN, EEXIST);
			return -1;
		}
		w->seq++;
	}
	/* Root's alone, whatever the umask; its name made durable. */
	if (fchmod(fd, 0600))
		disk_error(w, OP_OPEN, errno);
	if (fsync(w->dirfd))
		disk_error(w, OP_SYNC_DIR, errno);
	err = mg_trace_write_header(fd, &w->info);
	if (err) {
		disk_error(w, OP_WRITE, -err);
		close(fd);
		unlinkat(w->dirfd, part, 0);	/* ours (O_EXCL), and useless */
		return -1;
	}
	w->fd = fd;
	w->fsize = w->header_len;
	w->file_names = w->info.probes_len;
	w->fchunks = 0;
	w->any_ts = false;
	w->max_ts = 0;
	w->nseen = 0;
	memset(w->pcpu, 0, w->info.ncpus * sizeof(*w->pcpu));
	atomic_fetch_add(&w->files, 1);
	atomic_fetch_add(&w->bytes, w->header_len);
	/* Failing, the file goes on without (its names are then unknown). */
	if (write_replay(w)) {
		cut_back(w);
		if (w->fd < 0)
			return -1;
	}
	return 0;
}

/*
 * A finished file, synced, takes its final name (never over another
 * file), and the name is made durable. Failing, it stays a .part.
 */
static void publish(struct mg_tracewr *w)
{
	char name[NAME_MAX + 1], part[NAME_MAX + 1];

	if (file_name(w, w->seq, false, name, sizeof(name)) ||
	    file_name(w, w->seq, true, part, sizeof(part)))
		return;		/* opened under that name: cannot be */
	if (renameat2(w->dirfd, part, w->dirfd, name, RENAME_NOREPLACE)) {
		/* A file system without it: a link cannot clobber either. */
		if ((errno != EINVAL && errno != ENOSYS) ||
		    linkat(w->dirfd, part, w->dirfd, name, 0)) {
			disk_error(w, OP_RENAME, errno);
			return;
		}
		unlinkat(w->dirfd, part, 0);
	}
	if (fsync(w->dirfd))
		disk_error(w, OP_SYNC_DIR, errno);
	atomic_fetch_add(&w->finished, 1);
}

/* Cut the file back to its last whole chunk; on failure give it up. */
static void cut_back(struct mg_tracewr *w)
{
	if (!ftruncate(w->fd, w->fsize) &&
	    lseek(w->fd, w->fsize, SEEK_SET) == (off_t)w->fsize)
		return;
	disk_error(w, OP_TRUNCATE, errno);
	close(w->fd);		/* a torn tail: the reader reports it */
	w->fd = -1;
	w->seq++;
}

/* Write the trailer (t, or the file's own) and close the current file. */
static void finish_file(struct mg_tracewr *w, const struct mg_trailer *t)
{
	struct mg_trailer own = { 0 };
	bool synced;
	int err;

	if (!t) {
		__u32 cpu, n = 0;

		for (cpu = 0; cpu < w->info.ncpus; cpu++)
			if (w->pcpu[cpu].bytes)
				w->scratch[n++] = w->pcpu[cpu];
		own.ncpus = n;
		own.cpu = w->scratch;
		own.stop_clock_ns = w->any_ts ? w->max_ts
					      : w->info.start_clock_ns;
		own.stop_realtime_ns = realtime_of(&w->info,
						   own.stop_clock_ns);
		t = &own;
	}
	err = mg_trace_write_trailer(w->fd, t);
	if (err) {
		disk_error(w, OP_WRITE, -err);
		/* Without a trailer the file is still a valid trace. */
		if (ftruncate(w->fd, w->fsize))
			disk_error(w, OP_TRUNCATE, errno);
	} else {
		atomic_fetch_add(&w->bytes, trailer_size(t->ncpus));
	}
	/* Its data on the disk before its name says it is whole. */
	synced = !fdatasync(w->fd);
	if (!synced)
		disk_error(w, OP_SYNC, errno);
	if (close(w->fd))
		disk_error(w, OP_CLOSE, errno);
	w->fd = -1;
	if (synced)
		publish(w);
	w->seq++;
}

/* Append a chunk to the current file and count it there. */
static int append(struct mg_tracewr *w, __u32 cpu, const unsigned char *data,
		  size_t len, const struct walk *wk)
{
	struct mg_trailer_cpu *c = &w->pcpu[cpu];
	int err = mg_trace_write_chunk(w->fd, cpu, data, len);

	if (err) {
		disk_error(w, OP_WRITE, -err);
		return err;
	}
	w->fsize += MG_CHUNK_HEADER + len;
	w->fchunks++;
	if (!c->bytes) {
		c->cpu = cpu;
		w->nseen++;
	}
	c->records += wk->events;
	c->bytes += len;
	mg_lost_add(&c->lost, &wk->lost);
	if (wk->any && (!w->any_ts || wk->max_ts > w->max_ts)) {
		w->max_ts = wk->max_ts;
		w->any_ts = true;
	}
	atomic_fetch_add(&w->chunks, 1);
	atomic_fetch_add(&w->records, wk->records);
	atomic_fetch_add(&w->bytes, MG_CHUNK_HEADER + len);
	return 0;
}

/* One CPU's replayed TASK records: a chunk of that CPU. */
static int flush_replay(struct mg_tracewr *w)
{
	struct walk wk = { 0 };
	size_t len = w->replay_len;

	if (!len)
		return 0;
	walk(w->replay, len, &wk);
	w->replay_len = 0;
	return append(w, w->replay_cpu, w->replay, len, &wk);
}

static int replay_one(const struct magnet_record *r, void *arg)
{
	struct mg_tracewr *w = arg;
	__u64 ts;
	int err;

	if (r->cpu >= w->info.ncpus)
		return 0;
	if (w->replay_len && (r->cpu != w->replay_cpu ||
			      w->replay_len + r->size > MG_TASK_REPLAY_MAX)) {
		err = flush_replay(w);
		if (err)
			return err;
	}
	w->replay_cpu = r->cpu;
	memcpy(w->replay + w->replay_len, r, r->size);
	ts = w->cpu_ts[r->cpu];
	memcpy(w->replay + w->replay_len +
	       offsetof(struct magnet_record, timestamp), &ts, sizeof(ts));
	w->replay_len += r->size;
	return 0;
}

/* At the start of a file: the TASK records of every thread known. */
static int write_replay(struct mg_tracewr *w)
{
	__u64 drops = atomic_load(&w->drop_chunks);
	int err;

	if (drops != w->tasks_drops) {
		struct mg_tasks *t = mg_tasks_new();

		if (!t)
			return -ENOMEM;
		mg_tasks_free(w->tasks);
		w->tasks = t;
		w->tasks_drops = drops;
	}
	w->replay_len = 0;
	err = mg_tasks_replay(w->tasks, 0, replay_one, w);
	if (!err)
		err = flush_replay(w);
	return err;
}

/* Feed the mirror a chunk of the stream, in order. */
static void feed_tasks(struct mg_tracewr *w, __u32 cpu,
		       const unsigned char *data, size_t len,
		       const struct walk *wk)
{
	const struct magnet_record *r;
	size_t off = 0;

	if (wk->max_ts > w->cpu_ts[cpu])
		w->cpu_ts[cpu] = wk->max_ts;
	if (!wk->tasks)
		return;
	while ((r = mg_record_step(data, len, &off)))
		if (mg_record_is_task(r) && !mg_record_check(data, len, off - r->size))
			mg_tasks_feed(w->tasks, r);	/* ENOMEM: unnamed */
}

/* A probe id never seen: read the table again (names are best effort). */
static void refresh_probes(struct mg_tracewr *w, const unsigned char *data,
			   size_t len)
{
	size_t plen = 0, added;
	char *text = mg_sensor_read(w->probes_dir, "probes", &plen);

	mg_probe_watch_update(w->names, text, text ? plen : 0, data, len,
			      &added);
	free(text);
}

/* Size of the PRBS chunk the current file still needs, 0 if none. */
static size_t names_pending(const struct mg_tracewr *w)
{
	size_t len;

	mg_probe_watch_text(w->names, &len);
	if (w->fd < 0 || w->file_names >= len)
		return 0;
	return MG_CHUNK_HEADER + ((len - w->file_names + 7) & ~(size_t)7);
}

/* The table's lines the current file lacks, as a PRBS chunk. */
static int write_names(struct mg_tracewr *w)
{
	size_t n = names_pending(w), len;
	const char *text = mg_probe_watch_text(w->names, &len);
	int err;

	if (!n)
		return 0;
	err = mg_trace_write_probes(w->fd, text + w->file_names,
				    len - w->file_names);
	if (err) {
		disk_error(w, OP_WRITE, -err);
		return err;
	}
	w->file_names = len;
	w->fsize += n;
	atomic_fetch_add(&w->bytes, n);
	return 0;
}

static void write_chunk(struct mg_tracewr *w, __u32 cpu,
			const unsigned char *data, size_t len)
{
	struct mg_trailer_cpu *c = &w->pcpu[cpu];
	struct walk wk = { 0 };
	int err;

	walk(data, len, &wk);
	if (w->probes_dir && mg_probe_watch_need(w->names, data, len))
		refresh_probes(w, data, len);
	if (w->fd >= 0 && w->max_file && w->fchunks &&
	    w->fsize + names_pending(w) + MG_CHUNK_HEADER + len +
	    trailer_size(w->nseen + !c->bytes) > w->max_file)
		finish_file(w, NULL);
	if (w->fd < 0 && open_file(w)) {
		drop_err(w, len, wk.records);
		feed_tasks(w, cpu, data, len, &wk);
		return;
	}
	/* Failing, the chunk goes on without; the next one tries again. */
	if (write_names(w)) {
		cut_back(w);
		if (w->fd < 0) {
			drop_err(w, len, wk.records);
			feed_tasks(w, cpu, data, len, &wk);
			return;
		}
	}
	err = append(w, cpu, data, len, &wk);
	if (err) {
		drop_err(w, len, wk.records);
		cut_back(w);
	}
	/* Written or not, the stream named its threads. */
	feed_tasks(w, cpu, data, len, &wk);
}

/* Test hook: wait while held (close ends it). */
static void park(struct mg_tracewr *w)
{
	pthread_mutex_lock(&w->lock);
	w->parked = true;
	pthread_cond_broadcast(&w->cond);
	while (atomic_load(&w->hold) && !atomic_load(&w->stop))
		pthread_cond_wait(&w->cond, &w->lock);
	w->parked = false;
	pthread_mutex_unlock(&w->lock);
}

static void sleep_on_empty(struct mg_tracewr *w)
{
	struct pollfd p = { .fd = mg_chunkq_fd(w->q), .events = POLLIN };

	/* Not armed: a chunk came in since the peek. */
	if (!mg_chunkq_arm(w->q))
		return;
	/* After arm: a stop or hold stored before its wake is seen here. */
	if (atomic_load(&w->stop) || atomic_load(&w->hold))
		return;
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
}

/*
 * Woken by a chunk: let more come (tracewr.h, Batches). A stop or hold
 * wakes it at once.
 */
static void gather(struct mg_tracewr *w)
{
	struct pollfd p = { .fd = mg_chunkq_fd(w->q), .events = POLLIN };

	if (!mg_chunkq_arm_batch(w->q, w->gather))
		return;
	if (atomic_load(&w->stop) || atomic_load(&w->hold))
		return;
	while (poll(&p, 1, MG_TRACEWR_GATHER_MS) < 0 && errno == EINTR)
		;
}

static void *writer_main(void *arg)
{
	struct mg_tracewr *w = arg;
	bool slept = false;

	for (;;) {
		const void *data;
		size_t len;
		__u32 cpu;
		int stopping;

		if (atomic_load(&w->hold) && !atomic_load(&w->stop))
			park(w);
		/* Before the peek: every put before close is then seen. */
		stopping = atomic_load(&w->stop);
		if (mg_chunkq_peek(w->q, &cpu, &data, &len)) {
			if (stopping)
				break;
			sleep_on_empty(w);
			slept = true;
			continue;
		}
		if (slept && !stopping) {
			slept = false;
			gather(w);
		}
		write_chunk(w, cpu, data, len);
		mg_chunkq_pop(w->q);
	}
	/* The last file always gets the trailer, even an empty trace. */
	if (w->fd >= 0 || !open_file(w))
		finish_file(w, w->final);
	pthread_mutex_lock(&w->lock);
	w->exited = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void destroy(struct mg_tracewr *w)
{
	mg_chunkq_free(w->q);
	if (w->dirfd >= 0)
		close(w->dirfd);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->dir);
	free(w->prefix);
	mg_probe_watch_free(w->names);
	free(w->probes_dir);
	free(w->pcpu);
	free(w->scratch);
	mg_tasks_free(w->tasks);
	free(w->cpu_ts);
	free(w->replay);
	free(w);
}

int mg_tracewr_open(const char *dir, int dirfd, const char *prefix,
		    size_t max_file_bytes, size_t max_queue_bytes,
		    const struct mg_trace_info *info, const char *probes_dir,
		    mg_tracewr_log_fn log, void *log_arg, struct mg_tracewr **out)
{
	char name[NAME_MAX + 1];
	struct mg_tracewr *w;
	sigset_t all, old;
	size_t hlen;
	int err;

	*out = NULL;
	if (!dir || !*dir || !prefix || !*prefix || strchr(prefix, '/') ||
	    !info || !info->ncpus || info->ncpus > MG_TRACE_MAX_CPUS ||
	    (info->probes_len && !info->probes) ||
	    max_queue_bytes < MG_TRACEWR_MIN_QUEUE) {
		err = -EINVAL;
		goto fail_args;
	}
	hlen = (MG_TRACE_FIXED_HEADER + info->probes_len + 7) & ~(size_t)7;
	if (hlen > UINT32_MAX) {
		err = -EINVAL;
		goto fail_args;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		err = -ENOMEM;
		goto fail_args;
	}
	w->fd = -1;
	w->dirfd = dirfd;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->dir = strdup(dir);
	w->prefix = strdup(prefix);
	w->pcpu = calloc(info->ncpus, sizeof(*w->pcpu));
	w->scratch = calloc(info->ncpus, sizeof(*w->scratch));
	w->tasks = mg_tasks_new();
	w->cpu_ts = calloc(info->ncpus, sizeof(*w->cpu_ts));
	w->replay = malloc(MG_TASK_REPLAY_MAX);
	w->names = mg_probe_watch_new(info->probes, info->probes_len);
	if (probes_dir)
		w->probes_dir = strdup(probes_dir);
	if (!w->dir || !w->prefix || !w->pcpu || !w->scratch ||
	    !w->tasks || !w->cpu_ts || !w->replay || !w->names ||
	    (probes_dir && !w->probes_dir)) {
		destroy(w);
		return -ENOMEM;
	}
	w->info = *info;
	w->info.probes = mg_probe_watch_text(w->names, &w->info.probes_len);
	w->header_len = hlen;
	w->max_file = max_file_bytes;
	w->log = log;
	w->log_arg = log_arg;
	if (mg_tracewr_path(w, 999999, w->path, sizeof(w->path)) ||
	    file_name(w, 999999, true, name, sizeof(name)) ||
	    strlen(w->path) + strlen(MG_TRACEWR_PART) >= sizeof(w->path)) {
		destroy(w);
		return -EINVAL;
	}
	err = mg_chunkq_create_flags(max_queue_bytes, MG_CHUNKQ_WHOLE |
				     MG_CHUNKQ_PREFAULT, &w->q);
	if (err) {
		destroy(w);
		return err;
	}
	w->gather = mg_chunkq_size(w->q) / 8;
	if (w->gather > (1U << 20))
		w->gather = 1U << 20;
	/* The writer takes no signals (SIGXFSZ stays with its write). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&w->thread, NULL, writer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		destroy(w);
		return err;
	}
	pthread_setname_np(w->thread, "magnetd-trace");
	*out = w;
	return 0;
fail_args:
	if (dirfd >= 0)
		close(dirfd);
	return err;
}

int mg_tracewr_put(struct mg_tracewr *w, __u32 cpu, const void *data,
		   size_t len)
{
	if (!len || len % MAGNET_RECORD_ALIGN || len > MG_TRACEWR_MAX_CHUNK ||
	    cpu >= w->info.ncpus || !data)
		return -EINVAL;
	/*
	 * The format holds the chunk, so any refusal (-EINVAL too: larger
	 * than the whole queue) is a queue without room for it.
	 */
	if (mg_chunkq_put(w->q, cpu, data, len)) {
		atomic_fetch_add_explicit(&w->drop_chunks, 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&w->drop_bytes, len,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&w->drop_records,
					  walk(data, len, NULL),
					  memory_order_relaxed);
		return -ENOBUFS;
	}
	atomic_fetch_add_explicit(&w->queued_chunks, 1, memory_order_relaxed);
	return 0;
}

int mg_tracewr_close(struct mg_tracewr *w, const struct mg_trailer *trailer)
{
	if (!w->closed) {
		w->final = trailer;
		pthread_mutex_lock(&w->lock);
		atomic_store(&w->stop, 1);
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		mg_chunkq_wake(w->q);
		pthread_join(w->thread, NULL);
		w->final = NULL;
		w->closed = true;
	}
	return w->failed ? -EIO : 0;
}

void mg_tracewr_free(struct mg_tracewr *w)
{
	if (!w)
		return;
	mg_tracewr_close(w, NULL);
	destroy(w);
}

void mg_tracewr_stats(const struct mg_tracewr *w, struct mg_tracewr_stats *st)
{
	struct mg_tracewr *m = (struct mg_tracewr *)w;

	memset(st, 0, sizeof(*st));
	st->files = atomic_load(&m->files);
	st->finished = atomic_load(&m->finished);
	st->bytes = atomic_load(&m->bytes);
	st->chunks = atomic_load(&m->chunks);
	st->records = atomic_load(&m->records);
	st->drop_chunks = atomic_load(&m->drop_chunks);
	st->drop_bytes = atomic_load(&m->drop_bytes);
	st->drop_records = atomic_load(&m->drop_records);
	st->write_errors = atomic_load(&m->write_errors);
	st->err_chunks = atomic_load(&m->err_chunks);
	st->err_bytes = atomic_load(&m->err_bytes);
	st->err_records = atomic_load(&m->err_records);
	st->queued_chunks = atomic_load(&m->queued_chunks);
	st->queue_bytes = mg_chunkq_size(w->q);
	st->queue_used = mg_chunkq_used(w->q);
	st->queue_peak = mg_chunkq_peak(w->q);
}

void mg_tracewr_test_hold(struct mg_tracewr *w, bool hold)
{
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->hold, hold);
	if (hold) {
		mg_chunkq_wake(w->q);
		while (!w->parked && !w->exited)
			pthread_cond_wait(&w->cond, &w->lock);
	} else {
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
}
