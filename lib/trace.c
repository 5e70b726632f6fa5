// SPDX-License-Identifier: GPL-2.0
/*
 * Trace file writer and merging reader; docs/trace-format.md is the spec.
 *
 * Fields are (de)serialised at fixed offsets with memcpy rather than by
 * overlaying structs, so the code reads like the spec's tables and cannot
 * depend on compiler padding. The file is in the writer's byte order, like
 * the records it carries, which are copied verbatim from the rings.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "record.h"
#include "trace.h"

/* Per-stream read window: bounded memory however large the file. */
#define MG_WINDOW	(128 * 1024)
_Static_assert(MG_WINDOW >= 2 * MAGNET_RECORD_MAX, "window too small");

/* Offsets in the fixed header. */
#define H_MAGIC		0
#define H_BYTE_ORDER	8
#define H_VERSION	12
#define H_RECORD_VER	14
#define H_HEADER_LEN	16
#define H_NCPUS		20
#define H_REALTIME	24
#define H_CLOCK_NS	32
#define H_CLOCK		40
#define H_HOSTNAME	56
#define H_RELEASE	136
#define H_PROBES_LEN	216
#define H_TSC_KHZ	220	/* was reserved (0) before tsc_khz existed */

/* Offsets in a trailer CPU entry. */
#define T_CPU		0
#define T_FLAGS		4
#define T_RECORDS	8
#define T_BYTES		16
#define T_LOST		24	/* 4 x u64, struct magnet_lost order */
#define T_KSTATS	56	/* 6 x u64, magnet/stats column order */

static void put16(unsigned char *b, size_t off, __u16 v) { memcpy(b + off, &v, 2); }
static void put32(unsigned char *b, size_t off, __u32 v) { memcpy(b + off, &v, 4); }
static void put64(unsigned char *b, size_t off, __u64 v) { memcpy(b + off, &v, 8); }

static __u16 get16(const unsigned char *b, size_t off)
{
	__u16 v;

	memcpy(&v, b + off, 2);
	return v;
}

static __u32 get32(const unsigned char *b, size_t off)
{
	__u32 v;

	memcpy(&v, b + off, 4);
	return v;
}

static __u64 get64(const unsigned char *b, size_t off)
{
	__u64 v;

	memcpy(&v, b + off, 8);
	return v;
}

