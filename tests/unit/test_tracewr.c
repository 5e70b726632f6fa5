// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/tracewr.c: chunks round-trip through rotated files (each file a
 * valid trace with header and trailer, every chunk byte for byte, records
 * in order through lib/trace.h's reader), rotation sizes, exact drop counts
 * and put latency with a held writer, ring wrap-around, a concurrent burst
 * into a tiny queue, close flushing what is queued, disk errors (open
 * failing, writes failing mid-file) counted, logged once and recovered
 * from, existing files never clobbered, no allocation in put; every
 * file names its records (TASK records replayed at a rotation). The file
 * being written is a .part that takes its name once finished, every file
 * 0600 whatever the umask; magnetd's checks of the trace directory.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "tasks.h"
#include "testutil.h"
#include "trace.h"
#include "tracewr.h"

#define PREFIX	"t"
#define PROBES	"16\tkprobe\tvfs_read\t3\t0\t0\n17\tkretprobe\tvfs_write\t3\t0\t0\n"

/* ---- fixtures ---------------------------------------------------------- */

static char tmpdir[64];

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

static void setup(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%.40s/tracewr-XXXXXX",
		 t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	chmod(tmpdir, 0755);
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void subdir(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
}

static struct mg_trace_info make_info(__u32 ncpus)
{
	struct mg_trace_info in;

	memset(&in, 0, sizeof(in));
	in.record_version = MAGNET_FORMAT_VERSION;
	in.ncpus = ncpus;
	in.start_realtime_ns = 1700000000000000000ULL;
	in.start_clock_ns = 1000;
	snprintf(in.clock, sizeof(in.clock), "mono");
	snprintf(in.hostname, sizeof(in.hostname), "tracewr-host");
	snprintf(in.release, sizeof(in.release), "6.1.0-test");
	in.probes = PROBES;
	in.probes_len = strlen(PROBES);
	return in;
}

static size_t header_len(void)
{
	return (MG_TRACE_FIXED_HEADER + strlen(PROBES) + 7) & ~(size_t)7;
}

static size_t trailer_len(unsigned int n)
{
	return MG_CHUNK_HEADER + MG_TRAILER_HEADER + n * MG_TRAILER_CPU_SIZE;
}

/* The log callback: kept for the test to look at after close. */
struct logbook {
	pthread_mutex_t lock;
	unsigned int n;
	char msg[8][512];
};

static void log_cb(void *arg, const char *msg)
{
	struct logbook *lb = arg;

	pthread_mutex_lock(&lb->lock);
	if (lb->n < 8)
		snprintf(lb->msg[lb->n], sizeof(lb->msg[0]), "%s", msg);
	lb->n++;
	pthread_mutex_unlock(&lb->lock);
}

static struct mg_tracewr *open_w(const char *dir, size_t max_file,
				 size_t max_queue, __u32 ncpus,
				 struct logbook *lb)
{
	struct mg_trace_info in = make_info(ncpus);
	struct mg_tracewr *w;

	ck_assert_int_eq(mg_tracewr_open(dir, -1, PREFIX, max_file, max_queue, &in, NULL,
					 lb ? log_cb : NULL, lb, &w), 0);
	ck_assert_ptr_nonnull(w);
	return w;
}

static struct mg_tracewr_stats stats(const struct mg_tracewr *w)
{
	struct mg_tracewr_stats st;

	mg_tracewr_stats(w, &st);
	return st;
}

/* Until the writer has taken n chunks off the queue (written or not). */
static int wait_done(const struct mg_tracewr *w, __u64 n)
{
	int i;

	for (i = 0; i < 20000; i++) {
		struct mg_tracewr_stats st = stats(w);

		if (st.chunks + st.err_chunks >= n && !st.queue_used)
			return 0;
		usleep(500);
	}
	return -1;
}

/* ---- chunks ------------------------------------------------------------ */

struct chunk {
	__u32 cpu;
	size_t len;
	unsigned int records;
	unsigned char *data;
};

struct chunks {
	struct chunk *c;
	size_t n, cap;
};

static __u64 next_id;	/* abstract_id and timestamp of the next record */

static void reset_ids(void)
{
	next_id = 0;
}

/* A chunk of nrec random records of cpu, ids and timestamps ascending. */
static struct chunk random_chunk(__u32 cpu, unsigned int nrec)
{
	struct chunk c = { .cpu = cpu, .records = nrec };
	size_t cap = (size_t)nrec * MAGNET_RECORD_MAX;
	unsigned int i;

	c.data = malloc(cap);
	ck_assert_ptr_nonnull(c.data);
	for (i = 0; i < nrec; i++) {
		ssize_t n = tu_random_record(c.data + c.len, cap - c.len, cpu,
					     next_id, next_id);

		tu_assert(n > 0);
		next_id++;
		c.len += n;
	}
	return c;
}

/* A chunk of nrec kprobe records of 6 args: 88 bytes each. */
static struct chunk fixed_chunk(__u32 cpu, unsigned int nrec)
{
	struct chunk c = { .cpu = cpu, .records = nrec };
	__u64 args[6] = { 1, 2, 3, 4, 5, 6 };
	unsigned int i;

	c.data = malloc((size_t)nrec * 88);
	ck_assert_ptr_nonnull(c.data);
	for (i = 0; i < nrec; i++) {
		struct mg_record_hdr h = {
			.event_id = 16, .cpu = cpu, .abstract_id = next_id,
			.timestamp = next_id, .pid = 1, .tgid = 1,
		};

		tu_assert(mg_record_encode_kprobe(c.data + c.len, 88, &h, args,
						  6) == 88);
		next_id++;
		c.len += 88;
	}
	return c;
}

static void push(struct chunks *cs, struct chunk c)
{
	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? 2 * cs->cap : 64;
		cs->c = realloc(cs->c, cs->cap * sizeof(*cs->c));
		ck_assert_ptr_nonnull(cs->c);
	}
	cs->c[cs->n++] = c;
}

static void free_chunks(struct chunks *cs)
{
	size_t i;

	for (i = 0; i < cs->n; i++)
		free(cs->c[i].data);
	free(cs->c);
	memset(cs, 0, sizeof(*cs));
}

static int put(struct mg_tracewr *w, const struct chunk *c)
{
	return mg_tracewr_put(w, c->cpu, c->data, c->len);
}

/* ---- reading the files back -------------------------------------------- */

/* Mode bits of path, -1 when there is none. */
static int mode_of(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) ? -1 : (int)(sb.st_mode & 07777);
}

