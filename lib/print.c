// SPDX-License-Identifier: GPL-2.0
/*
 * Text and JSON share one function per part of the line, so the two can
 * never disagree about what a record contains.
 *
 * Pointers (abstract id, args) print as hex: in JSON as strings, because
 * 64-bit values do not survive parsers that use doubles. Counts, latency,
 * return values and timestamps are JSON integers.
 *
 * A capture prints as a quoted, escaped prefix in text (a line stays
 * readable however long the capture) and as hex of every valid byte in
 * JSON (the data is usually binary, and JSON strings cannot hold bytes).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "print.h"
#include "record.h"
#include "trace.h"

void mg_print_opts_init(struct mg_print_opts *o,
			const struct mg_trace_info *info,
			const struct mg_probe_table *probes)
{
	memset(o, 0, sizeof(*o));
	o->probes = probes;
	if (info) {
		o->tsc = !strcmp(info->clock, "tsc");
		o->tsc_khz = info->tsc_khz;
		o->realtime0 = info->start_realtime_ns;
		o->clock0 = info->start_clock_ns;
	}
}

void mg_print_json_string(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

void mg_format_wall(char *buf, size_t len, __u64 ns)
{
	time_t sec = ns / 1000000000ULL;
	struct tm tm;
	size_t n;

	if (!gmtime_r(&sec, &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%09lluZ",
		 (unsigned long long)(ns % 1000000000ULL));
}

__s64 mg_print_clock_delta_ns(const struct mg_print_opts *o, __u64 a, __u64 b)
{
	__u64 d, ns;
	bool neg = b < a;

	d = neg ? a - b : b - a;
	if (o->tsc) {
		/* ns = cycles * 10^6 / kHz, without overflowing 64 bits. */
		ns = d / o->tsc_khz * 1000000ULL +
		     d % o->tsc_khz * 1000000ULL / o->tsc_khz;
	} else {
		ns = d;
	}
	return neg ? -(__s64)ns : (__s64)ns;
}

static void print_time(FILE *f, const struct mg_print_opts *o, __u64 ts)
{
	if (o->json)
		fprintf(f, "{\"ts\":%llu", (unsigned long long)ts);
	else if (o->tsc)
		fprintf(f, "%llu", (unsigned long long)ts);
	else
		fprintf(f, "%llu.%09llu", (unsigned long long)(ts / 1000000000ULL),
			(unsigned long long)(ts % 1000000000ULL));

	/* The trace clock and CLOCK_REALTIME were sampled together at start. */
	if (o->wall && (!o->tsc || o->tsc_khz)) {
		char buf[64];

		mg_format_wall(buf, sizeof(buf), o->realtime0 +
			       mg_print_clock_delta_ns(o, o->clock0, ts));
		fprintf(f, o->json ? ",\"wall\":\"%s\"" : " %s", buf);
	}
}

static void print_lost(FILE *f, const struct mg_print_opts *o,
		       const struct magnet_record *r)
{
	const struct magnet_lost *l = mg_record_lost(r);

	if (o->json)
		fprintf(f, ",\"cpu\":%u,\"pid\":%u,\"tgid\":%u,\"id\":%u,"
			"\"event\":\"lost\",\"full\":%llu,\"too_big\":%llu,"
			"\"nesting\":%llu,\"overwritten\":%llu}",
			r->cpu, r->pid, r->tgid, r->event_id,
			(unsigned long long)l->full,
			(unsigned long long)l->too_big,
			(unsigned long long)l->nesting,
			(unsigned long long)l->overwritten);
	else
		fprintf(f, " %u LOST full=%llu too_big=%llu nesting=%llu overwritten=%llu",
			r->cpu, (unsigned long long)l->full,
			(unsigned long long)l->too_big,
			(unsigned long long)l->nesting,
			(unsigned long long)l->overwritten);
}

/* Bytes of a capture the text format shows; longer ones end in "...". */
#define MG_PRINT_CAPTURE_TEXT	64

static void print_capture(FILE *f, const struct mg_print_opts *o,
			  const struct magnet_capture *c)
{
	static const char hex[] = "0123456789abcdef";
	__u32 i, n = c->len;

	if (o->json) {
		fprintf(f, ",\"capture\":{\"arg\":%u,\"len\":%u,\"hex\":\"",
			c->arg, c->len);
		for (i = 0; i < n; i++) {
			putc(hex[c->data[i] >> 4], f);
			putc(hex[c->data[i] & 15], f);
		}
		fputs("\"}", f);
		return;
	}
	fprintf(f, " cap=%u@arg%u \"", c->len, c->arg);
	if (n > MG_PRINT_CAPTURE_TEXT)
		n = MG_PRINT_CAPTURE_TEXT;
	for (i = 0; i < n; i++) {
		unsigned char b = c->data[i];

		if (b == '"' || b == '\\')
			fprintf(f, "\\%c", b);
		else if (b >= 0x20 && b < 0x7f)
			putc(b, f);
		else
			fprintf(f, "\\x%02x", b);
	}
	putc('"', f);
	if (c->len > n)
		fputs("...", f);
}

static void print_probe(FILE *f, const struct mg_print_opts *o,
			const struct magnet_record *r)
{
	const char *name = mg_event_name(o->probes, r->event_id);
	const __u64 *args = mg_record_args(r);
	unsigned int i, n = mg_record_nargs(r);
	bool ret = mg_record_is_return(r);

	if (o->json) {
		fprintf(f, ",\"cpu\":%u,\"pid\":%u,\"tgid\":%u,\"id\":%u,\"event\":",
			r->cpu, r->pid, r->tgid, r->event_id);
		mg_print_json_string(f, name);
		fprintf(f, ",\"type\":\"%s\",\"abstract\":\"0x%llx\",\"args\":[",
			ret ? "kretprobe" : "kprobe",
			(unsigned long long)r->abstract_id);
	} else {
		fprintf(f, " %u %u/%u %s(%u) abstract=0x%llx args=[",
			r->cpu, r->pid, r->tgid, name, r->event_id,
			(unsigned long long)r->abstract_id);
	}
	for (i = 0; i < n; i++)
		fprintf(f, o->json ? "%s\"0x%llx\"" : "%s0x%llx", i ? "," : "",
			(unsigned long long)args[i]);
	putc(']', f);
	if (ret)
		fprintf(f, o->json ? ",\"ret\":%lld,\"lat_ns\":%llu" :
				     " ret=%lld lat=%lluns",
			(long long)mg_record_retval(r),
			(unsigned long long)mg_record_latency(r));
	if (mg_record_has_capture(r))
		print_capture(f, o, mg_record_capture(r));
	if (o->json)
		putc('}', f);
}

int mg_print_record(FILE *f, const struct mg_print_opts *o,
		    const struct magnet_record *r)
{
	print_time(f, o, r->timestamp);
	if (mg_record_is_lost(r))
		print_lost(f, o, r);
	else
		print_probe(f, o, r);
	putc('\n', f);
	return ferror(f) ? -EIO : 0;
}