/* Copy at most size - 1 bytes of s into zeroed dst. */
static void put_str(unsigned char *dst, const char *s, size_t size)
{
	size_t n = strnlen(s, size - 1);

	memcpy(dst, s, n);
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int mg_trace_write_header(int fd, const struct mg_trace_info *info)
{
	size_t len = align8(MG_TRACE_FIXED_HEADER + info->probes_len);
	unsigned char *b;
	int err;

	if (len > UINT32_MAX || !info->ncpus || info->ncpus > MG_TRACE_MAX_CPUS)
		return -EINVAL;
	b = calloc(1, len);
	if (!b)
		return -ENOMEM;
	memcpy(b + H_MAGIC, MG_TRACE_MAGIC, 8);
	put32(b, H_BYTE_ORDER, MG_TRACE_BYTE_ORDER);
	put16(b, H_VERSION, MG_TRACE_VERSION);
	put16(b, H_RECORD_VER, info->record_version ? info->record_version
						    : MAGNET_FORMAT_VERSION);
	put32(b, H_HEADER_LEN, len);
	put32(b, H_NCPUS, info->ncpus);
	put64(b, H_REALTIME, info->start_realtime_ns);
	put64(b, H_CLOCK_NS, info->start_clock_ns);
	/* Strings are NUL-padded and always keep a terminating NUL. */
	put_str(b + H_CLOCK, info->clock, sizeof(info->clock));
	put_str(b + H_HOSTNAME, info->hostname, sizeof(info->hostname));
	put_str(b + H_RELEASE, info->release, sizeof(info->release));
	put32(b, H_PROBES_LEN, info->probes_len);
	put32(b, H_TSC_KHZ, info->tsc_khz);
	if (info->probes_len)
		memcpy(b + MG_TRACE_FIXED_HEADER, info->probes, info->probes_len);
	err = write_all(fd, b, len);
	free(b);
	return err;
}

static int write_chunk_header(int fd, __u32 type, __u32 cpu, __u64 len)
{
	unsigned char h[MG_CHUNK_HEADER];

	put32(h, 0, type);
	put32(h, 4, cpu);
	put64(h, 8, len);
	return write_all(fd, h, sizeof(h));
}

int mg_trace_write_chunk(int fd, __u32 cpu, const void *data, size_t len)
{
	int err;

	if (!len || len % MAGNET_RECORD_ALIGN || cpu == MG_CHUNK_NO_CPU)
		return -EINVAL;
	err = write_chunk_header(fd, MG_CHUNK_DATA, cpu, len);
	return err ? err : write_all(fd, data, len);
}

int mg_trace_write_trailer(int fd, const struct mg_trailer *t)
{
	size_t len = MG_TRAILER_HEADER + (size_t)t->ncpus * MG_TRAILER_CPU_SIZE;
	unsigned char *b;
	__u32 i;
	int err;

	b = calloc(1, len);
	if (!b)
		return -ENOMEM;
	put32(b, 0, t->ncpus);
	put32(b, 4, MG_TRAILER_CPU_SIZE);
	put64(b, 8, t->stop_realtime_ns);
	put64(b, 16, t->stop_clock_ns);
	for (i = 0; i < t->ncpus; i++) {
		const struct mg_trailer_cpu *c = &t->cpu[i];
		unsigned char *e = b + MG_TRAILER_HEADER + i * MG_TRAILER_CPU_SIZE;

		put32(e, T_CPU, c->cpu);
		put32(e, T_FLAGS, c->flags);
		put64(e, T_RECORDS, c->records);
		put64(e, T_BYTES, c->bytes);
		put64(e, T_LOST + 0, c->lost.full);
		put64(e, T_LOST + 8, c->lost.too_big);
		put64(e, T_LOST + 16, c->lost.nesting);
		put64(e, T_LOST + 24, c->lost.overwritten);
		put64(e, T_KSTATS + 0, c->kstats.written);
		put64(e, T_KSTATS + 8, c->kstats.bytes);
		put64(e, T_KSTATS + 16, c->kstats.lost_full);
		put64(e, T_KSTATS + 24, c->kstats.lost_too_big);
		put64(e, T_KSTATS + 32, c->kstats.lost_nesting);
		put64(e, T_KSTATS + 40, c->kstats.overwritten);
	}
	err = write_chunk_header(fd, MG_CHUNK_TRAILER, MG_CHUNK_NO_CPU, len);
	if (!err)
		err = write_all(fd, b, len);
	free(b);
	return err;
}

int mg_trace_write_probes(int fd, const char *text, size_t len)
{
	static const char zeros[8];
	size_t padded = align8(len);
	int err;

	if (!len)
		return -EINVAL;
	err = write_chunk_header(fd, MG_CHUNK_PROBES, MG_CHUNK_NO_CPU, padded);
	if (!err)
		err = write_all(fd, text, len);
	return err ? err : write_all(fd, zeros, padded - len);
}

/* Probe table of a writer. */

#define ID_WORDS	((MAGNET_EVENT_MAX + 1) / 64)

struct mg_probe_watch {
	char *text;
	size_t len, cap;
	__u64 named[ID_WORDS];		/* a line of text has the id */
	__u64 asked[ID_WORDS];		/* magnet/probes was read for it */
};

static bool id_in(const __u64 *set, unsigned int id)
{
	return set[id / 64] & (1ULL << (id % 64));
}

static void id_set(__u64 *set, unsigned int id)
{
	set[id / 64] |= 1ULL << (id % 64);
}

/* Id of a table line "ID\t...", or -1 (a header, a line that names none). */
static int line_id(const char *l, size_t n)
{
	unsigned int id = 0;
	size_t i;

	for (i = 0; i < n && l[i] >= '0' && l[i] <= '9'; i++) {
		id = id * 10 + (l[i] - '0');
		if (id > MAGNET_EVENT_MAX)
			return -1;
	}
	return i && i < n && l[i] == '\t' ? (int)id : -1;
}

/* Append the lines of text with ids not named yet (all: initial table). */
static int watch_add(struct mg_probe_watch *pw, const char *text, size_t len,
		     bool all)
{
	size_t need = pw->len + len + 2, off = 0;

	if (need > pw->cap) {
		char *t = realloc(pw->text, need);

		if (!t)
			return -ENOMEM;
		pw->text = t;
		pw->cap = need;
	}
	if (all) {
		memcpy(pw->text + pw->len, text, len);
		pw->len += len;
	}
	while (off < len) {
		const char *l = text + off, *nl = memchr(l, '\n', len - off);
		size_t n = nl ? (size_t)(nl - l) : len - off;
		int id = line_id(l, n);

		off += n + 1;
		if (id < 0 || (id_in(pw->named, id) && !all))
			continue;
		id_set(pw->named, id);
		if (all)
			continue;
		/* Lines end in a newline, the header's last one too. */
		if (pw->len && pw->text[pw->len - 1] != '\n')
			pw->text[pw->len++] = '\n';
		memcpy(pw->text + pw->len, l, n);
		pw->len += n;
		pw->text[pw->len++] = '\n';
	}
	return 0;
}

struct mg_probe_watch *mg_probe_watch_new(const char *text, size_t len)
{
	struct mg_probe_watch *pw = calloc(1, sizeof(*pw));

	if (pw && text && len && watch_add(pw, text, len, true)) {
		free(pw);
		return NULL;
	}
	return pw;
}

void mg_probe_watch_free(struct mg_probe_watch *pw)
{
	if (pw)
		free(pw->text);
	free(pw);
}

/* Call fn on each probe id of whole records; stops at a bad size. */
static bool chunk_ids(const void *data, size_t len,
		      bool (*fn)(void *arg, unsigned int id), void *arg)
{
	const unsigned char *p = data;
	size_t off = 0;

	while (len - off >= MAGNET_RECORD_HEADER) {
		__u32 size;
		__u16 id;

		memcpy(&size, p + off + offsetof(struct magnet_record, size), 4);
		memcpy(&id, p + off + offsetof(struct magnet_record, event_id), 2);
		if (size < MAGNET_RECORD_HEADER || size % MAGNET_RECORD_ALIGN ||
		    size > len - off)
			break;
		if (id >= MAGNET_EVENT_FIRST_DYNAMIC && fn(arg, id))
			return true;
		off += size;
	}
	return false;
}

static bool is_new(void *arg, unsigned int id)
{
	const struct mg_probe_watch *pw = arg;

	return !id_in(pw->named, id) && !id_in(pw->asked, id);
}

static bool mark_asked(void *arg, unsigned int id)
{
	id_set(((struct mg_probe_watch *)arg)->asked, id);
	return false;
}

bool mg_probe_watch_need(const struct mg_probe_watch *pw, const void *data,
			 size_t len)
{
	return chunk_ids(data, len, is_new, (void *)pw);
}

int mg_probe_watch_update(struct mg_probe_watch *pw, const char *text,
			  size_t len, const void *data, size_t dlen,
			  size_t *added)
{
	int err = 0;

	*added = pw->len;
	if (text && len)
		err = watch_add(pw, text, len, false);
	if (!err)
		chunk_ids(data, dlen, mark_asked, pw);
	return err;
}

const char *mg_probe_watch_text(const struct mg_probe_watch *pw, size_t *len)
{
	*len = pw->len;
	return pw->text;
}

/* Reader. */

struct mg_chunk_ref {
	__u64 off;			/* file offset of the chunk's data */
	__u64 len;
};

struct mg_stream {
	__u32 cpu;
	struct mg_chunk_ref *chunks;
	size_t nchunks, cap;
	size_t ci;			/* current chunk */
	__u64 pos;			/* next record's position in the chunk */
	unsigned char *win;		/* window onto the current chunk */
	__u64 win_pos;			/* chunk position of win[0] */
	size_t win_len;
	const struct magnet_record *cur;
	__u64 cur_off;			/* file offset of cur */
};

struct mg_trace {
	int fd;
	bool own_fd;
	__u64 size;
	struct mg_trace_info info;
	char *probes_text;
	struct mg_probe_table probes;
	struct mg_trailer trailer;
	bool has_trailer;
	struct mg_stream *streams;	/* info.ncpus of them, index = cpu */
	struct mg_stream **heap;	/* min-heap on (timestamp, cpu) */
	size_t nheap;
	struct mg_stream *last;		/* returned last; advance it next */
	bool started;
	bool has_err;
	struct mg_trace_error err;
};

__attribute__((format(printf, 4, 5)))
static void set_err(struct mg_trace_error *e, __u64 off, const char *what,
		    const char *fmt, ...)
{
	va_list ap;

	e->offset = off;
	e->what = what;
	va_start(ap, fmt);
	vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
	va_end(ap);
}

/* Keep the lowest corrupt offset: everything before it is good. */
#define trace_err(t, off, what, ...)					\
	do {								\
		if (!(t)->has_err || (off) < (t)->err.offset) {		\
			set_err(&(t)->err, (off), (what), __VA_ARGS__);	\
			(t)->has_err = true;				\
		}							\
	} while (0)

/* Read exactly len bytes at off; -EIO if the file is shorter than that. */
static int pread_full(int fd, void *buf, size_t len, __u64 off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/* Read and check the header; *hlenp gets the offset of the first chunk. */
static int read_header(struct mg_trace *t, struct mg_trace_error *e,
		       __u32 *hlenp)
{
	unsigned char h[MG_TRACE_FIXED_HEADER];
	struct mg_trace_info *in = &t->info;
	__u32 bom, hlen, plen;
	int err;

	if (t->size < MG_TRACE_FIXED_HEADER) {
		set_err(e, 0, "header", "file is %llu bytes, shorter than the %d-byte header",
			(unsigned long long)t->size, MG_TRACE_FIXED_HEADER);
		return -EBADMSG;
	}
	err = pread_full(t->fd, h, sizeof(h), 0);
	if (err) {
		set_err(e, 0, "file", "read: %s", strerror(-err));
		return err;
	}
	if (memcmp(h + H_MAGIC, MG_TRACE_MAGIC, 8)) {
		set_err(e, 0, "header", "bad magic: not a magnet trace file");
		return -EBADMSG;
	}
	bom = get32(h, H_BYTE_ORDER);
	if (bom != MG_TRACE_BYTE_ORDER) {
		if (bom == __builtin_bswap32(MG_TRACE_BYTE_ORDER))
			set_err(e, H_BYTE_ORDER, "header",
				"written on a machine of the other byte order (unsupported)");
		else
			set_err(e, H_BYTE_ORDER, "header",
				"bad byte-order mark 0x%08x", bom);
		return -EBADMSG;
	}
	in->version = get16(h, H_VERSION);
	if (in->version != MG_TRACE_VERSION) {
		set_err(e, H_VERSION, "header", "file format version %u, this reader supports %d",
			in->version, MG_TRACE_VERSION);
		return -EBADMSG;
	}
	in->record_version = get16(h, H_RECORD_VER);
	/* Format 2 changed the files and ioctls, not the records: read 1 too. */
	if (in->record_version < 1 || in->record_version > MAGNET_FORMAT_VERSION) {
		set_err(e, H_RECORD_VER, "header", "record format version %u, this reader supports 1 to %d",
			in->record_version, MAGNET_FORMAT_VERSION);
		return -EBADMSG;
	}
	hlen = get32(h, H_HEADER_LEN);
	plen = get32(h, H_PROBES_LEN);
	if (hlen % 8 || hlen < MG_TRACE_FIXED_HEADER ||
	    plen > hlen - MG_TRACE_FIXED_HEADER) {
		set_err(e, H_HEADER_LEN, "header", "bad header length %u (probe table %u bytes)",
			hlen, plen);
		return -EBADMSG;
	}
	if (hlen > t->size) {
		set_err(e, H_HEADER_LEN, "header", "header length %u runs past the end of the file (%llu bytes)",
			hlen, (unsigned long long)t->size);
		return -EBADMSG;
	}
	in->ncpus = get32(h, H_NCPUS);
	if (!in->ncpus || in->ncpus > MG_TRACE_MAX_CPUS) {
		set_err(e, H_NCPUS, "header", "bad CPU count %u", in->ncpus);
		return -EBADMSG;
	}
	in->tsc_khz = get32(h, H_TSC_KHZ);
	in->start_realtime_ns = get64(h, H_REALTIME);
	in->start_clock_ns = get64(h, H_CLOCK_NS);
	if (h[H_CLOCK + 15] || h[H_HOSTNAME + 79] || h[H_RELEASE + 79]) {
		set_err(e, h[H_CLOCK + 15] ? H_CLOCK : h[H_HOSTNAME + 79] ?
			H_HOSTNAME : H_RELEASE, "header", "string field not NUL-terminated");
		return -EBADMSG;
	}
	memcpy(in->clock, h + H_CLOCK, sizeof(in->clock));
	memcpy(in->hostname, h + H_HOSTNAME, sizeof(in->hostname));
	memcpy(in->release, h + H_RELEASE, sizeof(in->release));

	t->probes_text = malloc(plen + 1);
	if (!t->probes_text)
		return -ENOMEM;
	err = pread_full(t->fd, t->probes_text, plen, MG_TRACE_FIXED_HEADER);
	if (err) {
		set_err(e, MG_TRACE_FIXED_HEADER, "file", "read: %s", strerror(-err));
		return err;
	}
	t->probes_text[plen] = '\0';
	in->probes = t->probes_text;
	in->probes_len = plen;
	*hlenp = in->header_len = hlen;
	return mg_probes_parse(&t->probes, t->probes_text, plen);
}

static int add_chunk(struct mg_stream *s, __u64 off, __u64 len)
{
	if (s->nchunks == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct mg_chunk_ref *c = realloc(s->chunks, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		s->chunks = c;
		s->cap = cap;
	}
	s->chunks[s->nchunks].off = off;
	s->chunks[s->nchunks].len = len;
	s->nchunks++;
	return 0;
}

/*
 * A PRBS chunk: its lines join the table; an id keeps its first name (the
 * header's, or the first chunk's that named it).
 */
static int read_probes(struct mg_trace *t, __u64 off, __u64 len)
{
	struct mg_probe_table add = { 0 };
	struct mg_probe *v;
	size_t i;
	char *b;
	int err;

	if (len > SIZE_MAX - 1)
		return -ENOMEM;
	b = malloc(len + 1);
	if (!b)
		return -ENOMEM;
	err = pread_full(t->fd, b, len, off);
	if (!err)	/* the padding: up to the first NUL */
		err = mg_probes_parse(&add, b, strnlen(b, len));
	free(b);
	if (err || !add.n)
		return err;
	v = realloc(t->probes.v, (t->probes.n + add.n) * sizeof(*v));
	if (!v) {
		mg_probes_free(&add);
		return -ENOMEM;
	}
	t->probes.v = v;
	for (i = 0; i < add.n; i++) {
		struct mg_probe *p = &add.v[i];

		if (mg_probes_find(&t->probes, p->id)) {
			mg_probe_clear(p);
			continue;
		}
		v[t->probes.n++] = *p;
	}
	free(add.v);
	return 0;
}

static int read_trailer(struct mg_trace *t, __u64 off, __u64 len)
{
	struct mg_trailer *tr = &t->trailer;
	unsigned char *b;
	__u32 n, esize, i;
	int err;

	if (len < MG_TRAILER_HEADER) {
		trace_err(t, off, "trailer", "trailer of %llu bytes is too short",
			  (unsigned long long)len);
		return 0;
	}
	b = malloc(len);
	if (!b)
		return -ENOMEM;
	err = pread_full(t->fd, b, len, off);
	if (err)
		goto out;
	n = get32(b, 0);
	esize = get32(b, 4);
	if (esize < MG_TRAILER_CPU_SIZE || esize % 8 ||
	    n > (len - MG_TRAILER_HEADER) / esize) {
		trace_err(t, off, "trailer", "bad trailer: %u entries of %u bytes in %llu bytes",
			  n, esize, (unsigned long long)len);
		goto out;
	}
	tr->cpu = calloc(n ? n : 1, sizeof(*tr->cpu));
	if (!tr->cpu) {
		err = -ENOMEM;
		goto out;
	}
	tr->ncpus = n;
	tr->stop_realtime_ns = get64(b, 8);
	tr->stop_clock_ns = get64(b, 16);
	for (i = 0; i < n; i++) {
		const unsigned char *e = b + MG_TRAILER_HEADER + (size_t)i * esize;
		struct mg_trailer_cpu *c = &tr->cpu[i];

		c->cpu = get32(e, T_CPU);
		c->flags = get32(e, T_FLAGS);
		c->records = get64(e, T_RECORDS);
		c->bytes = get64(e, T_BYTES);
		c->lost.full = get64(e, T_LOST + 0);
		c->lost.too_big = get64(e, T_LOST + 8);
		c->lost.nesting = get64(e, T_LOST + 16);
		c->lost.overwritten = get64(e, T_LOST + 24);
		c->kstats.cpu = c->cpu;
		c->kstats.written = get64(e, T_KSTATS + 0);
		c->kstats.bytes = get64(e, T_KSTATS + 8);
		c->kstats.lost_full = get64(e, T_KSTATS + 16);
		c->kstats.lost_too_big = get64(e, T_KSTATS + 24);
		c->kstats.lost_nesting = get64(e, T_KSTATS + 32);
		c->kstats.overwritten = get64(e, T_KSTATS + 40);
	}
	t->has_trailer = true;
out:
	free(b);
	return err;
}

/*
 * Index the chunks. The first bad chunk header ends the index: past it
 * nothing can be trusted, but every chunk before it is still readable.
 */
static int index_chunks(struct mg_trace *t, __u64 off)
{
	while (off < t->size) {
		unsigned char h[MG_CHUNK_HEADER];
		__u64 left = t->size - off, len;
		__u32 type, cpu;
		int err;

		if (left < MG_CHUNK_HEADER) {
			trace_err(t, off, "chunk", "file ends inside a chunk header (%llu of %d bytes)",
				  (unsigned long long)left, MG_CHUNK_HEADER);
			return 0;
		}
		err = pread_full(t->fd, h, sizeof(h), off);
		if (err)
			return err;
		type = get32(h, 0);
		cpu = get32(h, 4);
		len = get64(h, 8);
		left -= MG_CHUNK_HEADER;
		if (type != MG_CHUNK_DATA && type != MG_CHUNK_TRAILER &&
		    type != MG_CHUNK_PROBES) {
			trace_err(t, off, "chunk", "unknown chunk type 0x%08x", type);
			return 0;
		}
		if (len > left) {
			trace_err(t, off, "chunk", "chunk length %llu runs past the end of the file (%llu bytes left)",
				  (unsigned long long)len, (unsigned long long)left);
			return 0;
		}
		if (len % 8) {
			trace_err(t, off, "chunk", "chunk length %llu not a multiple of 8",
				  (unsigned long long)len);
			return 0;
		}
		if (type == MG_CHUNK_TRAILER) {
			if (cpu != MG_CHUNK_NO_CPU) {
				trace_err(t, off, "chunk", "trailer chunk with cpu %u", cpu);
				return 0;
			}
			err = read_trailer(t, off + MG_CHUNK_HEADER, len);
			if (err || !t->has_trailer)
				return err;
			off += MG_CHUNK_HEADER + len;
			if (off != t->size)
				trace_err(t, off, "chunk", "%llu bytes of data after the trailer",
					  (unsigned long long)(t->size - off));
			return 0;
		}
		if (type == MG_CHUNK_PROBES) {
			if (cpu != MG_CHUNK_NO_CPU) {
				trace_err(t, off, "chunk", "probe table chunk with cpu %u", cpu);
				return 0;
			}
			err = read_probes(t, off + MG_CHUNK_HEADER, len);
			if (err)
				return err;
			off += MG_CHUNK_HEADER + len;
			continue;
		}
		if (!len) {
			trace_err(t, off, "chunk", "empty data chunk");
			return 0;
		}
		if (cpu >= t->info.ncpus) {
			trace_err(t, off, "chunk", "data chunk for cpu %u, but the header says %u CPUs",
				  cpu, t->info.ncpus);
			return 0;
		}
		err = add_chunk(&t->streams[cpu], off + MG_CHUNK_HEADER, len);
		if (err)
			return err;
		off += MG_CHUNK_HEADER + len;
	}
	return 0;
}

int mg_trace_fdopen(struct mg_trace **tp, int fd, struct mg_trace_error *e)
{
	struct mg_trace *t;
	struct stat st;
	__u32 i, hlen;
	int err;

	memset(e, 0, sizeof(*e));
	e->what = "file";
	if (fstat(fd, &st)) {
		err = -errno;
		set_err(e, 0, "file", "%s", strerror(errno));
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		set_err(e, 0, "file", "not a regular file (a trace must be seekable)");
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->fd = fd;
	t->size = st.st_size;
	err = read_header(t, e, &hlen);
	if (err)
		goto fail;
	t->streams = calloc(t->info.ncpus, sizeof(*t->streams));
	t->heap = calloc(t->info.ncpus, sizeof(*t->heap));
	if (!t->streams || !t->heap) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < t->info.ncpus; i++)
		t->streams[i].cpu = i;
	err = index_chunks(t, hlen);
	if (err) {
		set_err(e, 0, "file", "%s", strerror(-err));
		goto fail;
	}
	*tp = t;
	return 0;
fail:
	if (err == -ENOMEM)
		set_err(e, 0, "file", "%s", strerror(ENOMEM));
	mg_trace_close(t);
	return err;
}

int mg_trace_open(struct mg_trace **tp, const char *path,
		  struct mg_trace_error *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0) {
		err = -errno;
		memset(e, 0, sizeof(*e));
		set_err(e, 0, "file", "%s", strerror(errno));
		return err;
	}
	err = mg_trace_fdopen(tp, fd, e);
	if (err) {
		close(fd);
		return err;
	}
	(*tp)->own_fd = true;
	return 0;
}

const struct mg_trace_info *mg_trace_info(const struct mg_trace *t)
{
	return &t->info;
}

const struct mg_probe_table *mg_trace_probes(const struct mg_trace *t)
{
	return &t->probes;
}

const struct mg_trailer *mg_trace_trailer(const struct mg_trace *t)
{
	return t->has_trailer ? &t->trailer : NULL;
}

const struct mg_trace_error *mg_trace_error(const struct mg_trace *t)
{
	return t->has_err ? &t->err : NULL;
}

static void stream_end(struct mg_stream *s)
{
	free(s->win);
	s->win = NULL;
	s->win_len = 0;
	s->ci = s->nchunks;
}

/*
 * Load the stream's next record into s->cur: 1, 0 at its end (also after a
 * corruption, which is recorded), or -errno. A record that does not fit in
 * the window is re-read with the window starting at it; since the window is
 * larger than any record, that always makes progress.
 */
static int stream_advance(struct mg_trace *t, struct mg_stream *s)
{
	for (;;) {
		const struct mg_chunk_ref *c;
		const struct magnet_record *rec;
		size_t rel;
		int r;

		if (s->ci >= s->nchunks) {
			stream_end(s);
			return 0;
		}
		c = &s->chunks[s->ci];
		if (s->pos >= c->len) {
			s->ci++;
			s->pos = 0;
			s->win_pos = 0;
			s->win_len = 0;
			continue;
		}
		if (s->pos < s->win_pos || s->pos > s->win_pos + s->win_len) {
			s->win_pos = s->pos;
			s->win_len = 0;
		}
		rel = s->pos - s->win_pos;
		r = mg_record_next(s->win, s->win_len, &rel, &rec);
		if (r == 1) {
			s->cur = rec;
			s->cur_off = c->off + s->pos;
			s->pos = s->win_pos + rel;
			return 1;
		}
		if ((r == 0 || r == -MG_REC_TRUNCATED) &&
		    s->win_pos + s->win_len < c->len) {
			size_t n = c->len - s->pos < MG_WINDOW ?
				   c->len - s->pos : MG_WINDOW;

			if (!s->win) {
				s->win = malloc(MG_WINDOW);
				if (!s->win)
					return -ENOMEM;
			}
			s->win_pos = s->pos;
			s->win_len = 0;
			r = pread_full(t->fd, s->win, n, c->off + s->pos);
			if (r == -EIO) {
				trace_err(t, c->off + s->pos, "file",
					  "file shrank while being read");
				stream_end(s);
				return 0;
			}
			if (r)
				return r;
			s->win_len = n;
			continue;
		}
		trace_err(t, c->off + s->pos, "record", "cpu %u: %s%s", s->cpu,
			  mg_record_strerror(r),
			  r == -MG_REC_TRUNCATED ? " by the end of its chunk" : "");
		stream_end(s);
		return 0;
	}
}

static bool before(const struct mg_stream *a, const struct mg_stream *b)
{
	if (a->cur->timestamp != b->cur->timestamp)
		return a->cur->timestamp < b->cur->timestamp;
	return a->cpu < b->cpu;
}

static void heap_push(struct mg_trace *t, struct mg_stream *s)
{
	size_t i = t->nheap++;

	while (i) {
		size_t p = (i - 1) / 2;

		if (!before(s, t->heap[p]))
			break;
		t->heap[i] = t->heap[p];
		i = p;
	}
	t->heap[i] = s;
}

static struct mg_stream *heap_pop(struct mg_trace *t)
{
	struct mg_stream *top = t->heap[0], *last = t->heap[--t->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= t->nheap)
			break;
		if (c + 1 < t->nheap && before(t->heap[c + 1], t->heap[c]))
			c++;
		if (!before(t->heap[c], last))
			break;
		t->heap[i] = t->heap[c];
		i = c;
	}
	if (t->nheap)
		t->heap[i] = last;
	return top;
}

int mg_trace_next(struct mg_trace *t, const struct magnet_record **rec,
		  struct mg_trace_pos *pos)
{
	struct mg_stream *s;
	int r;

	if (!t->started) {
		__u32 i;

		for (i = 0; i < t->info.ncpus; i++) {
			r = stream_advance(t, &t->streams[i]);
			if (r < 0)
				return r;
			if (r)
				heap_push(t, &t->streams[i]);
		}
		t->started = true;
	} else if (t->last) {
		/* Advance lazily so the record we returned stays valid. */
		s = t->last;
		t->last = NULL;
		r = stream_advance(t, s);
		if (r < 0)
			return r;
		if (r)
			heap_push(t, s);
	}
	if (!t->nheap)
		return t->has_err ? -EBADMSG : 0;
	s = heap_pop(t);
	t->last = s;
	*rec = s->cur;
	if (pos) {
		pos->cpu = s->cpu;
		pos->offset = s->cur_off;
	}
	return 1;
}

void mg_trace_close(struct mg_trace *t)
{
	__u32 i;

	if (!t)
		return;
	if (t->streams) {
		for (i = 0; i < t->info.ncpus; i++) {
			free(t->streams[i].chunks);
			free(t->streams[i].win);
		}
	}
	free(t->streams);
	free(t->heap);
	free(t->trailer.cpu);
	mg_probes_free(&t->probes);
	free(t->probes_text);
	if (t->own_fd)
		close(t->fd);
	free(t);
}
