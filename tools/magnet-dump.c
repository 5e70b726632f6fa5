// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-dump: print a magnet-read trace file as text or JSON lines, all
 * CPUs merged by timestamp. Output formats: docs/magnet-dump.md.
 *
 * Each record's thread is named by the TASK records before it in its CPU's
 * stream (lib/tasks.h), so every record is fed to the tables in stream
 * order, whatever the filters print.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "pcap.h"
#include "print.h"
#include "record.h"
#include "tasks.h"
#include "trace.h"
#include "util.h"

#define PROG	"magnet-dump"

struct event_count {
	__u64 count;
	const char *type;		/* from the layout: kprobe, kretprobe, custom */
};

struct cpu_count {
	__u64 records;			/* event records */
	__u64 lost_records;
	struct magnet_lost lost;
	__u64 lost_fair;	/* JOB_LOST records' */
	__u64 task_records;
	__u64 unnamed;			/* event records no TASK record named */
};

struct dump {
	const char *path;
	struct mg_trace *t;
	bool json, wall, stats, header, tasks;
	bool cpu_filter;
	unsigned char *cpus;		/* ncpus flags, for -c */
	unsigned char *events;		/* 65536 flags, for -e */
	struct cpu_count *per_cpu;	/* --stats, by ring */
	struct event_count *per_event;	/* --stats, by event id */
	struct mg_tasks *names;		/* who wrote each record */
};

/* -h asks for it (stdout, 0); anything else is a usage error. */
__attribute__((noreturn))
static void usage(int status)
{
	fprintf(status ? stderr : stdout,
"usage: " PROG " [-j] [-w] [-T] [-c CPU]... [-e EVENT]... [--stats] [-H] FILE\n"
"       " PROG " -p OUT [--pcap-classic] [-c CPU]... [-e EVENT]... FILE\n"
"  -j, --json         JSON lines instead of text\n"
"  -w, --wall         add wall-clock time (UTC) to each record\n"
"  -T, --tasks        also print the TASK records (every record's line has\n"
"                     its thread's comm already)\n"
"  -c, --cpu CPU      only records of this CPU (repeatable)\n"
"  -e, --event EVENT  only this event, by id or probe name (repeatable);\n"
"                     LOST (and with -T, TASK) records always pass, since\n"
"                     they qualify the rest\n"
"  -s, --stats        print counts per CPU and per event instead of records\n"
"  -H, --header       print the trace header and probe table, then exit\n"
"  -p, --pcap OUT     write skb records as pcapng to OUT (- for stdout)\n"
"      --pcap-classic with -p: classic pcap, network-layer packets only\n");
	exit(status);
}

__attribute__((format(printf, 2, 3), noreturn))
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mg_vdie(PROG, code, fmt, ap);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))	/* getopt's optarg, never NULL */
		return -1;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return (errno || *end || *v > max) ? -1 : 0;
}

static void add_event(struct dump *d, const char *arg)
{
	const struct mg_probe_table *pt = mg_trace_probes(d->t);
	unsigned long id;
	bool found = false;
	size_t i;

	if (!parse_uint(arg, MAGNET_EVENT_MAX, &id)) {
		d->events[id] = 1;
		return;
	}
	if (!strcmp(arg, "lost")) {
		d->events[MAGNET_EVENT_LOST] = 1;
		return;
	}
	/*
	 * A probe's name, or a symbol, which may cover several ids: a kprobe
	 * and a kretprobe on it.
	 */
	for (i = 0; i < pt->n; i++) {
		if (!strcmp(pt->v[i].name, arg) || !strcmp(pt->v[i].target, arg)) {
			d->events[pt->v[i].id] = 1;
			found = true;
		}
	}
	if (!found)
		die(1, "%s: no probe named \"%s\" in the trace's probe table",
		    d->path, arg);
}

/*
 * A string of the trace (name, hostname...) on stdout, escaped as in
 * records: a crafted trace cannot drive the terminal.
 */
static void put_str(const char *s)
{
	mg_escape_write(stdout, s, 0);
}