static int is_ours(const struct dirent *d)
{
	return !strncmp(d->d_name, PREFIX "-", 2) &&
	       strlen(d->d_name) == 2 + 6 + strlen(MG_TRACEWR_SUFFIX);
}

static __u32 rd32(const unsigned char *b, size_t off)
{
	__u32 v;

	memcpy(&v, b + off, 4);
	return v;
}

static __u64 rd64(const unsigned char *b, size_t off)
{
	__u64 v;

	memcpy(&v, b + off, 8);
	return v;
}

struct expect {
	size_t max_file;		/* 0: no size checks */
	const struct mg_trailer *last;	/* the last file's trailer, NULL: own */
	unsigned int files;		/* 0: any number */
	const char *skip_name;		/* a file not ours, left alone */
};

/*
 * Check every file of dir: a valid trace (header with the info, data
 * chunks, a trailer last), sizes within max_file and no rotation earlier
 * than needed, the data chunks in order equal to want, the reader returning
 * every record in ascending id order, per-file trailers matching the file.
 * Returns the number of files.
 */
static unsigned int check_files(const char *dir, const struct chunks *want,
				const struct expect *ex)
{
	struct dirent **names;
	size_t k = 0, prev_body = 0;
	unsigned int prev_seen = 0, f;
	bool prev_cpus[8] = { false };
	__u64 last_id = 0;
	bool any_id = false;
	int n;

	n = scandir(dir, &names, is_ours, alphasort);
	ck_assert_int_ge(n, 1);
	if (ex->files)
		ck_assert_int_eq(n, ex->files);
	for (f = 0; f < (unsigned int)n; f++) {
		char path[MG_TRACEWR_PATH_MAX];
		struct mg_trace_error err;
		const struct magnet_record *rec;
		const struct mg_trailer *tr;
		struct mg_trace *t;
		unsigned char *b;
		size_t len, off, body = 0, nchunks = 0;
		__u64 recs = 0, cpu_events[8] = { 0 }, cpu_bytes[8] = { 0 };
		bool cpus[8] = { false }, trailer = false;
		unsigned int seen = 0, i;
		int r;

		snprintf(path, sizeof(path), "%s/%s", dir, names[f]->d_name);
		if (ex->skip_name && !strcmp(names[f]->d_name, ex->skip_name))
			goto next;
		ck_assert_int_eq(mode_of(path), 0600);
		b = tu_read_file(path, &len);
		ck_assert_uint_ge(len, header_len());
		ck_assert(!memcmp(b, MG_TRACE_MAGIC, 8));
		ck_assert_uint_eq(rd32(b, 16), header_len());
		ck_assert(!memcmp(b + MG_TRACE_FIXED_HEADER, PROBES,
				  strlen(PROBES)));
		for (off = header_len(); off < len;) {
			__u32 type = rd32(b, off), cpu = rd32(b, off + 4);
			__u64 clen = rd64(b, off + 8);

			ck_assert_uint_le(off + MG_CHUNK_HEADER + clen, len);
			ck_assert(!trailer);	/* nothing after the trailer */
			if (type == MG_CHUNK_TRAILER) {
				trailer = true;
				body = off;
			} else {
				const struct chunk *c;

				ck_assert_uint_eq(type, MG_CHUNK_DATA);
				ck_assert_uint_lt(k, want->n);
				c = &want->c[k++];
				ck_assert_uint_eq(cpu, c->cpu);
				ck_assert_uint_eq(clen, c->len);
				ck_assert(!memcmp(b + off + MG_CHUNK_HEADER,
						  c->data, c->len));
				if (!nchunks && f && ex->max_file) {
					/* The previous file had no room. */
					unsigned int s = prev_seen +
							 !prev_cpus[cpu];

					ck_assert_uint_gt(prev_body +
							  MG_CHUNK_HEADER +
							  clen +
							  trailer_len(s),
							  ex->max_file);
				}
				nchunks++;
				if (cpu < 8 && !cpus[cpu]) {
					cpus[cpu] = true;
					seen++;
				}
				cpu_bytes[cpu % 8] += clen;
			}
			off += MG_CHUNK_HEADER + clen;
		}
		ck_assert_msg(trailer, "%s has no trailer", path);
		if (ex->max_file && nchunks > 1)
			ck_assert_uint_le(len, ex->max_file);
		prev_body = body;
		prev_seen = seen;
		memcpy(prev_cpus, cpus, sizeof(cpus));
		free(b);

		/* The reader's view. */
		ck_assert_int_eq(mg_trace_open(&t, path, &err), 0);
		ck_assert_str_eq(mg_trace_info(t)->hostname, "tracewr-host");
		ck_assert_str_eq(mg_trace_info(t)->clock, "mono");
		ck_assert_uint_eq(mg_trace_probes(t) != NULL, 1);
		while ((r = mg_trace_next(t, &rec, NULL)) == 1) {
			if (any_id)
				tu_assert_op(rec->abstract_id, >, last_id);
			last_id = rec->abstract_id;
			any_id = true;
			recs++;
			if (!mg_record_is_lost(rec))
				cpu_events[rec->cpu % 8]++;
		}
		ck_assert_int_eq(r, 0);
		ck_assert_ptr_null(mg_trace_error(t));
		tr = mg_trace_trailer(t);
		ck_assert_ptr_nonnull(tr);
		if (f == (unsigned int)n - 1 && ex->last) {
			ck_assert_uint_eq(tr->ncpus, ex->last->ncpus);
			ck_assert_uint_eq(tr->stop_clock_ns,
					  ex->last->stop_clock_ns);
			for (i = 0; i < tr->ncpus; i++)
				ck_assert_uint_eq(tr->cpu[i].records,
						  ex->last->cpu[i].records);
		} else {
			ck_assert_uint_eq(tr->ncpus, seen);
			for (i = 0; i < tr->ncpus; i++) {
				__u32 c = tr->cpu[i].cpu;

				ck_assert(cpus[c % 8]);
				ck_assert_uint_eq(tr->cpu[i].records,
						  cpu_events[c % 8]);
				ck_assert_uint_eq(tr->cpu[i].bytes,
						  cpu_bytes[c % 8]);
				ck_assert_uint_eq(tr->cpu[i].flags, 0);
				if (i)
					ck_assert_uint_gt(c,
							  tr->cpu[i - 1].cpu);
			}
			if (seen)
				ck_assert_uint_eq(tr->stop_clock_ns, last_id);
		}
		mg_trace_close(t);
next:
		free(names[f]);
	}
	free(names);
	ck_assert_uint_eq(k, want->n);
	return n;
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(open_args)
{
	struct mg_trace_info in = make_info(2);
	struct mg_tracewr *w = (struct mg_tracewr *)1;
	char big[MG_TRACEWR_PATH_MAX];
	__u64 rec[11] = { 0 };

	ck_assert_int_eq(mg_tracewr_open(tmpdir, -1, "", 0, 4096, &in, NULL, NULL, NULL,
					 &w), -EINVAL);
	ck_assert_ptr_null(w);
	ck_assert_int_eq(mg_tracewr_open(tmpdir, -1, "a/b", 0, 4096, &in, NULL, NULL,
					 NULL, &w), -EINVAL);
	ck_assert_int_eq(mg_tracewr_open("", -1, "a", 0, 4096, &in, NULL, NULL, NULL,
					 &w), -EINVAL);
	ck_assert_int_eq(mg_tracewr_open(tmpdir, -1, "a", 0, 8, &in, NULL, NULL, NULL,
					 &w), -EINVAL);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(mg_tracewr_open(big, -1, "a", 0, 4096, &in, NULL, NULL, NULL,
					 &w), -EINVAL);
	in.ncpus = 0;
	ck_assert_int_eq(mg_tracewr_open(tmpdir, -1, "a", 0, 4096, &in, NULL, NULL, NULL,
					 &w), -EINVAL);
	in.ncpus = MG_TRACE_MAX_CPUS + 1;
	ck_assert_int_eq(mg_tracewr_open(tmpdir, -1, "a", 0, 4096, &in, NULL, NULL, NULL,
					 &w), -EINVAL);

	w = open_w(tmpdir, 0, 4096, 2, NULL);
	ck_assert_int_eq(mg_tracewr_put(w, 0, rec, 0), -EINVAL);
	ck_assert_int_eq(mg_tracewr_put(w, 0, rec, 12), -EINVAL);
	ck_assert_int_eq(mg_tracewr_put(w, 2, rec, 88), -EINVAL);
	ck_assert_int_eq(mg_tracewr_put(w, MG_CHUNK_NO_CPU, rec, 88), -EINVAL);
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ck_assert_uint_eq(stats(w).drop_chunks, 0);
	ck_assert_uint_eq(stats(w).queued_chunks, 0);
	mg_tracewr_free(w);
}
END_TEST

/* No chunk at all: still one file, header and trailer. */
START_TEST(empty_trace)
{
	struct mg_tracewr *w = open_w(tmpdir, 1 << 20, 4096, 4, NULL);
	struct chunks none = { 0 };
	struct expect ex = { .files = 1 };
	struct mg_tracewr_stats st;

	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	st = stats(w);
	ck_assert_uint_eq(st.files, 1);
	ck_assert_uint_eq(st.bytes, header_len() + trailer_len(0));
	check_files(tmpdir, &none, &ex);
	mg_tracewr_free(w);
}
END_TEST

/* Random chunks of 4 CPUs through many rotated files, byte for byte. */
START_TEST(round_trip)
{
	static const size_t max_file[] = { 16384, 65536, 300000, 0 };
	struct mg_trailer_cpu tc[2] = {
		{ .cpu = 0, .records = 11 }, { .cpu = 3, .records = 33 },
	};
	struct mg_trailer last = {
		.stop_realtime_ns = 5, .stop_clock_ns = 77, .ncpus = 2,
		.cpu = tc,
	};
	struct mg_tracewr *w;
	struct chunks cs = { 0 };
	struct expect ex = { .max_file = max_file[_i] };
	struct mg_tracewr_stats st;
	__u64 bytes = 0, records = 0;
	unsigned int i, files;
	struct stat sb;

	tu_seed(1000 + _i);
	reset_ids();
	w = open_w(tmpdir, max_file[_i], 8 << 20, 4, NULL);
	for (i = 0; i < 600; i++) {
		struct chunk c = random_chunk(tu_rand() % 4,
					      1 + tu_rand() % 40);

		push(&cs, c);
		ck_assert_int_eq(put(w, &c), 0);
		bytes += MG_CHUNK_HEADER + c.len;
		records += c.records;
	}
	/* Every other run ends with the caller's trailer. */
	if (_i & 1)
		ex.last = &last;
	ck_assert_int_eq(mg_tracewr_close(w, ex.last), 0);
	files = check_files(tmpdir, &cs, &ex);
	st = stats(w);
	ck_assert_uint_eq(st.files, files);
	ck_assert_uint_eq(st.chunks, cs.n);
	ck_assert_uint_eq(st.records, records);
	ck_assert_uint_eq(st.queued_chunks, cs.n);
	ck_assert_uint_eq(st.drop_chunks + st.err_chunks + st.write_errors, 0);
	if (max_file[_i] && max_file[_i] < 100000)
		ck_assert_uint_gt(files, 5);
	if (!max_file[_i])
		ck_assert_uint_eq(files, 1);
	/* bytes: every header, chunk and trailer written. */
	{
		__u64 on_disk = 0;
		char path[MG_TRACEWR_PATH_MAX];

		for (i = 0; i < files; i++) {
			ck_assert_int_eq(mg_tracewr_path(w, i, path,
							 sizeof(path)), 0);
			ck_assert_int_eq(stat(path, &sb), 0);
			on_disk += sb.st_size;
		}
		ck_assert_uint_eq(st.bytes, on_disk);
		ck_assert_uint_ge(on_disk, bytes + files * header_len());
	}
	mg_tracewr_free(w);
	free_chunks(&cs);
}
END_TEST

/* Fixed sizes: the exact files a size limit gives, big chunks alone. */
/* ---- TASK records: each file names its records on its own --------------- */

static size_t add_rec(unsigned char *buf, size_t off, __u32 cpu, __u32 pid,
		      const char *task_comm)
{
	struct mg_record_hdr h = { .event_id = 16, .cpu = cpu, .cgroup = 7,
				   .abstract_id = 7, .timestamp = next_id++,
				   .pid = pid, .tgid = pid };
	ssize_t n = task_comm ?
		mg_record_encode_task(buf + off, 4096 - off, &h, task_comm) :
		mg_record_encode_kprobe(buf + off, 4096 - off, &h, NULL, 0);

	ck_assert_int_gt(n, 0);
	return off + n;
}

/*
 * Every chunk in a file of its own (a 1-byte limit): a file started by
 * rotation first holds the TASK records of the threads named so far, per
 * CPU, stamped no later than that CPU's next record, so a reader of that
 * file alone names every record as a reader of the whole stream does
 * (a rename by exec included); trailers do not count TASK records.
 */
START_TEST(task_replay)
{
	static unsigned char bufs[4][4096] __attribute__((aligned(8)));
	static const __u32 cpu_of[4] = { 0, 1, 0, 1 };
	/* Replayed TASK records at the start of each file. */
	static const unsigned int replayed[4] = { 0, 2, 3, 3 };
	/* The chunk's own TASK records before its first event record. */
	static const unsigned int own_first[4] = { 1, 1, 0, 0 };
	size_t len[4] = { 0 }, i;
	struct mg_tracewr *w = open_w(tmpdir, 1, 1 << 20, 2, NULL);
	struct mg_tasks *ref = mg_tasks_new();
	char want[4][16][17];
	unsigned int nwant[4] = { 0 }, f;

	reset_ids();
	next_id = 1000;
	len[0] = add_rec(bufs[0], len[0], 0, 100, "alpha");
	len[0] = add_rec(bufs[0], len[0], 0, 100, NULL);
	len[0] = add_rec(bufs[0], len[0], 0, 100, NULL);
	len[0] = add_rec(bufs[0], len[0], 0, 101, "beta");
	len[0] = add_rec(bufs[0], len[0], 0, 101, NULL);
	len[1] = add_rec(bufs[1], len[1], 1, 200, "gamma");
	len[1] = add_rec(bufs[1], len[1], 1, 200, NULL);
	len[2] = add_rec(bufs[2], len[2], 0, 100, NULL);
	len[2] = add_rec(bufs[2], len[2], 0, 101, NULL);
	len[2] = add_rec(bufs[2], len[2], 0, 100, "alpha-exec");
	len[2] = add_rec(bufs[2], len[2], 0, 100, NULL);
	len[3] = add_rec(bufs[3], len[3], 1, 200, NULL);

	/* The names a reader of the whole stream gives, chunk by chunk. */
	for (i = 0; i < 4; i++) {
		const struct magnet_record *r;
		size_t off = 0;

		while (mg_record_next(bufs[i], len[i], &off, &r) == 1) {
			const struct mg_task *t;

			mg_tasks_feed(ref, r);
			if (mg_record_is_task(r))
				continue;
			t = mg_tasks_of(ref, r);
			ck_assert_ptr_nonnull(t);
			snprintf(want[i][nwant[i]++], 17, "%s", t->comm);
		}
		ck_assert_int_eq(mg_tracewr_put(w, cpu_of[i], bufs[i], len[i]), 0);
	}
	ck_assert_str_eq(want[2][2], "alpha-exec");
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ck_assert_uint_eq(stats(w).files, 4);

	for (f = 0; f < 4; f++) {
		char path[MG_TRACEWR_PATH_MAX];
		struct mg_tasks *tk = mg_tasks_new();
		struct mg_trace_error err;
		const struct magnet_record *r;
		const struct mg_trailer *tr;
		struct mg_trace *t;
		unsigned int tasks = 0, n = 0, k;
		__u64 last_ts[2] = { 0, 0 };

		ck_assert_int_eq(mg_tracewr_path(w, f, path, sizeof(path)), 0);
		ck_assert_int_eq(mg_trace_open(&t, path, &err), 0);
		while (mg_trace_next(t, &r, NULL) == 1) {
			const struct mg_task *task;

			ck_assert_uint_ge(r->timestamp, last_ts[r->cpu]);
			last_ts[r->cpu] = r->timestamp;
			mg_tasks_feed(tk, r);
			if (mg_record_is_task(r)) {
				if (!n)
					tasks++;
				continue;
			}
			task = mg_tasks_of(tk, r);
			ck_assert_msg(task, "file %u: record %u unnamed", f, n);
			ck_assert_str_eq(task->comm, want[f][n]);
			n++;
		}
		ck_assert_uint_eq(n, nwant[f]);
		ck_assert_uint_eq(tasks, replayed[f] + own_first[f]);
		tr = mg_trace_trailer(t);
		ck_assert_ptr_nonnull(tr);
		for (k = 0; k < tr->ncpus; k++)
			ck_assert_uint_eq(tr->cpu[k].records,
					  tr->cpu[k].cpu == cpu_of[f] ? nwant[f] : 0);
		mg_trace_close(t);
		mg_tasks_free(tk);
	}
	mg_tasks_free(ref);
	mg_tracewr_free(w);
}
END_TEST

/*
 * Probes added while the writer runs: named in the trace (a PRBS chunk in
 * the file, the whole table in the header of each file after a rotation),
 * the probes file read once per unknown id. max_file 0: one file; 1: a file
 * per chunk.
 */
static void put_ids(struct mg_tracewr *w, const unsigned int *ids,
		    unsigned int n, __u64 done)
{
	unsigned char buf[1024] __attribute__((aligned(8)));
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct mg_record_hdr h = { .event_id = ids[i],
					   .timestamp = 1000 + next_id++,
					   .pid = 1, .tgid = 1, .cgroup = 1 };
		ssize_t r = mg_record_encode_kprobe(buf + len, sizeof(buf) - len,
						    &h, NULL, 0);

		ck_assert_int_gt(r, 0);
		len += r;
	}
	ck_assert_int_eq(mg_tracewr_put(w, 0, buf, len), 0);
	ck_assert_int_eq(wait_done(w, done), 0);
}

