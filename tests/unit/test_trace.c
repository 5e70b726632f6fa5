// SPDX-License-Identifier: GPL-2.0
/*
 * lib/trace.c: write -> read round trips, k-way merge order, and that every
 * kind of damage is reported at the right file offset, never crashes, and
 * never yields a record that is not in the file.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"
#include "testutil.h"
#include "trace.h"

static const char probes_text[] =
	"16\tkprobe\ttcp_sendmsg\t3\t10\t0\n17\tkretprobe\tvfs_read\t2\t5\t1\n";

struct ref {
	__u64 ts;
	__u32 cpu;
	unsigned int seq;
	__u64 off;		/* file offset */
	__u32 size;
};

struct built {
	char path[64];
	unsigned int ncpus;
	struct ref *refs;	/* in merged order */
	size_t nrefs;
	__u64 chunk_off[4096];	/* file offsets of chunk headers; last is the trailer */
	unsigned int nchunks;
	unsigned int chunk_first[4096];	/* index in write order of first ref */
	__u64 size;
	__u32 header_len;
};

/* build() cuts chunks of exactly maxrec records, CPUs in turn. */
static bool regular_plan;

static int cmp_ref(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static void fill_info(struct mg_trace_info *in, unsigned int ncpus)
{
	memset(in, 0, sizeof(*in));
	in->ncpus = ncpus;
	in->start_realtime_ns = 1700000000000000000ULL;
	in->start_clock_ns = 5000;
	strcpy(in->clock, "mono");
	strcpy(in->hostname, "testhost");
	strcpy(in->release, "6.1.0-test");
	in->probes = probes_text;
	in->probes_len = sizeof(probes_text) - 1;
}

/*
 * Write a trace: per CPU nper random records (timestamps step by 0..15 ns
 * in 5 ns units so ties happen within and across CPUs), cut into chunks of
 * 1..maxrec records, CPUs interleaved at random. cpu_mask selects CPUs.
 */
static void build(struct built *b, unsigned int ncpus, unsigned long cpu_mask,
		  unsigned int nper, unsigned int maxrec, bool trailer)
{
	unsigned char *stream[64];
	size_t slen[64], spos[64];
	unsigned int sseq[64], done = 0, active = 0, c, i;
	struct mg_trace_info info;
	struct ref *wrefs;
	size_t nw = 0;
	int fd;

	memset(b, 0, sizeof(*b));
	b->ncpus = ncpus;
	fd = tu_tmpfile(b->path);
	fill_info(&info, ncpus);
	tu_assert_int(mg_trace_write_header(fd, &info), ==, 0);
	b->header_len = lseek(fd, 0, SEEK_CUR);
	wrefs = calloc((size_t)ncpus * nper + 1, sizeof(*wrefs));

	for (c = 0; c < ncpus; c++) {
		__u64 ts = 1000;

		stream[c] = malloc((size_t)nper * 128 + 8);
		slen[c] = spos[c] = 0;
		sseq[c] = 0;
		if (!(cpu_mask >> c & 1))
			continue;
		active++;
		for (i = 0; i < nper; i++) {
			ssize_t r;

			ts += 5 * (tu_rand() % 4);
			r = tu_random_record(stream[c] + slen[c], 128, c, ts,
					     (__u64)c << 32 | i);
			tu_assert_int(r, >, 0);
			slen[c] += r;
		}
	}
	while (done < active) {
		size_t start, len = 0;
		unsigned int k, n;

		if (regular_plan) {
			/* Alternate CPUs, maxrec records per chunk. */
			c = b->nchunks % ncpus;
			n = maxrec;
		} else {
			do
				c = tu_rand() % ncpus;
			while (!(cpu_mask >> c & 1) || spos[c] == slen[c]);
			n = 1 + tu_rand() % maxrec;
		}
		start = spos[c];
		b->chunk_off[b->nchunks] = lseek(fd, 0, SEEK_CUR);
		b->chunk_first[b->nchunks++] = nw;
		for (k = 0; k < n && spos[c] < slen[c]; k++) {
			const struct magnet_record *r =
				(const void *)(stream[c] + spos[c]);

			wrefs[nw].ts = r->timestamp;
			wrefs[nw].cpu = c;
			wrefs[nw].seq = sseq[c]++;
			wrefs[nw].off = b->chunk_off[b->nchunks - 1] +
					MG_CHUNK_HEADER + len;
			wrefs[nw].size = r->size;
			nw++;
			len += r->size;
			spos[c] += r->size;
		}
		tu_assert_int(mg_trace_write_chunk(fd, c, stream[c] + start, len), ==, 0);
		if (spos[c] == slen[c])
			done++;
	}
	b->chunk_first[b->nchunks] = nw;
	b->chunk_off[b->nchunks] = lseek(fd, 0, SEEK_CUR);
	if (trailer) {
		struct mg_trailer_cpu tc[64];
		struct mg_trailer t = {
			.stop_realtime_ns = 1700000001000000000ULL,
			.stop_clock_ns = 9999,
			.ncpus = ncpus,
			.cpu = tc,
		};

		memset(tc, 0, sizeof(tc));
		for (c = 0; c < ncpus; c++) {
			tc[c].cpu = c;
			tc[c].flags = c % 2 ? MG_TRAILER_KSTATS : 0;
			tc[c].records = sseq[c];
			tc[c].bytes = slen[c];
			tc[c].lost.full = c + 1;
			tc[c].lost.overwritten = 7;
			tc[c].kstats.written = 100 + c;
			tc[c].kstats.overwritten = 200 + c;
		}
		tu_assert_int(mg_trace_write_trailer(fd, &t), ==, 0);
	}
	b->size = lseek(fd, 0, SEEK_CUR);
	close(fd);
	for (c = 0; c < ncpus; c++)
		free(stream[c]);
	b->refs = wrefs;
	b->nrefs = nw;
}

static void unbuild(struct built *b)
{
	unlink(b->path);
	free(b->refs);
}

/* Copy of the built refs, sorted in merge order. */
static struct ref *merged(const struct built *b)
{
	struct ref *m = malloc((b->nrefs + 1) * sizeof(*m));

	memcpy(m, b->refs, b->nrefs * sizeof(*m));
	qsort(m, b->nrefs, sizeof(*m), cmp_ref);
	return m;
}

/* Read every record; check each against the file bytes. Returns count. */
static size_t read_all(struct mg_trace *t, const unsigned char *file,
		       __u64 size, int *ret)
{
	const struct magnet_record *r;
	struct mg_trace_pos pos;
	__u64 last_ts = 0;
	size_t n = 0;
	int rv;

	(void)last_ts;
	while ((rv = mg_trace_next(t, &r, &pos)) == 1) {
		tu_assert_op(pos.offset + r->size, <=, size);
		tu_assert_int(memcmp(r, file + pos.offset, r->size), ==, 0);
		tu_assert_int(mg_record_check(r, r->size, 0), ==, 0);
		n++;
	}
	*ret = rv;
	return n;
}

START_TEST(header_roundtrip)
{
	const struct mg_trace_info *in;
	const struct mg_trailer *tr;
	struct mg_trace_error err;
	struct mg_trace *t;
	const struct magnet_record *r;
	struct built b;
	unsigned int c;

	tu_seed(1);
	build(&b, 3, 0, 0, 1, true);	/* no records at all */
	ck_assert_int_eq(mg_trace_open(&t, b.path, &err), 0);
	in = mg_trace_info(t);
	ck_assert_uint_eq(in->version, MG_TRACE_VERSION);
	ck_assert_uint_eq(in->record_version, MAGNET_FORMAT_VERSION);
	ck_assert_uint_eq(in->ncpus, 3);
	ck_assert_uint_eq(in->header_len, 224 + 64);	/* 63 bytes of text, padded */
	ck_assert_uint_eq(in->header_len, b.header_len);
	ck_assert_uint_eq(in->start_realtime_ns, 1700000000000000000ULL);
	ck_assert_uint_eq(in->start_clock_ns, 5000);
	ck_assert_str_eq(in->clock, "mono");
	ck_assert_uint_eq(in->tsc_khz, 0);
	ck_assert_str_eq(in->hostname, "testhost");
	ck_assert_str_eq(in->release, "6.1.0-test");
	ck_assert_uint_eq(in->probes_len, sizeof(probes_text) - 1);
	ck_assert_int_eq(memcmp(in->probes, probes_text, in->probes_len), 0);
	ck_assert_uint_eq(mg_trace_probes(t)->n, 2);
	/* A table without names: the names the module gave by default. */
	ck_assert_str_eq(mg_event_name(mg_trace_probes(t), 17), "vfs_read%return");
	ck_assert_str_eq(mg_probes_find(mg_trace_probes(t), 17)->target, "vfs_read");

	tr = mg_trace_trailer(t);
	ck_assert_ptr_nonnull(tr);
	ck_assert_uint_eq(tr->ncpus, 3);
	ck_assert_uint_eq(tr->stop_realtime_ns, 1700000001000000000ULL);
	ck_assert_uint_eq(tr->stop_clock_ns, 9999);
	for (c = 0; c < 3; c++) {
		ck_assert_uint_eq(tr->cpu[c].cpu, c);
		ck_assert_uint_eq(tr->cpu[c].flags, c % 2 ? MG_TRAILER_KSTATS : 0);
		ck_assert_uint_eq(tr->cpu[c].lost.full, c + 1);
		ck_assert_uint_eq(tr->cpu[c].lost.overwritten, 7);
		ck_assert_uint_eq(tr->cpu[c].kstats.cpu, c);
		ck_assert_uint_eq(tr->cpu[c].kstats.written, 100 + c);
		ck_assert_uint_eq(tr->cpu[c].kstats.overwritten, 200 + c);
	}
	ck_assert_int_eq(mg_trace_next(t, &r, NULL), 0);
	ck_assert_int_eq(mg_trace_next(t, &r, NULL), 0);
	ck_assert_ptr_null(mg_trace_error(t));
	mg_trace_close(t);
	unbuild(&b);
}
END_TEST

/* tsc_khz sits at offset 220, where files before it had a reserved 0. */
/* One kprobe record of event id at buf (no args); its size. */
static size_t probe_rec(unsigned char *buf, unsigned int id, __u64 ts)
{
	struct mg_record_hdr h = { .event_id = id, .cpu = 0, .timestamp = ts,
				   .pid = 1, .tgid = 1, .cgroup = 1 };
	ssize_t n = mg_record_encode_kprobe(buf, 256, &h, NULL, 0);

	tu_assert_int(n, >, 0);
	return n;
}

/*
 * PRBS chunks: probes added while the trace was written are named; an id
 * keeps its first name (the header's here); the padding is no line; a
 * chunk not of cpu 0xffffffff is corruption.
 */
START_TEST(probes_chunk)
{
	static const char more[] =
		"18\tkprobe\tdo_sys_open\t2\t0\t0\n17\tkprobe\trenamed\t1\t0\t0\n";
	static const char custom[] = "id\ttype\n19\tcustom\tmy_event\t0";
	unsigned char rec[256], h[MG_CHUNK_HEADER], *d;
	const struct magnet_record *r;
	const struct mg_probe_table *pt;
	struct mg_trace_info info;
	struct mg_trace_error e;
	struct mg_trace *t;
	char path[64];
	__u64 custom_off;
	unsigned int ids[3], n = 0;
	size_t len;
	int fd, ret;
	__u64 len64;

	fd = tu_tmpfile(path);
	fill_info(&info, 1);
	tu_assert_int(mg_trace_write_header(fd, &info), ==, 0);
	tu_assert_int(mg_trace_write_chunk(fd, 0, rec, probe_rec(rec, 16, 10)), ==, 0);
	tu_assert_int(mg_trace_write_probes(fd, more, sizeof(more) - 1), ==, 0);
	tu_assert_int(mg_trace_write_chunk(fd, 0, rec, probe_rec(rec, 18, 20)), ==, 0);
	custom_off = lseek(fd, 0, SEEK_CUR);
	tu_assert_int(mg_trace_write_probes(fd, custom, sizeof(custom) - 1), ==, 0);
	tu_assert_int(mg_trace_write_chunk(fd, 0, rec, probe_rec(rec, 19, 30)), ==, 0);
	tu_assert_int(mg_trace_write_probes(fd, custom, 0), ==, -EINVAL);
	close(fd);

	/* Zero-padded to 8 bytes, cpu 0xffffffff. */
	d = tu_read_file(path, &len);
	memcpy(h, d + custom_off, sizeof(h));
	memcpy(&len64, h + 8, 8);
	ck_assert_uint_eq(len64, (sizeof(custom) - 1 + 7) / 8 * 8);
	ck_assert_uint_eq(h[0] | h[1] << 8 | h[2] << 16 | (__u32)h[3] << 24,
			  0x53425250);	/* little-endian test machines */
	ck_assert_int_eq(memcmp(h + 4, "\xff\xff\xff\xff", 4), 0);
	ck_assert_int_eq(d[custom_off + MG_CHUNK_HEADER + sizeof(custom) - 1], 0);

	tu_assert_int(mg_trace_open(&t, path, &e), ==, 0);
	/* The header's table is the header's; the union is the reader's. */
	ck_assert_uint_eq(mg_trace_info(t)->probes_len, sizeof(probes_text) - 1);
	pt = mg_trace_probes(t);
	ck_assert_uint_eq(pt->n, 4);
	ck_assert_str_eq(mg_event_name(pt, 16), "tcp_sendmsg");
	ck_assert_str_eq(mg_event_name(pt, 17), "vfs_read%return");
	ck_assert_str_eq(mg_event_name(pt, 18), "do_sys_open");
	ck_assert_uint_eq(mg_probes_find(pt, 18)->nargs, 2);
	ck_assert_str_eq(mg_event_name(pt, 19), "my_event");
	ck_assert_str_eq(mg_probes_find(pt, 19)->type, "custom");
	while ((ret = mg_trace_next(t, &r, NULL)) == 1 && n < 3)
		ids[n++] = r->event_id;
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ids[0], 16);
	ck_assert_uint_eq(ids[1], 18);
	ck_assert_uint_eq(ids[2], 19);
	ck_assert_ptr_null(mg_trace_error(t));
	mg_trace_close(t);

	/* A PRBS chunk of a CPU: the index ends there, with a clear error. */
	d[custom_off + 4] = 0;
	tu_write_file(path, d, len);
	tu_assert_int(mg_trace_open(&t, path, &e), ==, 0);
	n = 0;
	while ((ret = mg_trace_next(t, &r, NULL)) == 1)
		n++;
	ck_assert_int_eq(ret, -EBADMSG);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(mg_trace_error(t)->offset, custom_off);
	ck_assert_ptr_nonnull(strstr(mg_trace_error(t)->reason, "probe table chunk with cpu"));
	ck_assert_str_eq(mg_event_name(mg_trace_probes(t), 19), "unknown");
	mg_trace_close(t);
	free(d);
	unlink(path);
}
END_TEST