static void print_header(const struct dump *d)
{
	const struct mg_trace_info *in = mg_trace_info(d->t);
	const struct mg_probe_table *pt = mg_trace_probes(d->t);
	const struct mg_trailer *tr = mg_trace_trailer(d->t);
	char wall[64];
	size_t i;

	mg_format_wall(wall, sizeof(wall), in->start_realtime_ns);
	printf("file format %u, record format %u, header length %u\n",
	       in->version, in->record_version, in->header_len);
	fputs("host ", stdout);
	put_str(in->hostname);
	fputs(", kernel ", stdout);
	put_str(in->release);
	printf("\ncpus %u, clock ", in->ncpus);
	put_str(in->clock);
	if (in->tsc_khz)
		printf(", tsc_khz %u", in->tsc_khz);
	putchar('\n');
	printf("start %s (trace clock %llu)\n", wall,
	       (unsigned long long)in->start_clock_ns);
	if (tr) {
		mg_format_wall(wall, sizeof(wall), tr->stop_realtime_ns);
		printf("stop %s (trace clock %llu)\n", wall,
		       (unsigned long long)tr->stop_clock_ns);
	} else {
		printf("stop unknown (no trailer)\n");
	}
	printf("probes %zu\n", pt->n);
	for (i = 0; i < pt->n; i++) {
		printf("  %u\t", pt->v[i].id);
		put_str(pt->v[i].type);
		putchar('\t');
		put_str(pt->v[i].target);
		printf("\t%u", pt->v[i].nargs);
		if (pt->v[i].capture_len)
			printf("\t%u@%u", pt->v[i].capture_len,
			       pt->v[i].capture_arg);
		putchar('\n');
	}
}

static bool selected(const struct dump *d, const struct magnet_record *r,
		     __u32 cpu)
{
	if (d->cpu_filter && !d->cpus[cpu])
		return false;
	if (d->events && !mg_record_is_meta(r) && !d->events[r->event_id])
		return false;
	return true;
}

static void count(struct dump *d, const struct magnet_record *r, __u32 cpu,
		  const struct mg_tasks *names)
{
	struct cpu_count *c = &d->per_cpu[cpu];

	if (mg_record_is_lost(r)) {
		c->lost_records++;
		mg_lost_add(&c->lost, mg_record_lost(r));
		return;
	}
	if (mg_record_is_job_lost(r)) {
		c->lost_records++;
		c->lost_fair += mg_record_job_lost(r);
		return;
	}
	if (mg_record_is_task(r)) {
		c->task_records++;
		return;
	}
	c->records++;
	if (!names || !mg_tasks_of(names, r))
		c->unnamed++;
	d->per_event[r->event_id].count++;
	/* A kretprobe's records say so; prefer that to a kprobe's. */
	if (!d->per_event[r->event_id].type || mg_record_is_return(r))
		d->per_event[r->event_id].type = mg_record_type(r);
}