#define ADDED	"18\tkprobe\tdo_sys_open\t2\t0\t0\n"
#define LATE	"19\tkprobe\ttoo_late\t0\t0\t0\n"

START_TEST(probe_names)
{
	static const unsigned int a[] = { 16, 17 }, b[] = { 18, 19, 16 },
				  c[] = { 19, 18 };
	static const unsigned int nfiles[2] = { 1, 3 };
	char sensor[128], pfile[192], path[MG_TRACEWR_PATH_MAX];
	struct mg_trace_info in = make_info(1);
	unsigned int f, max_file = _i;
	struct mg_tracewr *w;
	size_t total = 0;

	subdir(sensor, sizeof(sensor), "sensor");
	ck_assert_int_eq(mkdir(sensor, 0755), 0);
	snprintf(pfile, sizeof(pfile), "%s/probes", sensor);
	tu_write_file(pfile, PROBES, strlen(PROBES));
	ck_assert_int_eq(mg_tracewr_open(tmpdir, -1, PREFIX, max_file, 1 << 20, &in,
					 sensor, NULL, NULL, &w), 0);
	reset_ids();
	put_ids(w, a, 2, 1);
	/* magnet-ctl probe add: 18 now, 19 only after its first record. */
	tu_write_file(pfile, PROBES ADDED, strlen(PROBES ADDED));
	put_ids(w, b, 3, 2);
	tu_write_file(pfile, PROBES ADDED LATE, strlen(PROBES ADDED LATE));
	put_ids(w, c, 2, 3);
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ck_assert_uint_eq(stats(w).files, nfiles[max_file]);

	for (f = 0; f < nfiles[max_file]; f++) {
		const struct mg_trace_info *info;
		const struct mg_probe_table *pt;
		const struct magnet_record *r;
		struct mg_trace_error err;
		struct mg_trace *t;
		struct stat st;
		unsigned int n = 0;

		ck_assert_int_eq(mg_tracewr_path(w, f, path, sizeof(path)), 0);
		ck_assert_int_eq(stat(path, &st), 0);
		total += st.st_size;
		ck_assert_int_eq(mg_trace_open(&t, path, &err), 0);
		info = mg_trace_info(t);
		pt = mg_trace_probes(t);
		/* The header: the open's table, then the union at each file. */
		if (f == 0) {
			ck_assert_uint_eq(info->probes_len, strlen(PROBES));
			ck_assert_int_eq(memcmp(info->probes, PROBES, strlen(PROBES)), 0);
		} else {
			ck_assert_uint_eq(info->probes_len, strlen(PROBES ADDED));
			ck_assert_int_eq(memcmp(info->probes, PROBES ADDED,
						strlen(PROBES ADDED)), 0);
		}
		ck_assert_str_eq(mg_event_name(pt, 16), "vfs_read");
		ck_assert_str_eq(mg_event_name(pt, 17), "vfs_write%return");
		/* A file of its own for the first chunk: no 18 there yet. */
		ck_assert_str_eq(mg_event_name(pt, 18),
				 max_file && !f ? "unknown" : "do_sys_open");
		/* Looked up once, when it was not there yet. */
		ck_assert_str_eq(mg_event_name(pt, 19), "unknown");
		while (mg_trace_next(t, &r, NULL) == 1)
			n++;
		ck_assert_ptr_null(mg_trace_error(t));
		ck_assert_uint_eq(n, max_file ? (f == 0 ? 2 : f == 1 ? 3 : 2) : 7);
		mg_trace_close(t);
	}
	/* The PRBS chunk is counted in the bytes written. */
	ck_assert_uint_eq(stats(w).bytes, total);
	mg_tracewr_free(w);
}
END_TEST