/* n probe lines naming ids from..from - n + 1 (mod 2^16), "p<id>". */
static char *lines_text(size_t n, unsigned int from, size_t *len)
{
	char *s = malloc(n * 32 + 1);
	size_t i, at = 0;

	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++) {
		unsigned int id = (from - i) & MAGNET_EVENT_MAX;

		at += sprintf(s + at, "%u\tkprobe\tp%u\t1\t0\t0\n", id, id);
	}
	*len = at;
	return s;
}

/* A trace whose header holds text and whose cpu 0 holds records of ids. */
static void probes_trace(char *path, const char *text, size_t len,
			 const unsigned int *ids, size_t nids)
{
	struct mg_trace_info info;
	unsigned char rec[256];
	size_t i;
	int fd = tu_tmpfile(path);

	fill_info(&info, 1);
	info.probes = text;
	info.probes_len = len;
	tu_assert_int(mg_trace_write_header(fd, &info), ==, 0);
	for (i = 0; i < nids; i++)
		tu_assert_int(mg_trace_write_chunk(fd, 0, rec,
						   probe_rec(rec, ids[i], 10 + i)), ==, 0);
	close(fd);
}

/*
 * A header may name every event id, in any order, and each record is
 * named by its line; a header of more probe lines than there are ids (a
 * million, say) is refused at open with a clear error, before any record.
 */