static void print_stats(const struct dump *d)
{
	const struct mg_trace_info *in = mg_trace_info(d->t);
	const struct mg_probe_table *pt = mg_trace_probes(d->t);
	const struct mg_trailer *tr = mg_trace_trailer(d->t);
	struct cpu_count sum = { 0 };
	__u32 cpu, i;

	printf("cpu\trecords\tlost_records\tlost_full\tlost_too_big\tlost_nesting\toverwritten\ttask_records\tunnamed\tlost_fair\n");
	for (cpu = 0; cpu < in->ncpus; cpu++) {
		const struct cpu_count *c = &d->per_cpu[cpu];

		if (d->cpu_filter && !d->cpus[cpu])
			continue;
		printf("%u\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n", cpu,
		       (unsigned long long)c->records,
		       (unsigned long long)c->lost_records,
		       (unsigned long long)c->lost.full,
		       (unsigned long long)c->lost.too_big,
		       (unsigned long long)c->lost.nesting,
		       (unsigned long long)c->lost.overwritten,
		       (unsigned long long)c->task_records,
		       (unsigned long long)c->unnamed,
		       (unsigned long long)c->lost_fair);
		sum.lost_fair += c->lost_fair;
		sum.records += c->records;
		sum.lost_records += c->lost_records;
		mg_lost_add(&sum.lost, &c->lost);
		sum.task_records += c->task_records;
		sum.unnamed += c->unnamed;
	}
	printf("all\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n",
	       (unsigned long long)sum.records,
	       (unsigned long long)sum.lost_records,
	       (unsigned long long)sum.lost.full,
	       (unsigned long long)sum.lost.too_big,
	       (unsigned long long)sum.lost.nesting,
	       (unsigned long long)sum.lost.overwritten,
	       (unsigned long long)sum.task_records,
	       (unsigned long long)sum.unnamed,
	       (unsigned long long)sum.lost_fair);

	printf("\nid\tevent\ttype\tcount\n");
	for (i = MAGNET_EVENT_FIRST_DYNAMIC; i <= MAGNET_EVENT_MAX; i++) {
		const struct event_count *e = &d->per_event[i];
		const struct mg_probe *p = mg_probes_find(pt, i);

		if (!e->count)
			continue;
		printf("%u\t", i);
		put_str(mg_event_name(pt, i));
		putchar('\t');
		put_str(p ? p->type : e->type);
		printf("\t%llu\n", (unsigned long long)e->count);
	}

	if (!tr) {
		printf("\nno trailer: magnet-read did not exit cleanly\n");
		return;
	}
	/* What the reader counted, and the kernel's view at the same time. */
	printf("\ncpu\tread_records\tread_bytes\tread_lost\tkernel_written\tkernel_bytes\tkernel_lost\n");
	for (i = 0; i < tr->ncpus; i++) {
		const struct mg_trailer_cpu *c = &tr->cpu[i];

		if (d->cpu_filter && (c->cpu >= in->ncpus || !d->cpus[c->cpu]))
			continue;
		printf("%u\t%llu\t%llu\t%llu", c->cpu,
		       (unsigned long long)c->records,
		       (unsigned long long)c->bytes,
		       (unsigned long long)mg_lost_total(&c->lost));
		if (c->flags & MG_TRAILER_KSTATS)
			printf("\t%llu\t%llu\t%llu\n",
			       (unsigned long long)c->kstats.written,
			       (unsigned long long)c->kstats.bytes,
			       (unsigned long long)(c->kstats.lost_full +
						    c->kstats.lost_too_big +
						    c->kstats.lost_nesting +
						    c->kstats.overwritten));
		else
			printf("\t-\t-\t-\n");
	}
}

/*
 * -p: skb records as a capture (lib/pcap.h), the other records counted;
 * the same selection, the same end as the text's.
 */