START_TEST(rotation_sizes)
{
	/* Header, 3 chunks of 880 + 16 and a one-CPU trailer fit in max. */
	size_t max = header_len() + 3 * (16 + 880) + trailer_len(1);
	struct mg_tracewr *w = open_w(tmpdir, max, 1 << 20, 2, NULL);
	struct expect ex = { .max_file = max };
	struct chunks cs = { 0 };
	struct chunk c;
	unsigned int i;

	reset_ids();
	for (i = 0; i < 7; i++) {		/* files 0, 1: 3 each, 2: 1 */
		c = fixed_chunk(0, 10);
		push(&cs, c);
		ck_assert_int_eq(put(w, &c), 0);
	}
	c = fixed_chunk(1, 10);			/* file 2: a second CPU's */
	push(&cs, c);				/* trailer entry needs 104 */
	ck_assert_int_eq(put(w, &c), 0);	/* more: still fits */
	c = fixed_chunk(1, 10);			/* file 3 */
	push(&cs, c);
	ck_assert_int_eq(put(w, &c), 0);
	c = fixed_chunk(0, 40);			/* larger than max: file 4 */
	push(&cs, c);
	ck_assert_int_eq(put(w, &c), 0);
	c = fixed_chunk(0, 40);			/* and file 5 */
	push(&cs, c);
	ck_assert_int_eq(put(w, &c), 0);
	c = fixed_chunk(1, 1);			/* file 6 */
	push(&cs, c);
	ck_assert_int_eq(put(w, &c), 0);
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ex.files = 7;
	check_files(tmpdir, &cs, &ex);
	{
		static const size_t want[] = { 3, 3, 2, 1, 1, 1, 1 };
		char path[MG_TRACEWR_PATH_MAX];
		struct stat sb;
		size_t sum = 0;

		/* File 2: two CPUs' chunks and trailer entries. */
		for (i = 0; i < 7; i++) {
			size_t data = i < 4 ? 880 * want[i] :
				      i < 6 ? 3520 : 88;
			unsigned int ncpu = i == 2 ? 2 : 1;

			ck_assert_int_eq(mg_tracewr_path(w, i, path,
							 sizeof(path)), 0);
			ck_assert_int_eq(stat(path, &sb), 0);
			ck_assert_uint_eq(sb.st_size,
					  header_len() + 16 * want[i] + data +
					  trailer_len(ncpu));
			sum += want[i];
		}
		ck_assert_uint_eq(sum, cs.n);
	}
	mg_tracewr_free(w);
	free_chunks(&cs);
}
END_TEST

