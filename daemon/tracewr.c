// SPDX-License-Identifier: GPL-2.0
/*
 * Trace writer: a single-producer single-consumer byte ring between the
 * collection thread and a writer thread that appends to rotating trace
 * files. See tracewr.h.
 *
 * The ring. head (the writer's) and tail (the producer's) count bytes ever
 * consumed and queued; an entry at tail % size is an 8-byte frame (u32 len,
 * u32 cpu) and len data bytes, contiguous: when the end of the ring is too
 * short the producer fills it with a pad frame (cpu PAD_CPU) and starts
 * again at 0. The producer publishes tail (release), the writer head, so
 * each reads the other's bytes only once they are complete.
 *
 * Waking. The writer sets `sleeping` and checks the ring again before it
 * polls the eventfd; the producer stores tail and then reads `sleeping`,
 * both sequentially consistent, so one of them sees the other: no lost
 * wakeup, and a put makes a system call only when the writer sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "tracewr.h"

#define PAD_CPU		0xffffffffU
#define ERRNO_KINDS	256	/* errno values told apart when logging */
#define MAX_SKIP	(1U << 20)	/* taken names skipped in one go */

enum { OP_OPEN, OP_WRITE, OP_TRUNCATE, OP_CLOSE, OP_NR };

static const char *const op_name[OP_NR] = {
	[OP_OPEN] = "open", [OP_WRITE] = "write to",
	[OP_TRUNCATE] = "truncate", [OP_CLOSE] = "close",
};

/* Records of a chunk, by their size fields. */
struct walk {
	__u64 records;		/* all of them */
	__u64 events;		/* LOST records excluded */
	struct magnet_lost lost;
	__u64 max_ts;
	bool any;
};

struct mg_tracewr {
	/* The producer's. */
	alignas(64) _Atomic __u64 tail;
	_Atomic __u64 drop_chunks, drop_bytes, drop_records, queued_chunks;
	_Atomic __u64 queue_peak;

	/* The writer's. */
	alignas(64) _Atomic __u64 head;
	_Atomic int sleeping;
	_Atomic __u64 files, bytes, chunks, records;
	_Atomic __u64 write_errors, err_chunks, err_bytes, err_records;

