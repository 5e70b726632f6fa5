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
 * The data of a raw record (an event a kernel module logged) prints the
 * same way. Event names come from a trace file or the daemon, so they are
 * escaped too (lib/escape.h), in both forms.
 *
 * Who wrote a record ends its text line, " [intr ]comm=COMM cgroup=N", so
 * that the fields before keep their places and these two are always the
 * last two words, whatever a capture holds: COMM is one word (spaces
 * escaped), "?" when no TASK record named the thread (a comm that is "?"
 * itself prints as \x3f). JSON has "comm" (null when unknown), "cgroup"
 * and "intr" after "tgid".
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "escape.h"
#include "flow.h"
#include "print.h"
#include "record.h"
#include "tasks.h"
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
	/*
	 * Modulo 2^64, negated as unsigned: -(__s64)ns would overflow for
	 * 2^63, which a crafted trace's timestamps give.
	 */
	return (__s64)(neg ? -ns : ns);
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

static void print_hex(FILE *f, const unsigned char *data, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		putc(hex[data[i] >> 4], f);
		putc(hex[data[i] & 15], f);
	}
}

/* Text: a space, then the data quoted and escaped, cut at 64 bytes with "...". */
static void print_escaped(FILE *f, const unsigned char *data, size_t len)
{
	size_t i, n = len;

	if (n > MG_PRINT_CAPTURE_TEXT)
		n = MG_PRINT_CAPTURE_TEXT;
	fputs(" \"", f);
	for (i = 0; i < n; i++) {
		unsigned char b = data[i];

		if (b == '"' || b == '\\')
			fprintf(f, "\\%c", b);
		else if (b >= 0x20 && b < 0x7f)
			putc(b, f);
		else
			fprintf(f, "\\x%02x", b);
	}
	putc('"', f);
	if (len > n)
		fputs("...", f);
}

static void print_capture(FILE *f, const struct mg_print_opts *o,
			  const struct magnet_capture *c)
{
	if (o->json) {
		fprintf(f, ",\"capture\":{\"arg\":%u,\"len\":%u,\"hex\":\"",
			c->arg, c->len);
		print_hex(f, c->data, c->len);
		fputs("\"}", f);
		return;
	}
	fprintf(f, " cap=%u@arg%u", c->len, c->arg);
	print_escaped(f, c->data, c->len);
}

static void print_raw(FILE *f, const struct mg_print_opts *o,
		      const struct magnet_raw *raw)
{
	if (o->json) {
		fprintf(f, ",\"raw\":{\"len\":%u,\"hex\":\"", raw->len);
		print_hex(f, raw->data, raw->len);
		fputs("\"}", f);
		return;
	}
	fprintf(f, " raw len=%u", raw->len);
	print_escaped(f, raw->data, raw->len);
}

static const char *const skb_dirs[] = { "?", "out", "in" };
static const char *const skb_layers[] = { "data", "network", "link" };

/* A packet: where it was, and its first bytes from the layer named. */
static void print_skb(FILE *f, const struct mg_print_opts *o,
		      const struct magnet_skb *k)
{
	if (o->json) {
		fprintf(f, ",\"skb\":{\"len\":%u,\"ifindex\":%u,\"protocol\":%u,"
			"\"dir\":\"%s\",\"layer\":\"%s\",\"sk_cgroup\":%llu,\"caplen\":%u,"
			"\"hex\":\"", k->len, k->ifindex, ntohs(k->protocol),
			skb_dirs[k->direction], skb_layers[k->layer],
			(unsigned long long)k->sk_cgroup, k->caplen);
		print_hex(f, k->data, k->caplen);
		fputs("\"}", f);
		return;
	}
	fprintf(f, " skb len=%u if=%u proto=0x%04x dir=%s layer=%s sk_cgroup=%llu cap=%u",
		k->len, k->ifindex, ntohs(k->protocol), skb_dirs[k->direction],
		skb_layers[k->layer], (unsigned long long)k->sk_cgroup, k->caplen);
	print_escaped(f, k->data, k->caplen);
}

/* include/net/tcp_states.h; UDP and other inet sockets use them too. */
static const char *const tcp_states[] = {
	[1] = "ESTABLISHED", [2] = "SYN_SENT", [3] = "SYN_RECV",
	[4] = "FIN_WAIT1", [5] = "FIN_WAIT2", [6] = "TIME_WAIT",
	[7] = "CLOSE", [8] = "CLOSE_WAIT", [9] = "LAST_ACK", [10] = "LISTEN",
	[11] = "CLOSING", [12] = "NEW_SYN_RECV", [13] = "BOUND_INACTIVE",
};

static const char *sock_state_name(unsigned int state)
{
	if (state < sizeof(tcp_states) / sizeof(tcp_states[0]) &&
	    tcp_states[state])
		return tcp_states[state];
	return "unknown";
}