START_TEST(probes_header_limit)
{
	static const unsigned int ids[] = { 16, 65535, 40000, 17 };
	const struct magnet_record *r;
	const struct mg_probe_table *pt;
	struct mg_trace_error e;
	struct mg_trace *t;
	char path[64], name[16];
	unsigned int id;
	size_t len, n = 0;
	char *text;

	text = lines_text(MG_PROBES_MAX, MAGNET_EVENT_MAX, &len);
	probes_trace(path, text, len, ids, 4);
	free(text);
	tu_assert_int(mg_trace_open(&t, path, &e), ==, 0);
	pt = mg_trace_probes(t);
	ck_assert_uint_eq(pt->n, MG_PROBES_MAX);
	for (id = MAGNET_EVENT_FIRST_DYNAMIC; id <= MAGNET_EVENT_MAX; id++) {
		snprintf(name, sizeof(name), "p%u", id);
		ck_assert_str_eq(mg_event_name(pt, id), name);
	}
	while (mg_trace_next(t, &r, NULL) == 1) {
		snprintf(name, sizeof(name), "p%u", ids[n]);
		ck_assert_str_eq(mg_event_name(pt, r->event_id), name);
		n++;
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_ptr_null(mg_trace_error(t));
	mg_trace_close(t);
	unlink(path);

	text = lines_text(1000000, MAGNET_EVENT_MAX, &len);
	probes_trace(path, text, len, ids, 4);
	free(text);
	memset(&e, 0, sizeof(e));
	tu_assert_int(mg_trace_open(&t, path, &e), ==, -EBADMSG);
	ck_assert_uint_eq(e.offset, MG_TRACE_FIXED_HEADER);
	ck_assert_str_eq(e.what, "header");
	ck_assert_str_eq(e.reason, "probe table of more than 65536 probe lines (one per event id)");
	unlink(path);
}
END_TEST

/*
 * A PRBS chunk over the limit is corruption at its offset: the lines
 * before the limit name records, every record is still returned, and the
 * error comes at the end.
 */
START_TEST(probes_chunk_limit)
{
	unsigned char rec[256];
	struct mg_trace_info info;
	struct mg_trace_error e;
	const struct magnet_record *r;
	struct mg_trace *t;
	char path[64], *text;
	__u64 chunk_off;
	size_t len, n = 0;
	int fd, ret;

	fd = tu_tmpfile(path);
	fill_info(&info, 1);
	tu_assert_int(mg_trace_write_header(fd, &info), ==, 0);
	tu_assert_int(mg_trace_write_chunk(fd, 0, rec, probe_rec(rec, 300, 10)), ==, 0);
	chunk_off = lseek(fd, 0, SEEK_CUR);
	text = lines_text(MG_PROBES_MAX + 1, 300, &len);
	tu_assert_int(mg_trace_write_probes(fd, text, len), ==, 0);
	free(text);
	tu_assert_int(mg_trace_write_chunk(fd, 0, rec, probe_rec(rec, 299, 20)), ==, 0);
	close(fd);

	tu_assert_int(mg_trace_open(&t, path, &e), ==, 0);
	while ((ret = mg_trace_next(t, &r, NULL)) == 1)
		n++;
	ck_assert_int_eq(ret, -EBADMSG);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(mg_trace_error(t)->offset, chunk_off);
	ck_assert_str_eq(mg_trace_error(t)->reason,
			 "probe table chunk of more than 65536 probe lines (one per event id)");
	/* The header's names, then the chunk's up to the limit. */
	ck_assert_str_eq(mg_event_name(mg_trace_probes(t), 16), "tcp_sendmsg");
	ck_assert_str_eq(mg_event_name(mg_trace_probes(t), 300), "p300");
	ck_assert_str_eq(mg_event_name(mg_trace_probes(t), 299), "p299");
	mg_trace_close(t);
	unlink(path);
}
END_TEST

/* The writer's side: which chunks need a look, what is added, once. */
START_TEST(probe_watch)
{
	static const char head[] = "16\tkprobe\ta\t0\t0\t0";	/* no newline */
	static const char fresh[] =
		"magnet probes\n16\tkprobe\tb\t0\t0\t0\n18\tkretprobe\tc\t1\t0\t0\n"
		"bad line\n20\tkprobe\td\t0\t0\t0";
	unsigned char chunk[1024];
	struct mg_probe_watch *pw = mg_probe_watch_new(head, sizeof(head) - 1);
	struct mg_probe_table pt;
	const char *text;
	size_t n, added, tlen;

	ck_assert_ptr_nonnull(pw);
	text = mg_probe_watch_text(pw, &tlen);
	ck_assert_uint_eq(tlen, sizeof(head) - 1);
	ck_assert_int_eq(memcmp(text, head, tlen), 0);

	n = probe_rec(chunk, 16, 1);
	ck_assert(!mg_probe_watch_need(pw, chunk, n));
	n += probe_rec(chunk + n, 18, 2);
	n += probe_rec(chunk + n, 19, 3);
	ck_assert(mg_probe_watch_need(pw, chunk, n));
	/* Not the whole chunk: the records before a bad size only. */
	ck_assert(!mg_probe_watch_need(pw, chunk, 8));

	tu_assert_int(mg_probe_watch_update(pw, fresh, sizeof(fresh) - 1, chunk, n,
					    &added), ==, 0);
	ck_assert_uint_eq(added, sizeof(head) - 1);
	text = mg_probe_watch_text(pw, &tlen);
	ck_assert_uint_eq(tlen - added, 40);
	ck_assert_int_eq(memcmp(text + added,
				"\n18\tkretprobe\tc\t1\t0\t0\n20\tkprobe\td\t0\t0\t0\n", 40), 0);
	tu_assert_int(mg_probes_parse(&pt, text, tlen), ==, 0);
	ck_assert_uint_eq(pt.n, 3);
	ck_assert_str_eq(mg_event_name(&pt, 16), "a");
	mg_probes_free(&pt);
	/* 18 is named, 19 was looked up (not there): neither asks again. */
	ck_assert(!mg_probe_watch_need(pw, chunk, n));
	n = probe_rec(chunk, 19, 4);
	ck_assert(!mg_probe_watch_need(pw, chunk, n));
	n = probe_rec(chunk, 20, 5);
	ck_assert(!mg_probe_watch_need(pw, chunk, n));
	n = probe_rec(chunk, 21, 6);
	ck_assert(mg_probe_watch_need(pw, chunk, n));
	/* Nothing to read (no probes file): nothing added, asked once. */
	tu_assert_int(mg_probe_watch_update(pw, NULL, 0, chunk, n, &added), ==, 0);
	ck_assert_uint_eq(added, tlen);
	mg_probe_watch_text(pw, &n);
	ck_assert_uint_eq(n, tlen);
	n = probe_rec(chunk, 21, 7);
	ck_assert(!mg_probe_watch_need(pw, chunk, n));
	mg_probe_watch_free(pw);

	/* An empty start. */
	pw = mg_probe_watch_new(NULL, 0);
	ck_assert_ptr_nonnull(pw);
	mg_probe_watch_text(pw, &tlen);
	ck_assert_uint_eq(tlen, 0);
	n = probe_rec(chunk, 16, 1);
	ck_assert(mg_probe_watch_need(pw, chunk, n));
	tu_assert_int(mg_probe_watch_update(pw, head, sizeof(head) - 1, chunk, n,
					    &added), ==, 0);
	text = mg_probe_watch_text(pw, &tlen);
	ck_assert_uint_eq(added, 0);
	ck_assert_uint_eq(tlen, sizeof(head));
	ck_assert_int_eq(memcmp(text, "16\tkprobe\ta\t0\t0\t0\n", tlen), 0);
	mg_probe_watch_free(pw);
}
END_TEST

START_TEST(header_tsc_khz)
{
	static const __u32 khz[] = { 0, 1, 2999999, UINT32_MAX };
	struct mg_trace_info info;
	struct mg_trace_error err;
	struct mg_trace *t;
	unsigned char *data;
	char path[64];
	unsigned int i;
	size_t len;
	__u32 v;

	for (i = 0; i < sizeof(khz) / sizeof(khz[0]); i++) {
		int fd = tu_tmpfile(path);

		fill_info(&info, 2);
		strcpy(info.clock, i % 2 ? "tsc" : "mono");
		info.tsc_khz = khz[i];
		ck_assert_int_eq(mg_trace_write_header(fd, &info), 0);
		close(fd);
		data = tu_read_file(path, &len);
		memcpy(&v, data + 220, 4);
		ck_assert_uint_eq(v, khz[i]);
		free(data);
		ck_assert_int_eq(mg_trace_open(&t, path, &err), 0);
		ck_assert_uint_eq(mg_trace_info(t)->tsc_khz, khz[i]);
		ck_assert_str_eq(mg_trace_info(t)->clock, i % 2 ? "tsc" : "mono");
		mg_trace_close(t);
		unlink(path);
	}
}
END_TEST

/* Merged order: timestamp, then CPU, then stream order; offsets exact. */
static void check_merge(unsigned int ncpus, unsigned long mask,
			unsigned int nper, unsigned int maxrec, bool trailer)
{
	const struct magnet_record *r;
	struct mg_trace_error err;
	struct mg_trace_pos pos;
	struct mg_trace *t;
	struct built b;
	struct ref *m;
	size_t i = 0, caps = 0;

	build(&b, ncpus, mask, nper, maxrec, trailer);
	m = merged(&b);
	tu_assert_int(mg_trace_open(&t, b.path, &err), ==, 0);
	while (mg_trace_next(t, &r, &pos) == 1) {
		tu_assert_op(i, <, b.nrefs);
		tu_assert_op(r->timestamp, ==, m[i].ts);
		tu_assert_op(pos.cpu, ==, m[i].cpu);
		tu_assert_op(r->cpu, ==, m[i].cpu);
		tu_assert_op(r->abstract_id, ==, (__u64)m[i].cpu << 32 | m[i].seq);
		tu_assert_op(pos.offset, ==, m[i].off);
		tu_assert_op(r->size, ==, m[i].size);
		caps += mg_record_has_capture(r);
		i++;
	}
	tu_assert_op(i, ==, b.nrefs);
	/* The random streams carry capture records (a fifth or so). */
	if (b.nrefs >= 200)
		tu_assert_op(caps, >=, b.nrefs / 10);
	ck_assert_ptr_null(mg_trace_error(t));
	tu_assert_int(!!mg_trace_trailer(t), ==, trailer);
	mg_trace_close(t);
	free(m);
	unbuild(&b);
}

START_TEST(merge_interleaved)
{
	tu_seed(2);
	check_merge(4, 0xf, 3000, 40, true);
}
END_TEST

START_TEST(merge_sparse_cpus)
{
	/* CPUs 2 and 5 of 8 have data; the others have no chunks at all. */
	tu_seed(3);
	check_merge(8, 1 << 2 | 1 << 5, 500, 7, false);
}
END_TEST

START_TEST(merge_one_record_chunks)
{
	tu_seed(4);
	check_merge(3, 0x7, 300, 1, true);
}
END_TEST

START_TEST(merge_big_chunks)
{
	/* Chunks far larger than the reader's window: records straddle it. */
	tu_seed(5);
	check_merge(2, 0x3, 40000, 30000, true);
}
END_TEST

START_TEST(merge_many_cpus)
{
	tu_seed(6);
	check_merge(64, ~0UL, 50, 5, true);
}
END_TEST

/* Open a mutated copy of b's file. */
static int open_mutated(struct built *b, void (*mutate)(unsigned char *, size_t *, void *),
			void *arg, struct mg_trace **t, struct mg_trace_error *err,
			unsigned char **data, size_t *len)
{
	char path[64];
	int fd, r;

	*data = tu_read_file(b->path, len);
	*data = realloc(*data, *len + 64);
	mutate(*data, len, arg);
	fd = tu_tmpfile(path);
	close(fd);
	tu_write_file(path, *data, *len);
	r = mg_trace_open(t, path, err);
	unlink(path);
	return r;
}

struct hmut {
	size_t off;
	unsigned int width;
	__u64 value;
	__u64 want_off;
	const char *want;	/* substring of the reason */
};

static const struct hmut hmuts[] = {
	{ 0, 1, 'X', 0, "magic" },
	{ 8, 4, 0x04030201, 8, "other byte order" },
	{ 8, 4, 0x11111111, 8, "byte-order mark" },
	{ 12, 2, 2, 12, "file format version 2" },
	{ 14, 2, MAGNET_FORMAT_VERSION + 1, 14, "record format version " },
	{ 14, 2, 0, 14, "record format version 0" },
	{ 16, 4, 225, 16, "header length" },
	{ 16, 4, 216, 16, "header length" },
	{ 16, 4, 1000000000, 16, "past the end" },
	{ 20, 4, 0, 20, "CPU count" },
	{ 20, 4, MG_TRACE_MAX_CPUS + 1, 20, "CPU count" },
	{ 55, 1, 'x', 40, "NUL" },
	{ 135, 1, 'x', 56, "NUL" },
	{ 215, 1, 'x', 136, "NUL" },
	{ 216, 4, 65, 16, "probe table" },
	/* 220 (tsc_khz, formerly reserved) takes any value: header_tsc_khz */
};

static void mutate_header(unsigned char *d, size_t *len, void *arg)
{
	const struct hmut *m = arg;

	(void)len;
	memcpy(d + m->off, &m->value, m->width);	/* little-endian host */
}

START_TEST(corrupt_header)
{
	const struct hmut *m = &hmuts[_i];
	struct mg_trace_error err;
	struct mg_trace *t = NULL;
	unsigned char *data;
	struct built b;
	size_t len;

	tu_seed(7);
	build(&b, 2, 3, 10, 5, true);
	ck_assert_int_eq(open_mutated(&b, mutate_header, (void *)m, &t, &err,
				      &data, &len), -EBADMSG);
	ck_assert_uint_eq(err.offset, m->want_off);
	ck_assert_str_eq(err.what, "header");
	ck_assert_msg(strstr(err.reason, m->want), "reason \"%s\" lacks \"%s\"",
		      err.reason, m->want);
	free(data);
	unbuild(&b);
}
END_TEST

static void mutate_cut(unsigned char *d, size_t *len, void *arg)
{
	(void)d;
	*len = *(size_t *)arg;
}

START_TEST(corrupt_short_file)
{
	struct mg_trace_error err;
	struct mg_trace *t;
	unsigned char *data;
	struct built b;
	size_t len, cut;

	tu_seed(8);
	build(&b, 2, 3, 10, 5, true);
	for (cut = 0; cut < b.header_len; cut += 13) {
		ck_assert_int_eq(open_mutated(&b, mutate_cut, &cut, &t, &err,
					      &data, &len), -EBADMSG);
		ck_assert_str_eq(err.what, "header");
		ck_assert_uint_eq(err.offset, cut < 224 ? 0 : 16);
		free(data);
	}
	unbuild(&b);
}
END_TEST

START_TEST(open_errors)
{
	struct mg_trace_error err;
	struct mg_trace *t;
	int p[2];

	ck_assert_int_eq(mg_trace_open(&t, "/nonexistent/magnet.trace", &err), -ENOENT);
	ck_assert_str_eq(err.reason, strerror(ENOENT));
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(mg_trace_fdopen(&t, p[0], &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.reason, "seekable"));
	close(p[0]);
	close(p[1]);
}
END_TEST

START_TEST(writer_errors)
{
	struct mg_trace_info in;
	__u64 rec[8] = { 0 };
	char path[64];
	int fd = tu_tmpfile(path);

	ck_assert_int_eq(mg_trace_write_chunk(fd, 0, rec, 0), -EINVAL);
	ck_assert_int_eq(mg_trace_write_chunk(fd, 0, rec, 12), -EINVAL);
	ck_assert_int_eq(mg_trace_write_chunk(fd, MG_CHUNK_NO_CPU, rec, 8), -EINVAL);
	fill_info(&in, 0);
	ck_assert_int_eq(mg_trace_write_header(fd, &in), -EINVAL);
	close(fd);
	unlink(path);
	fill_info(&in, 1);
	ck_assert_int_eq(mg_trace_write_header(fd, &in), -EBADF);
	ck_assert_int_eq(mg_trace_write_chunk(fd, 0, rec, 8), -EBADF);
}
END_TEST

/*
 * Chunk-level damage. The trace: chunk 0 cpu0, 1 cpu1, 2 cpu0, 3 cpu1,
 * 10 records each, then the trailer (chunk_off[4]).
 */
struct cmut {
	int kind;
	unsigned int chunk;
	__u64 arg;
	const char *what;
	const char *want;
	unsigned int want_chunks;	/* records of chunks < this are read */
};

enum { M_TYPE, M_CPU, M_LEN, M_CUT, M_APPEND, M_TRAILER_CPU, M_TRAILER_ESIZE };

static const struct cmut cmuts[] = {
	{ M_TYPE, 1, 0x12345678, "chunk", "unknown chunk type", 1 },
	{ M_CPU, 2, 2, "chunk", "header says 2 CPUs", 2 },
	{ M_LEN, 1, 1ULL << 40, "chunk", "past the end", 1 },
	{ M_LEN, 1, 4, "chunk", "multiple of 8", 1 },
	{ M_LEN, 3, 0, "chunk", "empty data chunk", 3 },
	{ M_CUT, 2, 5, "chunk", "inside a chunk header", 2 },
	{ M_CUT, 2, 16, "chunk", "past the end", 2 },
	{ M_CUT, 3, 100, "chunk", "past the end", 3 },
	{ M_CUT, 4, 8, "chunk", "inside a chunk header", 4 },
	{ M_CUT, 4, 40, "chunk", "past the end", 4 },
	{ M_TRAILER_CPU, 4, 0, "chunk", "trailer chunk with cpu", 4 },
	{ M_TRAILER_ESIZE, 4, 8, "trailer", "bad trailer", 4 },
	{ M_APPEND, 5, 16, "chunk", "after the trailer", 4 },
};

static struct built *cur_built;

/*
 * The trace the damage tests start from: chunk 0 cpu0 (refs 0-9, seq
 * 0-9), chunk 1 cpu1 (refs 10-19), chunk 2 cpu0 (refs 20-29, seq 10-19),
 * chunk 3 cpu1 (refs 30-39), trailer.
 */
static void build_regular(struct built *b)
{
	tu_seed(9);
	regular_plan = true;
	build(b, 2, 3, 20, 10, true);
	regular_plan = false;
	ck_assert_uint_eq(b->nchunks, 4);
	ck_assert_uint_eq(b->chunk_first[3], 30);
	ck_assert_uint_eq(b->refs[10].cpu, 1);
	ck_assert_uint_eq(b->refs[20].cpu, 0);
	cur_built = b;
}

static void mutate_chunk(unsigned char *d, size_t *len, void *arg)
{
	const struct cmut *m = arg;
	__u64 off = m->kind == M_APPEND ? *len : cur_built->chunk_off[m->chunk];
	__u32 v32 = m->arg;

	switch (m->kind) {
	case M_TYPE:
		memcpy(d + off, &v32, 4);
		break;
	case M_CPU:
		memcpy(d + off + 4, &v32, 4);
		break;
	case M_LEN:
		if (m->arg == 4) {
			__u64 l;

			memcpy(&l, d + off + 8, 8);
			l -= 4;
			memcpy(d + off + 8, &l, 8);
		} else {
			memcpy(d + off + 8, &m->arg, 8);
		}
		break;
	case M_CUT:
		*len = off + m->arg;
		break;
	case M_APPEND:
		memset(d + off, 0, m->arg);
		*len += m->arg;
		break;
	case M_TRAILER_CPU:
		memcpy(d + off + 4, &v32, 4);
		break;
	case M_TRAILER_ESIZE:
		memcpy(d + off + MG_CHUNK_HEADER + 4, &v32, 4);
		break;
	}
}

START_TEST(corrupt_chunk)
{
	const struct cmut *m = &cmuts[_i];
	const struct mg_trace_error *e;
	struct mg_trace_error err;
	struct mg_trace *t;
	unsigned char *data;
	struct built b;
	size_t len, n;
	int ret;

	build_regular(&b);
	ck_assert_int_eq(open_mutated(&b, mutate_chunk, (void *)m, &t, &err,
				      &data, &len), 0);
	n = read_all(t, data, len, &ret);
	ck_assert_int_eq(ret, -EBADMSG);
	ck_assert_uint_eq(n, b.chunk_first[m->want_chunks]);
	e = mg_trace_error(t);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->what, m->what);
	ck_assert_uint_eq(e->offset, m->kind == M_APPEND ? b.size :
			  m->kind == M_TRAILER_ESIZE ? b.chunk_off[4] + MG_CHUNK_HEADER :
			  b.chunk_off[m->chunk]);
	ck_assert_msg(strstr(e->reason, m->want), "reason \"%s\" lacks \"%s\"",
		      e->reason, m->want);
	/* The trailer survives damage after it. */
	ck_assert_int_eq(!!mg_trace_trailer(t), m->kind == M_APPEND);
	mg_trace_close(t);
	free(data);
	unbuild(&b);
}
END_TEST