/*
 * A held writer: exactly queue / (8 + len) chunks fit, every later put is
 * dropped and counted (chunks, bytes, records), and no put waits. Then the
 * writer goes on, the ring wraps, and everything queued reaches the files.
 */
START_TEST(held_writer_drops)
{
	enum { N = 2000, NREC = 46 };	/* 4048-byte chunks */
	size_t q = 64 * 1024, fit = q / (8 + NREC * 88);
	struct mg_tracewr *w = open_w(tmpdir, 1 << 20, q, 2, NULL);
	struct chunks all = { 0 }, kept = { 0 };
	struct expect ex = { .max_file = 1 << 20 };
	struct mg_tracewr_stats st;
	unsigned int i, dropped = 0;

	reset_ids();
	for (i = 0; i < N; i++)
		push(&all, fixed_chunk(i % 2, NREC));
	mg_tracewr_test_hold(w, true);
	for (i = 0; i < N; i++) {
		int r = put(w, &all.c[i]);

		if (i < fit) {
			tu_assert_int(r, ==, 0);
			push(&kept, all.c[i]);
		} else {
			tu_assert_int(r, ==, -ENOBUFS);
			dropped++;
		}
	}
	st = stats(w);
	ck_assert_uint_eq(st.queued_chunks, fit);
	ck_assert_uint_eq(st.drop_chunks, dropped);
	ck_assert_uint_eq(st.drop_bytes, (__u64)dropped * NREC * 88);
	ck_assert_uint_eq(st.drop_records, (__u64)dropped * NREC);
	ck_assert_uint_eq(st.chunks, 0);	/* held: nothing written */
	ck_assert_uint_eq(st.queue_used, fit * (8 + NREC * 88));
	ck_assert_uint_eq(st.queue_peak, st.queue_used);
	/*
	 * Never waits: the writer is held, so a put that waited for room
	 * would never return (timings belong in bench/, not in a test).
	 */

	/* Released: the queue drains, and wraps for the next puts. */
	mg_tracewr_test_hold(w, false);
	ck_assert_int_eq(wait_done(w, fit), 0);
	for (i = 0; i < 3 * fit; i++) {
		struct chunk c = fixed_chunk(i % 2, NREC);

		push(&all, c);
		if (!put(w, &c))
			push(&kept, c);
		if (i % 8 == 7)
			ck_assert_int_eq(wait_done(w, kept.n), 0);
	}
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	st = stats(w);
	ck_assert_uint_eq(st.chunks, kept.n);
	ck_assert_uint_eq(st.queued_chunks + st.drop_chunks, all.n);
	ck_assert_uint_ge(kept.n, fit + 3 * fit / 2);
	ck_assert_uint_eq(st.queue_used, 0);
	check_files(tmpdir, &kept, &ex);
	mg_tracewr_free(w);
	free(kept.c);
	free_chunks(&all);
}
END_TEST