static void write_pcap(struct dump *d, const char *out, bool classic)
{
	const char *name = strcmp(out, "-") ? out : "output";
	struct mg_pcap_opts o = {
		.classic = classic,
		.info = mg_trace_info(d->t),
		.probes = mg_trace_probes(d->t),
	};
	const struct mg_trace_error *terr;
	const struct magnet_record *rec;
	const struct mg_pcap_stats *st;
	struct mg_trace_pos pos;
	struct mg_pcap *p;
	bool warned_cpu = false;
	FILE *f = stdout;
	int r;

	if (!strcmp(o.info->clock, "tsc") && !o.info->tsc_khz)
		die(1, "%s: -p on a tsc trace needs the TSC frequency, which this trace does not record",
		    d->path);
	if (strcmp(out, "-")) {
		f = fopen(out, "wb");
		if (!f)
			die(2, "%s: %s", out, strerror(errno));
	}
	r = mg_pcap_open(&p, f, &o);
	if (r)
		die(2, "writing %s: %s", name, strerror(r == -EIO ? errno : -r));
	while ((r = mg_trace_next(d->t, &rec, &pos)) == 1) {
		if (rec->cpu != pos.cpu && !warned_cpu) {
			fprintf(stderr, PROG ": %s: warning: record at offset %llu says cpu %u but came from cpu%u\n",
				d->path, (unsigned long long)pos.offset,
				rec->cpu, pos.cpu);
			warned_cpu = true;
		}
		if (mg_pcap_feed(p, rec))
			die(2, "out of memory");
		if (!selected(d, rec, pos.cpu))
			continue;
		if (mg_pcap_write(p, rec) == -ENOMEM)
			die(2, "out of memory");
		if (ferror(f))
			die(2, "writing %s: %s", name, strerror(errno));
	}
	if (mg_pcap_finish(p) || fflush(f) || ferror(f) ||
	    (f != stdout && fclose(f)))
		die(2, "writing %s: %s", name, strerror(errno));
	st = mg_pcap_stats(p);
	fprintf(stderr, PROG ": %s: %llu packets; not written: %llu non-skb, %llu data-layer, %llu link-layer; LOST records: %llu (%llu records lost)\n",
		name, (unsigned long long)st->packets,
		(unsigned long long)st->not_skb,
		(unsigned long long)st->data_layer,
		(unsigned long long)st->link_layer,
		(unsigned long long)st->lost_records,
		(unsigned long long)st->lost);
	/* libpcap, hence tcpdump, stops at the first interface of another type. */
	if (st->linktypes > 1)
		fprintf(stderr, PROG ": %s: warning: Ethernet and raw IP packets in one file: tcpdump stops at the first packet of the second kind, Wireshark reads all; -e selects probes of one layer\n",
			name);
	mg_pcap_free(p);
	terr = mg_trace_error(d->t);
	if (r == -EBADMSG && terr)
		die(2, "%s: corrupt %s at offset %llu: %s", d->path, terr->what,
		    (unsigned long long)terr->offset, terr->reason);
	if (r < 0)
		die(2, "%s: %s", d->path, strerror(-r));
	if (!mg_trace_trailer(d->t))
		fprintf(stderr, PROG ": %s: warning: no trailer: magnet-read did not exit cleanly, or the file was cut at a chunk boundary\n",
			d->path);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "wall", no_argument, NULL, 'w' },
		{ "tasks", no_argument, NULL, 'T' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "event", required_argument, NULL, 'e' },
		{ "stats", no_argument, NULL, 's' },
		{ "header", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "pcap", required_argument, NULL, 'p' },
		{ "pcap-classic", no_argument, NULL, 'P' },
		{ 0 }
	};
	struct dump d = { 0 };
	const char **evargs = NULL, **cpuargs = NULL;
	const char *pcap_out = NULL;
	bool pcap_classic = false;
	size_t nev = 0, ncpu = 0, i;
	const struct mg_trace_error *terr;
	const struct magnet_record *rec;
	struct mg_trace_error err;
	struct mg_print_opts po;
	struct mg_trace_pos pos;
	bool warned_cpu = false;
	int opt, r;

	evargs = calloc(argc, sizeof(*evargs));
	cpuargs = calloc(argc, sizeof(*cpuargs));
	if (!evargs || !cpuargs)
		die(2, "out of memory");
	while ((opt = getopt_long(argc, argv, "jwTc:e:sHhp:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			d.json = true;
			break;
		case 'w':
			d.wall = true;
			break;
		case 'T':
			d.tasks = true;
			break;
		case 'c':
			cpuargs[ncpu++] = optarg;
			break;
		case 'e':
			evargs[nev++] = optarg;
			break;
		case 's':
			d.stats = true;
			break;
		case 'H':
			d.header = true;
			break;
		case 'h':
			usage(0);
		case 'p':
			pcap_out = optarg;
			break;
		case 'P':
			pcap_classic = true;
			break;
		default:
			usage(1);
		}
	}
	if (optind + 1 != argc)
		usage(1);
	d.path = argv[optind];
	if (pcap_classic && !pcap_out)
		die(1, "--pcap-classic needs -p/--pcap");
	if (pcap_out && (d.json || d.wall || d.stats || d.header))
		die(1, "-p/--pcap writes a capture: not with -j, -w, -s or -H");

	r = mg_trace_open(&d.t, d.path, &err);
	if (r == -EBADMSG)
		die(2, "%s: corrupt %s at offset %llu: %s", d.path, err.what,
		    (unsigned long long)err.offset, err.reason);
	if (r)
		die(2, "%s: %s", d.path, err.reason);

	if (d.header) {
		print_header(&d);
		goto out;
	}
	if (d.wall && !strcmp(mg_trace_info(d.t)->clock, "tsc") &&
	    !mg_trace_info(d.t)->tsc_khz)
		die(1, "%s: -w on a tsc trace needs the TSC frequency, which this trace does not record",
		    d.path);

	d.cpus = calloc(mg_trace_info(d.t)->ncpus, 1);
	if (!d.cpus)
		die(2, "out of memory");
	for (i = 0; i < ncpu; i++) {
		unsigned long cpu;

		if (parse_uint(cpuargs[i], mg_trace_info(d.t)->ncpus - 1, &cpu))
			die(1, "%s: no cpu \"%s\" in this trace (cpus 0-%u)",
			    d.path, cpuargs[i], mg_trace_info(d.t)->ncpus - 1);
		d.cpus[cpu] = 1;
		d.cpu_filter = true;
	}
	if (nev) {
		d.events = calloc(MAGNET_EVENT_MAX + 1, 1);
		if (!d.events)
			die(2, "out of memory");
		for (i = 0; i < nev; i++)
			add_event(&d, evargs[i]);
	}
	if (d.stats) {
		d.per_cpu = calloc(mg_trace_info(d.t)->ncpus, sizeof(*d.per_cpu));
		d.per_event = calloc(MAGNET_EVENT_MAX + 1, sizeof(*d.per_event));
		if (!d.per_cpu || !d.per_event)
			die(2, "out of memory");
	}

	d.names = mg_tasks_new();
	if (!d.names)
		die(2, "out of memory");
	if (pcap_out) {
		write_pcap(&d, pcap_out, pcap_classic);
		goto out;
	}
	mg_print_opts_init(&po, mg_trace_info(d.t), mg_trace_probes(d.t));
	po.json = d.json;
	po.wall = d.wall;
	po.tasks = d.names;

	while ((r = mg_trace_next(d.t, &rec, &pos)) == 1) {
		if (rec->cpu != pos.cpu && !warned_cpu) {
			fflush(stdout);
			fprintf(stderr, PROG ": %s: warning: record at offset %llu says cpu %u but came from cpu%u\n",
				d.path, (unsigned long long)pos.offset,
				rec->cpu, pos.cpu);
			warned_cpu = true;
		}
		/*
		 * The chunk's CPU is the stream the record belongs to: one
		 * that says otherwise names nobody and is named by nobody.
		 */
		po.tasks = rec->cpu == pos.cpu ? d.names : NULL;
		if (po.tasks && mg_tasks_feed(d.names, rec) < 0)
			die(2, "out of memory");
		if (!selected(&d, rec, pos.cpu))
			continue;
		if (d.stats)
			count(&d, rec, pos.cpu, po.tasks);
		else if (mg_record_is_task(rec) && !d.tasks)
			continue;
		else if (mg_print_record(stdout, &po, rec))
			die(2, "writing output: %s", strerror(errno));
	}
	if (d.stats)
		print_stats(&d);
	if (fflush(stdout))
		die(2, "writing output: %s", strerror(errno));
	terr = mg_trace_error(d.t);
	if (r == -EBADMSG && terr)
		die(2, "%s: corrupt %s at offset %llu: %s", d.path, terr->what,
		    (unsigned long long)terr->offset, terr->reason);
	if (r < 0)
		die(2, "%s: %s", d.path, strerror(-r));
	if (!mg_trace_trailer(d.t) && !d.stats)
		fprintf(stderr, PROG ": %s: warning: no trailer: magnet-read did not exit cleanly, or the file was cut at a chunk boundary\n",
			d.path);
out:
	mg_trace_close(d.t);
	mg_tasks_free(d.names);
	free(d.cpus);
	free(d.events);
	free(d.per_cpu);
	free(d.per_event);
	free(evargs);
	free(cpuargs);
	return 0;
}