struct rmut {
	unsigned int rec[2];	/* indexes into refs (write order); ~0 = none */
	int field;		/* 0 size, 1 flags, 2 event id */
	__u32 value;
};

static void mutate_records(unsigned char *d, size_t *len, void *arg)
{
	const struct rmut *m = arg;
	unsigned int i;

	(void)len;
	for (i = 0; i < 2; i++) {
		struct magnet_record *r;

		if (m->rec[i] == ~0U)
			continue;
		r = (void *)(d + cur_built->refs[m->rec[i]].off);
		if (m->field == 0)
			r->size = m->value ? m->value : r->size + 8;
		else if (m->field == 1)
			r->flags = m->value;
		else
			r->event_id = m->value;
	}
}

/* Records of one CPU stream are read up to the bad one; others go on. */
START_TEST(corrupt_record)
{
	static const struct rmut cases[] = {
		{ { 25, ~0U }, 0, 12 },		/* cpu0 seq 15: size < 40 */
		{ { 25, ~0U }, 1, 1U << 3 },	/* undefined flag */
		{ { 25, ~0U }, 2, 5 },		/* reserved event id */
		{ { 29, ~0U }, 0, 0 },		/* last of its chunk: runs past it */
		{ { 25, 3 }, 0, 44 },		/* two: lowest offset (seq 3) wins */
	};
	const struct rmut *m = &cases[_i];
	const struct mg_trace_error *e;
	struct mg_trace_error err;
	struct mg_trace *t;
	unsigned char *data;
	unsigned int bad;
	struct built b;
	size_t len, n;
	int ret;

	build_regular(&b);
	ck_assert_int_eq(open_mutated(&b, mutate_records, (void *)m, &t, &err,
				      &data, &len), 0);
	n = read_all(t, data, len, &ret);
	ck_assert_int_eq(ret, -EBADMSG);
	e = mg_trace_error(t);
	ck_assert_str_eq(e->what, "record");
	bad = m->rec[1] != ~0U ? m->rec[1] : m->rec[0];
	ck_assert_uint_eq(e->offset, b.refs[bad].off);
	/* cpu0 stops before its bad record (seq = ref, or ref - 10 in chunk
	 * 2); all 20 of cpu1 are read. */
	ck_assert_uint_eq(n, (bad < 10 ? bad : bad - 10) + 20);
	if (m->value == 0)
		ck_assert_ptr_nonnull(strstr(e->reason, "end of its chunk"));
	mg_trace_close(t);
	free(data);
	unbuild(&b);
}
END_TEST