	/* Shared, read-mostly. */
	alignas(64) char *ring;
	size_t size;
	int efd;
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
	char path[MG_TRACEWR_PATH_MAX];	/* of the current file */
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

static void wake(struct mg_tracewr *w)
{
	__u64 one = 1;

	/* Non-blocking; a full counter means a wakeup is pending anyway. */
	if (write(w->efd, &one, sizeof(one)) < 0)
		return;
}

int mg_tracewr_path(const struct mg_tracewr *w, unsigned int seq, char *buf,
		    size_t size)
{
	int n = snprintf(buf, size, "%s/%s-%06u" MG_TRACEWR_SUFFIX, w->dir,
			 w->prefix, seq);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
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
static int open_file(struct mg_tracewr *w)
{
	unsigned int skipped = 0;
	int fd, err;

	for (;;) {
		if (mg_tracewr_path(w, w->seq, w->path, sizeof(w->path))) {
			disk_error(w, OP_OPEN, ENAMETOOLONG);
			return -1;
		}
		fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			  0644);
		if (fd >= 0)
			break;
		/* Never clobber a trace: a taken name is skipped. */
		if (errno == EEXIST && ++skipped < MAX_SKIP) {
			w->seq++;
			continue;
		}
		disk_error(w, OP_OPEN, errno);
		return -1;
	}
	err = mg_trace_write_header(fd, &w->info);
	if (err) {
		disk_error(w, OP_WRITE, -err);
		close(fd);
		unlink(w->path);	/* ours (O_EXCL), and useless */
		return -1;
	}
	w->fd = fd;
	w->fsize = w->header_len;
	w->fchunks = 0;
	w->any_ts = false;
	w->max_ts = 0;
	w->nseen = 0;
	memset(w->pcpu, 0, w->info.ncpus * sizeof(*w->pcpu));
	atomic_fetch_add(&w->files, 1);
	atomic_fetch_add(&w->bytes, w->header_len);
	return 0;
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
	if (close(w->fd))
		disk_error(w, OP_CLOSE, errno);
	w->fd = -1;
	w->seq++;
}

static void write_chunk(struct mg_tracewr *w, __u32 cpu,
			const unsigned char *data, size_t len)
{
	struct mg_trailer_cpu *c = &w->pcpu[cpu];
	struct walk wk = { 0 };
	int err;

	walk(data, len, &wk);
	if (w->fd >= 0 && w->max_file && w->fchunks &&
	    w->fsize + MG_CHUNK_HEADER + len +
	    trailer_size(w->nseen + !c->bytes) > w->max_file)
		finish_file(w, NULL);
	if (w->fd < 0 && open_file(w)) {
		drop_err(w, len, wk.records);
		return;
	}
	err = mg_trace_write_chunk(w->fd, cpu, data, len);
	if (err) {
		disk_error(w, OP_WRITE, -err);
		drop_err(w, len, wk.records);
		cut_back(w);
		return;
	}
	w->fsize += MG_CHUNK_HEADER + len;
	w->fchunks++;
	if (!c->bytes) {
		c->cpu = cpu;
		w->nseen++;
	}
	c->records += wk.events;
	c->bytes += len;
	mg_lost_add(&c->lost, &wk.lost);
	if (wk.any && (!w->any_ts || wk.max_ts > w->max_ts)) {
		w->max_ts = wk.max_ts;
		w->any_ts = true;
	}
	atomic_fetch_add(&w->chunks, 1);
	atomic_fetch_add(&w->records, wk.records);
	atomic_fetch_add(&w->bytes, MG_CHUNK_HEADER + len);
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

static void sleep_on_empty(struct mg_tracewr *w, __u64 head)
{
	struct pollfd p = { .fd = w->efd, .events = POLLIN };
	__u64 v;

	atomic_store(&w->sleeping, 1);
	if (atomic_load(&w->tail) == head && !atomic_load(&w->stop) &&
	    !atomic_load(&w->hold)) {
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	}
	atomic_store(&w->sleeping, 0);
	/* Reset the counter; EAGAIN when nothing was written. */
	if (read(w->efd, &v, sizeof(v)) < 0)
		return;
}

static void *writer_main(void *arg)
{
	struct mg_tracewr *w = arg;

	for (;;) {
		__u64 head, tail, off;
		__u32 len, cpu;
		int stopping;

		if (atomic_load(&w->hold) && !atomic_load(&w->stop))
			park(w);
		stopping = atomic_load(&w->stop);
		head = atomic_load_explicit(&w->head, memory_order_relaxed);
		tail = atomic_load(&w->tail);
		if (head == tail) {
			if (stopping)
				break;
			sleep_on_empty(w, head);
			continue;
		}
		off = head % w->size;
		len = get32(w->ring + off);
		cpu = get32(w->ring + off + 4);
		if (cpu == PAD_CPU) {
			head += w->size - off;
		} else {
			write_chunk(w, cpu, (unsigned char *)w->ring + off +
				    MG_TRACEWR_CHUNK_OVERHEAD, len);
			head += MG_TRACEWR_CHUNK_OVERHEAD + len;
		}
		atomic_store_explicit(&w->head, head, memory_order_release);
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
	if (w->efd >= 0)
		close(w->efd);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->ring);
	free(w->dir);
	free(w->prefix);
	free((void *)w->info.probes);
	free(w->pcpu);
	free(w->scratch);
	free(w);
}

int mg_tracewr_open(const char *dir, const char *prefix, size_t max_file_bytes,
		    size_t max_queue_bytes, const struct mg_trace_info *info,
		    mg_tracewr_log_fn log, void *log_arg,
		    struct mg_tracewr **out)
{
	struct mg_tracewr *w;
	sigset_t all, old;
	size_t hlen;
	char *probes = NULL;
	int err;

	*out = NULL;
	if (!dir || !*dir || !prefix || !*prefix || strchr(prefix, '/') ||
	    !info || !info->ncpus || info->ncpus > MG_TRACE_MAX_CPUS ||
	    (info->probes_len && !info->probes) ||
	    max_queue_bytes < MG_TRACEWR_MIN_QUEUE)
		return -EINVAL;
	hlen = (MG_TRACE_FIXED_HEADER + info->probes_len + 7) & ~(size_t)7;
	if (hlen > UINT32_MAX)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->efd = -1;
	w->fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->size = max_queue_bytes & ~(size_t)7;
	w->ring = malloc(w->size);
	w->dir = strdup(dir);
	w->prefix = strdup(prefix);
	w->pcpu = calloc(info->ncpus, sizeof(*w->pcpu));
	w->scratch = calloc(info->ncpus, sizeof(*w->scratch));
	if (info->probes_len) {
		probes = malloc(info->probes_len);
		if (probes)
			memcpy(probes, info->probes, info->probes_len);
	}
	if (!w->ring || !w->dir || !w->prefix || !w->pcpu || !w->scratch ||
	    (info->probes_len && !probes)) {
		free(probes);
		destroy(w);
		return -ENOMEM;
	}
	/* Fault the ring in now, not in the first puts. */
	memset(w->ring, 0, w->size);
	w->info = *info;
	w->info.probes = probes;
	w->header_len = hlen;
	w->max_file = max_file_bytes;
	w->log = log;
	w->log_arg = log_arg;
	if (mg_tracewr_path(w, 999999, w->path, sizeof(w->path))) {
		destroy(w);
		return -EINVAL;
	}
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		err = -errno;
		destroy(w);
		return err;
	}
	/* The writer takes no signals (SIGXFSZ stays with its write). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&w->thread, NULL, writer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		destroy(w);
		return err;
	}
	*out = w;
	return 0;
}

int mg_tracewr_put(struct mg_tracewr *w, __u32 cpu, const void *data,
		   size_t len)
{
	size_t need = MG_TRACEWR_CHUNK_OVERHEAD + len, off, pad, used;
	__u64 tail, head;
	__u32 frame[2];

	if (!len || len % MAGNET_RECORD_ALIGN || len > MG_TRACEWR_MAX_CHUNK ||
	    cpu >= w->info.ncpus || !data)
		return -EINVAL;
	tail = atomic_load_explicit(&w->tail, memory_order_relaxed);
	head = atomic_load_explicit(&w->head, memory_order_acquire);
	used = tail - head;
	off = tail % w->size;
	pad = w->size - off < need ? w->size - off : 0;
	if (need > w->size || need + pad > w->size - used) {
		atomic_fetch_add_explicit(&w->drop_chunks, 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&w->drop_bytes, len,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&w->drop_records,
					  walk(data, len, NULL),
					  memory_order_relaxed);
		return -ENOBUFS;
	}
	if (pad) {
		frame[0] = 0;
		frame[1] = PAD_CPU;
		memcpy(w->ring + off, frame, sizeof(frame));
		tail += pad;
		off = 0;
	}
	frame[0] = len;
	frame[1] = cpu;
	memcpy(w->ring + off, frame, sizeof(frame));
	memcpy(w->ring + off + MG_TRACEWR_CHUNK_OVERHEAD, data, len);
	tail += need;
	atomic_store(&w->tail, tail);
	atomic_fetch_add_explicit(&w->queued_chunks, 1, memory_order_relaxed);
	used = tail - head;
	if (used > atomic_load_explicit(&w->queue_peak, memory_order_relaxed))
		atomic_store_explicit(&w->queue_peak, used,
				      memory_order_relaxed);
	if (atomic_load(&w->sleeping))
		wake(w);
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
		wake(w);
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
	__u64 head, tail;

	memset(st, 0, sizeof(*st));
	st->files = atomic_load(&m->files);
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
	st->queue_bytes = w->size;
	head = atomic_load(&m->head);
	tail = atomic_load(&m->tail);
	st->queue_used = tail > head ? tail - head : 0;
	st->queue_peak = atomic_load(&m->queue_peak);
}

void mg_tracewr_test_hold(struct mg_tracewr *w, bool hold)
{
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->hold, hold);
	if (hold) {
		wake(w);
		while (!w->parked && !w->exited)
			pthread_cond_wait(&w->cond, &w->lock);
	} else {
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
}