/* Everything queued when close is called reaches the files. */
START_TEST(close_flushes)
{
	struct mg_tracewr *w = open_w(tmpdir, 20000, 1 << 20, 3, NULL);
	struct chunks cs = { 0 };
	struct expect ex = { .max_file = 20000 };
	unsigned int i;

	tu_seed(7);
	reset_ids();
	mg_tracewr_test_hold(w, true);
	for (i = 0; i < 200; i++) {
		struct chunk c = random_chunk(i % 3, 1 + tu_rand() % 10);

		push(&cs, c);
		ck_assert_int_eq(put(w, &c), 0);
	}
	ck_assert_uint_eq(stats(w).chunks, 0);
	/* Close ends the hold and drains. */
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ck_assert_uint_eq(stats(w).chunks, 200);
	ck_assert_uint_eq(stats(w).queue_used, 0);
	ck_assert_uint_gt(check_files(tmpdir, &cs, &ex), 1);
	mg_tracewr_free(w);
	free_chunks(&cs);
}
END_TEST

/*
 * A burst into a tiny queue while the writer runs: whatever was accepted
 * is in the files in order, whatever was not is counted exactly.
 */
START_TEST(burst_tiny_queue)
{
	struct mg_tracewr *w = open_w(tmpdir, 100000, 16384, 4, NULL);
	struct chunks all = { 0 }, kept = { 0 };
	struct expect ex = { .max_file = 100000 };
	struct mg_tracewr_stats st;
	__u64 dchunks = 0, dbytes = 0, drecs = 0;
	unsigned int i;

	tu_seed(99 + _i);
	reset_ids();
	for (i = 0; i < 3000; i++)
		push(&all, random_chunk(tu_rand() % 4, 1 + tu_rand() % 20));
	for (i = 0; i < all.n; i++) {
		int r = put(w, &all.c[i]);

		if (!r) {
			push(&kept, all.c[i]);
		} else {
			tu_assert_int(r, ==, -ENOBUFS);
			dchunks++;
			dbytes += all.c[i].len;
			drecs += all.c[i].records;
		}
		if (_i && i % 50 == 49)
			usleep(100);	/* let the writer catch up, a bit */
	}
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	st = stats(w);
	ck_assert_uint_eq(st.drop_chunks, dchunks);
	ck_assert_uint_eq(st.drop_bytes, dbytes);
	ck_assert_uint_eq(st.drop_records, drecs);
	ck_assert_uint_eq(st.chunks, kept.n);
	ck_assert_uint_le(st.queue_peak, 16384);
	ck_assert_uint_gt(kept.n, 0);
	check_files(tmpdir, &kept, &ex);
	mg_tracewr_free(w);
	free(kept.c);
	free_chunks(&all);
}
END_TEST

/*
 * Opens that fail: the directory is a regular file (ENOTDIR), then missing
 * (ENOENT), then (not as root) read-only (EACCES). Each chunk is counted,
 * each kind logged once; once the directory is there the writer goes on.
 */
START_TEST(open_errors)
{
	struct logbook lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char dir[128];
	struct mg_tracewr *w;
	struct chunks all = { 0 }, kept = { 0 };
	struct expect ex = { .max_file = 1 << 20 };
	struct mg_tracewr_stats st;
	unsigned int i, nerr = 0, kinds = 2;
	__u64 erecs = 0, ebytes = 0;
	bool root = !geteuid();

	subdir(dir, sizeof(dir), "out");
	tu_write_file(dir, "x", 1);
	w = open_w(dir, 1 << 20, 1 << 20, 2, &lb);
	reset_ids();
	for (i = 0; i < 30; i++) {
		struct chunk c = fixed_chunk(i % 2, 3);

		push(&all, c);
		ck_assert_int_eq(put(w, &c), 0);
		nerr++;
		ebytes += c.len;
		erecs += c.records;
		if (i == 9) {		/* ENOTDIR: 10 chunks */
			ck_assert_int_eq(wait_done(w, 10), 0);
			ck_assert_int_eq(unlink(dir), 0);
		}
	}
	ck_assert_int_eq(wait_done(w, 30), 0);	/* ENOENT: 20 chunks */
	if (!root) {
		ck_assert_int_eq(mkdir(dir, 0555), 0);
		for (i = 0; i < 5; i++) {
			struct chunk c = fixed_chunk(0, 3);

			push(&all, c);
			ck_assert_int_eq(put(w, &c), 0);
			nerr++;
			ebytes += c.len;
			erecs += c.records;
		}
		ck_assert_int_eq(wait_done(w, 35), 0);
		ck_assert_int_eq(chmod(dir, 0755), 0);
		kinds++;
	} else {
		ck_assert_int_eq(mkdir(dir, 0755), 0);
	}
	st = stats(w);
	ck_assert_uint_eq(st.write_errors, nerr);
	ck_assert_uint_eq(st.err_chunks, nerr);
	ck_assert_uint_eq(st.err_bytes, ebytes);
	ck_assert_uint_eq(st.err_records, erecs);
	ck_assert_uint_eq(st.files, 0);
	/* Writable now: the next chunks go to the first file. */
	for (i = 0; i < 20; i++) {
		struct chunk c = fixed_chunk(i % 2, 3);

		push(&all, c);
		push(&kept, c);
		ck_assert_int_eq(put(w, &c), 0);
	}
	ck_assert_int_eq(mg_tracewr_close(w, NULL), -EIO);
	st = stats(w);
	ck_assert_uint_eq(st.write_errors, nerr);
	ck_assert_uint_eq(st.chunks, 20);
	ck_assert_uint_eq(st.files, 1);
	ck_assert_uint_eq(st.drop_chunks, 0);
	ck_assert_uint_eq(lb.n, kinds);
	ck_assert(strstr(lb.msg[0], "open") && strstr(lb.msg[0], "directory"));
	ck_assert(strstr(lb.msg[1], "No such file"));
	if (!root)
		ck_assert(strstr(lb.msg[2], "Permission denied"));
	ex.files = 1;
	check_files(dir, &kept, &ex);
	mg_tracewr_free(w);
	free(kept.c);
	free_chunks(&all);
}
END_TEST