/* Cut the file at every chunk boundary and at random points inside. */
START_TEST(fuzz_truncation)
{
	unsigned char *orig;
	struct built b;
	size_t len, iter;

	tu_seed(11);
	build(&b, 3, 7, 400, 25, true);
	orig = tu_read_file(b.path, &len);
	tu_assert_op(len, ==, b.size);
	for (iter = 0; iter < 600; iter++) {
		struct mg_trace_error err;
		struct mg_trace *t;
		unsigned char *data;
		size_t cut, dlen, n;
		unsigned int k;
		int ret;

		if (iter < 3 * b.nchunks + 3)
			cut = b.chunk_off[iter / 3] + (iter % 3) * 7;
		else
			cut = b.header_len + tu_rand() % (len - b.header_len);
		if (cut > len)
			cut = len;
		tu_assert_int(open_mutated(&b, mutate_cut, &cut, &t, &err,
					      &data, &dlen), ==, 0);
		n = read_all(t, orig, cut, &ret);
		/* Chunk k holds the cut; chunks before it are intact. */
		for (k = 0; k < b.nchunks && b.chunk_off[k + 1] <= cut; k++)
			;
		if (cut == len) {
			tu_assert_int(ret, ==, 0);
			ck_assert_ptr_nonnull(mg_trace_trailer(t));
		} else if (cut == b.chunk_off[k]) {
			tu_assert_int(ret, ==, 0);
			ck_assert_ptr_null(mg_trace_trailer(t));
		} else {
			tu_assert_int(ret, ==, -EBADMSG);
			tu_assert_op(mg_trace_error(t)->offset, ==, b.chunk_off[k]);
		}
		tu_assert_op(n, ==, b.chunk_first[k]);
		mg_trace_close(t);
		free(data);
	}
	free(orig);
	unbuild(&b);
}
END_TEST