static void print_sock(FILE *f, const struct mg_print_opts *o,
		       const struct magnet_sock *s)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], proto[16];
	bool inet = s->family == AF_INET;
	const char *pname;

	if (s->family != AF_INET && s->family != AF_INET6) {
		/* Not an inet socket (or none): no addresses to show. */
		if (o->json)
			fprintf(f, ",\"sock\":{\"family\":null,\"size\":%llu,\"state\":%u}",
				(unsigned long long)s->size, s->state);
		else
			fprintf(f, " sock - size=%llu state=%s(%u)",
				(unsigned long long)s->size,
				sock_state_name(s->state), s->state);
		return;
	}
	inet_ntop(s->family, s->saddr, src, sizeof(src));
	inet_ntop(s->family, s->daddr, dst, sizeof(dst));
	pname = mg_flow_proto_name(s->protocol, proto, sizeof(proto));
	if (o->json)
		fprintf(f, ",\"sock\":{\"family\":\"%s\",\"proto\":\"%s\","
			"\"src\":\"%s\",\"sport\":%u,\"dst\":\"%s\",\"dport\":%u,"
			"\"size\":%llu,\"state\":%u}",
			inet ? "inet" : "inet6", pname, src, ntohs(s->sport),
			dst, ntohs(s->dport), (unsigned long long)s->size,
			s->state);
	else
		fprintf(f, inet ? " sock %s %s:%u -> %s:%u size=%llu state=%s(%u)"
				: " sock %s [%s]:%u -> [%s]:%u size=%llu state=%s(%u)",
			pname, src, ntohs(s->sport), dst, ntohs(s->dport),
			(unsigned long long)s->size,
			sock_state_name(s->state), s->state);
}

/* A comm as one text word; NULL (unknown) as "?", which no comm prints as. */
static void print_comm_text(FILE *f, const char *comm)
{
	if (!comm)
		fputs("?", f);
	else if (!strcmp(comm, "?"))
		fputs("\\x3f", f);
	else
		mg_escape_write(f, comm, MG_ESC_SPACE);
}

/*
 * A task state as ftrace's sched_switch prints it: R runnable, R+
 * preempted, else the letter of its lowest state bit (I: an idle kernel
 * thread's TASK_IDLE, UNINTERRUPTIBLE | NOLOAD).
 */
static const char *switch_state(const struct magnet_switch *sw)
{
	static const char *const letters[] = { "S", "D", "T", "t", "X", "Z", "P", "I" };
	unsigned int i;

	if (sw->preempt)
		return "R+";
	if (!sw->prev_state)
		return "R";
	if ((sw->prev_state & 0x402) == 0x402)
		return "I";
	for (i = 0; i < 7; i++)
		if (sw->prev_state & (1U << i))
			return letters[i];
	return "?";
}

static void print_switch(FILE *f, const struct mg_print_opts *o,
			 const struct magnet_switch *sw)
{
	char prev[sizeof(sw->prev_comm) + 1] = "", next[sizeof(sw->next_comm) + 1] = "";

	memcpy(prev, sw->prev_comm, sizeof(sw->prev_comm));
	memcpy(next, sw->next_comm, sizeof(sw->next_comm));
	if (o->json) {
		fputs(",\"switch\":{\"prev_comm\":", f);
		mg_json_string(f, prev);
		fprintf(f, ",\"prev_pid\":%u,\"prev_tgid\":%u,\"prev_state\":%u,"
			"\"state\":\"%s\",\"preempt\":%s,\"next_comm\":",
			sw->prev_pid, sw->prev_tgid, sw->prev_state, switch_state(sw),
			sw->preempt ? "true" : "false");
		mg_json_string(f, next);
		fprintf(f, ",\"next_pid\":%u,\"next_tgid\":%u,\"next_cgroup\":%llu}",
			sw->next_pid, sw->next_tgid, (unsigned long long)sw->next_cgroup);
		return;
	}
	fputs(" switch prev=", f);
	print_comm_text(f, prev);
	fprintf(f, ":%u/%u state=%s(%u) next=", sw->prev_pid, sw->prev_tgid,
		switch_state(sw), sw->prev_state);
	print_comm_text(f, next);
	fprintf(f, ":%u/%u next_cgroup=%llu", sw->next_pid, sw->next_tgid,
		(unsigned long long)sw->next_cgroup);
}

/* Text: the tail of a record's line; JSON: the fields after "tgid". */
static void print_who(FILE *f, const struct mg_print_opts *o,
		      const struct magnet_record *r)
{
	const struct mg_task *t = o->task ? o->task :
				  o->tasks ? mg_tasks_of(o->tasks, r) : NULL;

	if (o->json) {
		fputs(",\"comm\":", f);
		if (t)
			mg_json_string(f, t->comm);
		else
			fputs("null", f);
		fprintf(f, ",\"cgroup\":%u,\"intr\":%s", r->cgroup,
			mg_record_is_intr(r) ? "true" : "false");
		return;
	}
	fputs(mg_record_is_intr(r) ? " intr comm=" : " comm=", f);
	print_comm_text(f, t ? t->comm : NULL);
	fprintf(f, " cgroup=%u", r->cgroup);
}