/*
 * Writes that fail mid-file (the file size limit: EFBIG, as ENOSPC would):
 * the failed chunks are cut off again and counted, logged once, and the
 * same file goes on once writes succeed, still a valid trace.
 */
START_TEST(write_errors)
{
	struct logbook lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct rlimit lim, old;
	struct mg_tracewr *w;
	struct chunks all = { 0 }, kept = { 0 };
	struct expect ex = { .max_file = 1 << 20, .files = 1 };
	struct mg_tracewr_stats st;
	unsigned int i, done;
	int waited;

	signal(SIGXFSZ, SIG_IGN);
	w = open_w(tmpdir, 1 << 20, 1 << 20, 2, &lb);
	reset_ids();
	for (i = 0; i < 40; i++)
		push(&all, fixed_chunk(i % 2, 20));	/* 1760 bytes */
	for (i = 0; i < 40; i++)
		push(&all, fixed_chunk(i % 2, 20));
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	/*
	 * No Check assertion while the limit holds: Check writes them to a
	 * file of its own.
	 */
	lim = old;
	lim.rlim_cur = 32768;
	tu_assert(!setrlimit(RLIMIT_FSIZE, &lim));
	for (i = 0; i < 40; i++)
		tu_assert(!put(w, &all.c[i]));
	waited = wait_done(w, 40);
	tu_assert(!setrlimit(RLIMIT_FSIZE, &old));
	ck_assert_int_eq(waited, 0);
	st = stats(w);
	done = st.chunks;
	/* The header and the chunks that fit in 32768 bytes. */
	ck_assert_uint_eq(done, (32768 - header_len()) / (16 + 1760));
	ck_assert_uint_eq(st.err_chunks, 40 - done);
	ck_assert_uint_eq(st.write_errors, 40 - done);
	ck_assert_uint_eq(st.err_records, (40 - done) * 20);
	for (i = 0; i < done; i++)
		push(&kept, all.c[i]);
	for (i = 40; i < 80; i++) {
		ck_assert_int_eq(put(w, &all.c[i]), 0);
		push(&kept, all.c[i]);
	}
	ck_assert_int_eq(mg_tracewr_close(w, NULL), -EIO);
	st = stats(w);
	ck_assert_uint_eq(st.chunks, done + 40);
	ck_assert_uint_eq(st.write_errors, 40 - done);
	ck_assert_uint_eq(st.files, 1);
	ck_assert_uint_eq(lb.n, 1);
	ck_assert_msg(strstr(lb.msg[0], "write") &&
		      strstr(lb.msg[0], strerror(EFBIG)), "%s", lb.msg[0]);
	check_files(tmpdir, &kept, &ex);
	mg_tracewr_free(w);
	free(kept.c);
	free_chunks(&all);
}
END_TEST

/* A name already taken is skipped, the file left as it was. */
START_TEST(no_clobber)
{
	struct mg_tracewr *w;
	struct chunks cs = { 0 };
	struct expect ex = { .skip_name = PREFIX "-000000" MG_TRACEWR_SUFFIX,
			     .files = 2 };
	char path[MG_TRACEWR_PATH_MAX];
	size_t len;
	void *b;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, ex.skip_name);
	tu_write_file(path, "precious", 8);
	w = open_w(tmpdir, 0, 1 << 16, 1, NULL);
	reset_ids();
	push(&cs, fixed_chunk(0, 5));
	ck_assert_int_eq(put(w, &cs.c[0]), 0);
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ck_assert_uint_eq(stats(w).write_errors, 0);
	b = tu_read_file(path, &len);
	ck_assert_uint_eq(len, 8);
	ck_assert(!memcmp(b, "precious", 8));
	free(b);
	ck_assert_int_eq(mg_tracewr_path(w, 1, path, sizeof(path)), 0);
	ck_assert_int_eq(access(path, R_OK), 0);
	check_files(tmpdir, &cs, &ex);
	mg_tracewr_free(w);
	free_chunks(&cs);
}
END_TEST

/*
 * The file being written is PREFIX-NNNNNN.mgt.part, 0600 whatever the
 * umask; finished (rotated, or at close), it takes its .mgt name. A .part
 * a crash left is skipped and left as it was.
 */
START_TEST(durable_names)
{
	static const mode_t masks[] = { 0, 0277 };
	size_t max = header_len() + 3 * (16 + 880) + trailer_len(1);
	char path[MG_TRACEWR_PATH_MAX], part[MG_TRACEWR_PATH_MAX + 8];
	char stale[MG_TRACEWR_PATH_MAX + 8];
	mode_t old = umask(masks[_i]);
	struct expect ex = { .max_file = max, .files = 2 };
	struct chunks cs = { 0 };
	struct mg_tracewr_stats st;
	struct mg_tracewr *w;
	unsigned int i;
	size_t len;
	void *b;

	snprintf(stale, sizeof(stale), "%s/" PREFIX "-000001" MG_TRACEWR_SUFFIX
		 MG_TRACEWR_PART, tmpdir);
	tu_write_file(stale, "torn", 4);
	w = open_w(tmpdir, max, 1 << 20, 1, NULL);
	reset_ids();
	for (i = 0; i < 4; i++) {		/* 3 in file 0, 1 in file 2 */
		push(&cs, fixed_chunk(0, 10));
		ck_assert_int_eq(put(w, &cs.c[i]), 0);
	}
	ck_assert_int_eq(wait_done(w, 4), 0);
	st = stats(w);
	ck_assert_uint_eq(st.files, 2);
	ck_assert_uint_eq(st.finished, 1);
	ck_assert_int_eq(mg_tracewr_path(w, 0, path, sizeof(path)), 0);
	snprintf(part, sizeof(part), "%s" MG_TRACEWR_PART, path);
	ck_assert_int_eq(mode_of(path), 0600);
	ck_assert_int_eq(mode_of(part), -1);
	ck_assert_int_eq(mg_tracewr_path(w, 2, path, sizeof(path)), 0);
	snprintf(part, sizeof(part), "%s" MG_TRACEWR_PART, path);
	ck_assert_int_eq(mode_of(path), -1);
	ck_assert_int_eq(mode_of(part), 0600);
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	st = stats(w);
	ck_assert_uint_eq(st.finished, 2);
	ck_assert_uint_eq(st.write_errors, 0);
	ck_assert_int_eq(mode_of(path), 0600);
	ck_assert_int_eq(mode_of(part), -1);
	b = tu_read_file(stale, &len);
	ck_assert_uint_eq(len, 4);
	ck_assert(!memcmp(b, "torn", 4));
	free(b);
	check_files(tmpdir, &cs, &ex);
	mg_tracewr_free(w);
	free_chunks(&cs);
	umask(old);
}
END_TEST