static void mutate_flip(unsigned char *d, size_t *len, void *arg)
{
	unsigned int i, n = 1 + tu_rand() % 4;

	(void)arg;
	for (i = 0; i < n; i++) {
		size_t bit = tu_rand() % (*len * 8);

		d[bit / 8] ^= 1U << (bit % 8);
	}
}

/* Random bit flips anywhere: errors or records, but never garbage. */
START_TEST(fuzz_bitflips)
{
	unsigned int iter, failed_open = 0, corrupt = 0, clean = 0;
	struct built b;

	tu_seed(12);
	build(&b, 3, 7, 300, 25, true);
	for (iter = 0; iter < 1500; iter++) {
		struct mg_trace_error err;
		struct mg_trace *t;
		unsigned char *data;
		size_t dlen;
		int ret;

		ret = open_mutated(&b, mutate_flip, NULL, &t, &err, &data, &dlen);
		if (ret) {
			tu_assert_int(ret, ==, -EBADMSG);
			tu_assert_op(err.offset, <, dlen);
			tu_assert_op(strlen(err.reason), >, 0);
			failed_open++;
		} else {
			read_all(t, data, dlen, &ret);
			if (ret) {
				tu_assert_int(ret, ==, -EBADMSG);
				tu_assert_op(mg_trace_error(t)->offset, <=, dlen);
				corrupt++;
			} else {
				clean++;
			}
			mg_trace_close(t);
		}
		free(data);
	}
	/* Flips in payloads are undetectable; the rest must be caught. */
	tu_assert_op(failed_open, >, 0);
	tu_assert_op(corrupt, >, 0);
	tu_assert_op(clean, >, 0);
	unbuild(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("roundtrip");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, header_roundtrip);
	tcase_add_test(tc, header_tsc_khz);
	tcase_add_test(tc, probes_chunk);
	tcase_add_test(tc, probe_watch);
	tcase_add_test(tc, probes_header_limit);
	tcase_add_test(tc, probes_chunk_limit);
	tcase_add_test(tc, merge_interleaved);
	tcase_add_test(tc, merge_sparse_cpus);
	tcase_add_test(tc, merge_one_record_chunks);
	tcase_add_test(tc, merge_big_chunks);
	tcase_add_test(tc, merge_many_cpus);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, writer_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("corrupt");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, corrupt_header, 0, sizeof(hmuts) / sizeof(hmuts[0]));
	tcase_add_test(tc, corrupt_short_file);
	tcase_add_loop_test(tc, corrupt_chunk, 0, sizeof(cmuts) / sizeof(cmuts[0]));
	tcase_add_loop_test(tc, corrupt_record, 0, 5);
	tcase_add_test(tc, fuzz_truncation);
	tcase_add_test(tc, fuzz_bitflips);
	suite_add_tcase(s, tc);

	return tu_run(s);
}