/* A TASK record's owner: null (JSON) or left out (text) when not known. */
static void print_uids(FILE *f, bool json, __u32 uid, __u32 euid)
{
	if (json) {
		if (uid == MG_UID_UNKNOWN)
			fputs("\"uid\":null,\"euid\":null", f);
		else
			fprintf(f, "\"uid\":%u,\"euid\":%u", uid, euid);
	} else if (uid != MG_UID_UNKNOWN) {
		fprintf(f, " uid=%u euid=%u", uid, euid);
	}
}

/* A TASK record: the thread it names, its comm, cgroup id and owner. */
static void print_task(FILE *f, const struct mg_print_opts *o,
		       const struct magnet_record *r)
{
	__u32 uid, euid;
	char comm[17];

	mg_record_task_comm(r, comm);
	mg_record_task_uids(r, &uid, &euid);
	if (o->json) {
		fprintf(f, ",\"cpu\":%u,\"pid\":%u,\"tgid\":%u,\"comm\":",
			r->cpu, r->pid, r->tgid);
		mg_json_string(f, comm);
		fprintf(f, ",\"cgroup\":%u,\"cgroup_id\":%llu,",
			r->cgroup, (unsigned long long)r->abstract_id);
		print_uids(f, true, uid, euid);
		fprintf(f, ",\"id\":%u,\"event\":\"task\",\"type\":\"task\"}",
			r->event_id);
		return;
	}
	fprintf(f, " %u TASK %u/%u comm=", r->cpu, r->pid, r->tgid);
	print_comm_text(f, comm);
	fprintf(f, " cgroup=%u cgroup_id=%llu", r->cgroup,
		(unsigned long long)r->abstract_id);
	print_uids(f, false, uid, euid);
}

static void print_probe(FILE *f, const struct mg_print_opts *o,
			const struct magnet_record *r)
{
	const struct mg_probe *probe = mg_probes_find(o->probes, r->event_id);
	const char *name = mg_event_name(o->probes, r->event_id);
	const __u64 *args = mg_record_args(r);
	unsigned int i, n = mg_record_nargs(r);
	bool ret = mg_record_is_return(r);

	if (o->json) {
		fprintf(f, ",\"cpu\":%u,\"pid\":%u,\"tgid\":%u",
			r->cpu, r->pid, r->tgid);
		print_who(f, o, r);
		fprintf(f, ",\"id\":%u,\"event\":", r->event_id);
		mg_json_string(f, name);
		fputs(",\"symbol\":", f);
		mg_json_string(f, probe ? probe->target : "unknown");
		fprintf(f, ",\"type\":\"%s\",\"abstract\":\"0x%llx\"",
			mg_record_type(r), (unsigned long long)r->abstract_id);
	} else {
		/* The name is the trace's or the daemon's: escaped. */
		fprintf(f, " %u %u/%u ", r->cpu, r->pid, r->tgid);
		mg_escape_write(f, name, 0);
		fprintf(f, "(%u) abstract=0x%llx", r->event_id,
			(unsigned long long)r->abstract_id);
	}
	/* Named handlers have their own payload, and no args. */
	switch (mg_record_handler(r)) {
	case MAGNET_HANDLER_SOCK:
		print_sock(f, o, mg_record_sock(r));
		goto out;
	case MAGNET_HANDLER_RAW:
		print_raw(f, o, mg_record_raw(r));
		goto out;
	case MAGNET_HANDLER_SKB:
		print_skb(f, o, mg_record_skb(r));
		goto out;
	case MAGNET_HANDLER_SWITCH:
		print_switch(f, o, mg_record_switch(r));
		goto out;
	}
	fputs(o->json ? ",\"args\":[" : " args=[", f);
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
out:
	if (o->json)
		putc('}', f);
	else
		print_who(f, o, r);
}

/* A JOB_LOST record: the job, and its records the fairness rule dropped. */
static void print_job_lost(FILE *f, const struct mg_print_opts *o,
			   const struct magnet_record *r)
{
	if (o->json)
		fprintf(f, ",\"cpu\":%u,\"id\":%u,\"event\":\"job_lost\",\"cgroup\":%llu,\"fair\":%llu}",
			r->cpu, r->event_id, (unsigned long long)r->abstract_id,
			(unsigned long long)mg_record_job_lost(r));
	else
		fprintf(f, " %u JOB_LOST cgroup=%llu fair=%llu", r->cpu,
			(unsigned long long)r->abstract_id,
			(unsigned long long)mg_record_job_lost(r));
}

int mg_print_record(FILE *f, const struct mg_print_opts *o,
		    const struct magnet_record *r)
{
	print_time(f, o, r->timestamp);
	if (mg_record_is_lost(r))
		print_lost(f, o, r);
	else if (mg_record_is_job_lost(r))
		print_job_lost(f, o, r);
	else if (mg_record_is_task(r))
		print_task(f, o, r);
	else
		print_probe(f, o, r);
	putc('\n', f);
	return ferror(f) ? -EIO : 0;
}