/*
 * Given the directory open, the writer creates its files there, whatever
 * its path names meanwhile (magnetd checks the directory, then hands it
 * over: nothing can be put in its place).
 */
START_TEST(given_dirfd)
{
	char dir[128], moved[128], path[MG_TRACEWR_PATH_MAX];
	struct mg_trace_info in = make_info(1);
	struct chunks cs = { 0 };
	struct expect ex = { .files = 1 };
	struct mg_tracewr *w;
	int fd;

	subdir(dir, sizeof(dir), "d");
	subdir(moved, sizeof(moved), "moved");
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mg_tracewr_open(dir, fd, PREFIX, 0, 1 << 16, &in, NULL,
					 NULL, NULL, &w), 0);
	ck_assert_int_eq(rename(dir, moved), 0);
	ck_assert_int_eq(mkdir(dir, 0700), 0);	/* in its place: unused */
	reset_ids();
	push(&cs, fixed_chunk(0, 5));
	ck_assert_int_eq(put(w, &cs.c[0]), 0);
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ck_assert_int_eq(mg_tracewr_path(w, 0, path, sizeof(path)), 0);
	ck_assert_int_eq(mode_of(path), -1);
	check_files(moved, &cs, &ex);
	mg_tracewr_free(w);
	free_chunks(&cs);
	/* A bad argument: the descriptor is closed all the same. */
	fd = open(moved, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mg_tracewr_open(moved, fd, "a/b", 0, 1 << 16, &in,
					 NULL, NULL, NULL, &w), -EINVAL);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
}
END_TEST

/* magnetd's trace directory: made 0700, or one it may trust, or refused. */
START_TEST(dir_checks)
{
	static const mode_t masks[] = { 0, 0022, 0777 };
	char dir[128], link[128], why[256];
	struct stat sb;
	unsigned int i;
	int fd;

	subdir(dir, sizeof(dir), "t");
	for (i = 0; i < 3; i++) {
		mode_t old = umask(masks[i]);

		fd = mg_tracewr_dir_open(dir, why, sizeof(why));
		umask(old);
		ck_assert_msg(fd >= 0, "umask %04o: %s", masks[i], why);
		ck_assert_int_eq(fstat(fd, &sb), 0);
		ck_assert(S_ISDIR(sb.st_mode));
		ck_assert_int_eq(sb.st_mode & 07777, 0700);
		close(fd);
		ck_assert_int_eq(rmdir(dir), 0);
	}
	/* There already, and no one else may write to it: taken as it is. */
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	fd = mg_tracewr_dir_open(dir, why, sizeof(why));
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(mode_of(dir), 0755);
	ck_assert_int_eq(chmod(dir, 0775), 0);
	ck_assert_int_eq(mg_tracewr_dir_open(dir, why, sizeof(why)), -EPERM);
	ck_assert_str_eq(why, "writable by its group or others (mode 0775): refused");
	ck_assert_int_eq(chmod(dir, 01777), 0);
	ck_assert_int_eq(mg_tracewr_dir_open(dir, why, sizeof(why)), -EPERM);
	ck_assert_str_eq(why, "writable by its group or others (mode 1777): refused");
	ck_assert_int_eq(chmod(dir, 0700), 0);
	/* A symbolic link to a good directory: refused all the same. */
	subdir(link, sizeof(link), "link");
	ck_assert_int_eq(symlink(dir, link), 0);
	ck_assert_int_eq(mg_tracewr_dir_open(link, why, sizeof(why)), -ELOOP);
	ck_assert(strstr(why, "symbolic link"));
	/* A file. */
	subdir(link, sizeof(link), "file");
	tu_write_file(link, "x", 1);
	ck_assert_int_eq(mg_tracewr_dir_open(link, why, sizeof(why)), -ENOTDIR);
	ck_assert_str_eq(why, "not a directory");
	/* Under a missing directory. */
	subdir(link, sizeof(link), "no/such");
	ck_assert_int_eq(mg_tracewr_dir_open(link, why, sizeof(why)), -ENOENT);
	ck_assert(strstr(why, "cannot make it"));
	/* Another user's. */
	if (!geteuid()) {
		ck_assert_int_eq(chown(dir, 65534, 65534), 0);
		ck_assert_int_eq(mg_tracewr_dir_open(dir, why, sizeof(why)), -EPERM);
		ck_assert_str_eq(why, "owned by uid 65534, not by uid 0 (magnetd's): refused");
	}
}
END_TEST

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* put allocates nothing, queued or dropped. */
START_TEST(no_alloc)
{
	struct mg_tracewr *w = open_w(tmpdir, 0, 1 << 16, 1, NULL);
	struct chunk c;
	size_t before;
	unsigned int i, ok = 0;

	reset_ids();
	c = fixed_chunk(0, 10);
	mg_tracewr_test_hold(w, true);
	before = heap_bytes();
	for (i = 0; i < 100000; i++)
		ok += !put(w, &c);
	ck_assert_uint_eq(heap_bytes(), before);
	ck_assert_uint_eq(ok, (1 << 16) / (8 + 880));
	ck_assert_int_eq(mg_tracewr_close(w, NULL), 0);
	ck_assert_uint_eq(stats(w).chunks, ok);
	mg_tracewr_free(w);
	free(c.data);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tracewr");
	TCase *tc = tcase_create("tracewr");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, open_args);
	tcase_add_test(tc, empty_trace);
	tcase_add_loop_test(tc, round_trip, 0, 4);
	tcase_add_test(tc, task_replay);
	tcase_add_loop_test(tc, probe_names, 0, 2);
	tcase_add_test(tc, rotation_sizes);
	tcase_add_test(tc, held_writer_drops);
	tcase_add_test(tc, close_flushes);
	tcase_add_loop_test(tc, burst_tiny_queue, 0, 2);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, write_errors);
	tcase_add_test(tc, no_clobber);
	tcase_add_loop_test(tc, durable_names, 0, 2);
	tcase_add_test(tc, given_dirfd);
	tcase_add_test(tc, dir_checks);
	tcase_add_test(tc, no_alloc);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
