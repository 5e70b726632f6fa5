// SPDX-License-Identifier: GPL-2.0
/*
 * modmagnet.so: magnet as a gmond metric module (Ganglia 3.7), the
 * event-based sensor in place of /proc sampling. See docs/ganglia.md.
 *
 * The values come from magnetd's TOTALS (docs/protocol.md): counters of
 * every record since magnetd started. Not the rings: a ring has one
 * reader, and magnetd is it (with its traces, its subscribers and the
 * other monitors); TOTALS costs one short TCP exchange per collection and
 * loses nothing between two (the counters are magnetd's, not sampled).
 *
 * gmond fixes a module's metrics at metric_init, so they are made from the
 * module's parameters: the node's, one set per probe and per job named,
 * and "top" slots whose job is a string metric. A probe added later is
 * counted by magnetd at once, in the node's metrics and the top jobs; it
 * gets metrics of its own when named in the configuration and gmond is
 * restarted.
 *
 * Counts since magnetd started are gauges to gmond (slope "both"), not
 * "positive": gmetad would store a positive slope as an RRD COUNTER, a
 * rate of its own; the RRDs hold the counts, and the module's own rates
 * (per collection interval, over the node's clock) are exact.
 *
 * Each collection fetches TOTALS once: gmond asks for one metric at a
 * time, and a metric asked for again starts a new collection. A fetch has
 * the configured timeout in all, and after a failure none is made for 1,
 * 2, 4 ... 32 s: gmond's collection thread (every module's) is held at
 * most that long a collection, however magnetd fails. Rates are the
 * difference with the fetch before, over the node's own clock. While
 * magnetd is away every number is NaN and every string empty: gmond
 * shows "nan", gmetad stores unknown, a graph has a gap; nothing stale is
 * reported. Each fetch connects anew, so a restarted magnetd is found at
 * the next collection; its counters start again from 0, and the one
 * collection that spans the restart has NaN rates, not negative ones.
 *
 * Strings (job paths) reach gmond as mgg_safe_name writes them: gmond's
 * XML and gmetad's would break on anything else (docs/ganglia.md).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <apr_strings.h>
#include <gm_metric.h>

#include "auth.h"
#include "totals.h"

/* libganglia's, in gmond: to gmond's log (stderr with -f, else syslog). */
extern void err_msg(const char *fmt, ...);

#define MAX_NAMED	64
#define MAX_TOP		20
#define WORD_MAX	96

enum kind {
	K_UP, K_RECORDS_RATE, K_RECORDS, K_LOST_RATE, K_LOST, K_DROPPED_RATE,
	K_DROPPED, K_PROBES,
	K_PROBE_RATE, K_PROBE_EVENTS, K_PROBE_BYTES_RATE, K_PROBE_BYTES,
	K_JOB_RATE, K_JOB_EVENTS, K_JOB_BYTES_RATE, K_JOB_BYTES,
	K_JOB_NET_TX_RATE, K_JOB_NET_TX, K_JOB_NET_RX_RATE, K_JOB_NET_RX,
	K_TOP_NAME, K_TOP_RATE,
};

struct def {
	enum kind kind;
	int arg;		/* probe, job or top slot */
};

extern mmodule magnet_module;

static struct {
	struct mgg_link link;
	const char *probes[MAX_NAMED], *jobs[MAX_NAMED];
	int nprobes, njobs, ntop;

	struct def *defs;
	bool *served;		/* handed out since the last fetch */
	int nmetrics;
	struct mgg_snapshot prev, cur;
	bool have_prev, have_cur, away;
	struct { const char *name; double rate; } top[MAX_TOP];
	char topnames[MAX_TOP][MAX_G_STRING_SIZE];
} mm;

static int by_rate(const void *a, const void *b)
{
	double x = ((const typeof(mm.top[0]) *)a)->rate;
	double y = ((const typeof(mm.top[0]) *)b)->rate;

	return (x < y) - (x > y);
}

/* The busiest jobs between the last two fetches ("other" is no job). */
static void rank_jobs(void)
{
	size_t i, n = 0;
	typeof(mm.top[0]) *all;

	memset(mm.top, 0, sizeof(mm.top));
	if (!mm.have_prev)
		return;
	all = calloc(mm.cur.njobs + 1, sizeof(*all));
	if (!all)
		return;
	for (i = 0; i < mm.cur.njobs; i++) {
		const struct mgg_counter *c = &mm.cur.jobs_v[i];
		const struct mgg_counter *p = mgg_find(mm.prev.jobs_v,
						       mm.prev.njobs, c->name);

		if (!strcmp(c->name, "other"))
			continue;
		all[n].name = mgg_job_name(c);
		all[n].rate = mgg_rate(&mm.prev, &mm.cur, p ? p->events : 0,
				       c->events);
		if (!isnan(all[n].rate))
			n++;
	}
	qsort(all, n, sizeof(*all), by_rate);
	for (i = 0; i < n && i < (size_t)mm.ntop; i++) {
		mgg_safe_name(mm.topnames[i], sizeof(mm.topnames[i]), all[i].name);
		mm.top[i].name = mm.topnames[i];
		mm.top[i].rate = all[i].rate;
	}
	free(all);
}

/* A metric asked for again: a new collection, one fetch (if one is due). */
static void refresh(int metric_index)
{
	struct mgg_snapshot s;
	char why[256];
	int ret;

	if (!mm.served[metric_index]) {
		mm.served[metric_index] = true;
		return;
	}
	memset(mm.served, 0, mm.nmetrics * sizeof(*mm.served));
	mm.served[metric_index] = true;
	ret = mgg_link_fetch(&mm.link, &s, why, sizeof(why));
	if (!ret)
		return;		/* waiting to try again: still NaN */
	if (ret < 0) {
		if (!mm.away)
			err_msg("magnet_module: magnetd unreachable: %s; magnet metrics are NaN until it is back",
				why);
		mm.away = true;
		if (mm.have_prev)
			mgg_free(&mm.prev);
		if (mm.have_cur)
			mgg_free(&mm.cur);
		mm.have_prev = mm.have_cur = false;
		return;
	}
	if (mm.away)
		err_msg("magnet_module: magnetd at %s is back (up %.0f s)",
			mm.link.where, s.uptime);
	mm.away = false;
	if (mm.have_prev)
		mgg_free(&mm.prev);
	mm.prev = mm.cur;
	mm.have_prev = mm.have_cur;
	mm.cur = s;
	mm.have_cur = true;
	rank_jobs();
}

static double rate_of(double before, double now)
{
	return mm.have_prev ? mgg_rate(&mm.prev, &mm.cur, before, now) : NAN;
}

static const struct mgg_counter *counter(bool job, const struct mgg_snapshot *s,
					 int i)
{
	return job ? mgg_find(s->jobs_v, s->njobs, mm.jobs[i]) :
		     mgg_find(s->probes_v, s->nprobes, mm.probes[i]);
}

enum field { F_EVENTS, F_SOCK_BYTES, F_NET_TX, F_NET_RX };

static double field_of(const struct mgg_counter *c, enum field f)
{
	if (!c)
		return 0;
	switch (f) {
	case F_SOCK_BYTES:
		return c->sock_bytes;
	case F_NET_TX:
		return c->net_tx_bytes;
	case F_NET_RX:
		return c->net_rx_bytes;
	default:
		return c->events;
	}
}

/* A probe's or job's counter; 0 while magnetd has no record of it. */
static double value_of(bool job, enum field f, int i, bool rate)
{
	double now = field_of(counter(job, &mm.cur, i), f);

	if (!rate)
		return now;
	if (!mm.have_prev)
		return NAN;
	return rate_of(field_of(counter(job, &mm.prev, i), f), now);
}

static g_val_t magnet_handler(int metric_index)
{
	const struct mgg_snapshot *c = &mm.cur, *p = &mm.prev;
	const struct def *d;
	g_val_t v;

	memset(&v, 0, sizeof(v));
	if (metric_index < 0 || metric_index >= mm.nmetrics)
		return v;	/* none of ours */
	d = &mm.defs[metric_index];
	refresh(metric_index);
	if (!mm.have_cur) {
		if (d->kind != K_TOP_NAME)
			v.d = NAN;
		return v;
	}
	switch (d->kind) {
	case K_UP:
		v.d = c->module_up;
		break;
	case K_RECORDS_RATE:
		v.d = rate_of(p->records, c->records);
		break;
	case K_RECORDS:
		v.d = c->records;
		break;
	case K_LOST_RATE:
		v.d = rate_of(p->kernel_lost, c->kernel_lost);
		break;
	case K_LOST:
		v.d = c->kernel_lost;
		break;
	case K_DROPPED_RATE:
		v.d = rate_of(p->daemon_dropped, c->daemon_dropped);
		break;
	case K_DROPPED:
		v.d = c->daemon_dropped;
		break;
	case K_PROBES:
		v.d = c->probes;
		break;
	case K_PROBE_RATE:
	case K_PROBE_EVENTS:
	case K_PROBE_BYTES_RATE:
	case K_PROBE_BYTES:
		v.d = value_of(false, d->kind == K_PROBE_BYTES_RATE || d->kind == K_PROBE_BYTES ?
			       F_SOCK_BYTES : F_EVENTS,
			       d->arg, d->kind == K_PROBE_RATE || d->kind == K_PROBE_BYTES_RATE);
		break;
	case K_JOB_RATE:
	case K_JOB_EVENTS:
	case K_JOB_BYTES_RATE:
	case K_JOB_BYTES:
		v.d = value_of(true, d->kind == K_JOB_BYTES_RATE || d->kind == K_JOB_BYTES ?
			       F_SOCK_BYTES : F_EVENTS,
			       d->arg, d->kind == K_JOB_RATE || d->kind == K_JOB_BYTES_RATE);
		break;
	case K_JOB_NET_TX_RATE:
	case K_JOB_NET_TX:
		v.d = value_of(true, F_NET_TX, d->arg, d->kind == K_JOB_NET_TX_RATE);
		break;
	case K_JOB_NET_RX_RATE:
	case K_JOB_NET_RX:
		v.d = value_of(true, F_NET_RX, d->arg, d->kind == K_JOB_NET_RX_RATE);
		break;
	case K_TOP_NAME:	/* made safe for gmond by rank_jobs */
		snprintf(v.str, sizeof(v.str), "%s",
			 mm.top[d->arg].name ? mm.top[d->arg].name : "");
		break;
	case K_TOP_RATE:
		v.d = mm.top[d->arg].name ? mm.top[d->arg].rate : 0;
		break;
	}
	return v;
}

/* ------------------------------------------------------------- init */

static apr_array_header_t *metrics;
static apr_array_header_t *defs;

static void add(apr_pool_t *pool, enum kind kind, int arg, const char *name,
		const char *units, const char *slope, const char *fmt,
		const char *desc)
{
	Ganglia_25metric *gmi = apr_array_push(metrics);
	struct def *d = apr_array_push(defs);

	memset(gmi, 0, sizeof(*gmi));
	d->kind = kind;
	d->arg = arg;
	gmi->name = apr_pstrdup(pool, name);
	gmi->tmax = 60;
	if (kind == K_TOP_NAME) {
		gmi->type = GANGLIA_VALUE_STRING;
		gmi->msg_size = MAX_G_STRING_SIZE;
		gmi->fmt = "%s";
	} else {
		gmi->type = GANGLIA_VALUE_DOUBLE;
		gmi->msg_size = sizeof(double);
		gmi->fmt = apr_pstrdup(pool, fmt);
	}
	gmi->units = apr_pstrdup(pool, units);
	gmi->slope = apr_pstrdup(pool, slope);
	gmi->desc = apr_pstrdup(pool, desc);
	MMETRIC_INIT_METADATA(gmi, pool);
	MMETRIC_ADD_METADATA(gmi, MGROUP, "magnet");
	MMETRIC_ADD_METADATA(gmi, "TITLE", gmi->desc);
}

/*
 * The four metrics of a probe or a job named in the configuration; a
 * job's traffic, by its sockets (skb probes), four more.
 */
static void add_set(apr_pool_t *pool, bool job, int i, const char *what)
{
	static const struct {
		enum kind kind;
		const char *suffix, *units, *fmt, *desc;
	} net[] = {
		{ K_JOB_NET_TX_RATE, "net_tx_bytes_rate", "bytes/s", "%.2f",
		  "Payload bytes per second sent by the sockets of job (cgroup) %s (skb probes)" },
		{ K_JOB_NET_TX, "net_tx_bytes", "bytes", "%.0f",
		  "Payload bytes sent by the sockets of job (cgroup) %s since magnetd started (skb probes)" },
		{ K_JOB_NET_RX_RATE, "net_rx_bytes_rate", "bytes/s", "%.2f",
		  "Payload bytes per second received by the sockets of job (cgroup) %s (skb probes)" },
		{ K_JOB_NET_RX, "net_rx_bytes", "bytes", "%.0f",
		  "Payload bytes received by the sockets of job (cgroup) %s since magnetd started (skb probes)" },
	};
	static const struct {
		enum kind probe_kind, job_kind;
		const char *suffix, *units, *fmt, *probe_desc, *job_desc;
	} set[] = {
		{ K_PROBE_RATE, K_JOB_RATE, "rate", "events/s", "%.2f",
		  "Events per second of probe %s",
		  "Events per second of job (cgroup) %s" },
		{ K_PROBE_EVENTS, K_JOB_EVENTS, "events", "events", "%.0f",
		  "Events of probe %s since magnetd started",
		  "Events of job (cgroup) %s since magnetd started" },
		{ K_PROBE_BYTES_RATE, K_JOB_BYTES_RATE, "bytes_rate", "bytes/s", "%.2f",
		  "Bytes per second in the size argument of probe %s (sock handler: bytes sent or received)",
		  "Network bytes per second of job (cgroup) %s (sock-handler probes)" },
		{ K_PROBE_BYTES, K_JOB_BYTES, "bytes", "bytes", "%.0f",
		  "Bytes in the size argument of probe %s since magnetd started",
		  "Network bytes of job (cgroup) %s since magnetd started (sock-handler probes)" },
	};
	char name[WORD_MAX + 64], w[WORD_MAX], desc[512], safe[256];
	size_t k;

	mgg_metric_word(w, sizeof(w), what);
	mgg_safe_name(safe, sizeof(safe), what);
	for (k = 0; k < sizeof(set) / sizeof(set[0]); k++) {
		snprintf(name, sizeof(name), "magnet_%s_%s_%s", job ? "job" : "probe",
			 w, set[k].suffix);
		snprintf(desc, sizeof(desc), job ? set[k].job_desc : set[k].probe_desc,
			 safe);
		add(pool, job ? set[k].job_kind : set[k].probe_kind, i, name,
		    set[k].units, "both", set[k].fmt, desc);
	}
	for (k = 0; job && k < sizeof(net) / sizeof(net[0]); k++) {
		snprintf(name, sizeof(name), "magnet_job_%s_%s", w, net[k].suffix);
		snprintf(desc, sizeof(desc), net[k].desc, safe);
		add(pool, net[k].kind, i, name, net[k].units, "both", net[k].fmt, desc);
	}
}

/* A comma-separated list into v (duplicated in pool); -1: too many. */
static int split(apr_pool_t *pool, const char *list, const char **v)
{
	char *copy = apr_pstrdup(pool, list), *save = NULL, *w;
	int n = 0;

	for (w = strtok_r(copy, ", \t", &save); w; w = strtok_r(NULL, ", \t", &save)) {
		if (n == MAX_NAMED)
			return -1;
		v[n++] = w;
	}
	return n;
}

static int params(apr_pool_t *pool)
{
	apr_array_header_t *list = magnet_module.module_params_list;
	mmparam *p = list ? (mmparam *)list->elts : NULL;
	const char *host = "127.0.0.1", *port = "8650";
	const char *sock = "/run/magnet/magnetd.sock";
	bool tcp = false;
	int timeout_ms = 2000;
	char why[256];
	int i;

	mm.ntop = 3;
	for (i = 0; list && i < list->nelts; i++) {
		const char *k = p[i].name, *v = p[i].value ? p[i].value : "";
		char *end;
		long n;

		if (!strcasecmp(k, "socket")) {
			sock = apr_pstrdup(pool, v);
		} else if (!strcasecmp(k, "host")) {
			host = apr_pstrdup(pool, v);
			tcp = true;
		} else if (!strcasecmp(k, "port")) {
			tcp = true;
			n = strtol(v, &end, 10);
			if (*end || n < 1 || n > 65535) {
				err_msg("magnet_module: param port: '%s' is not a port (1 to 65535)", v);
				return -1;
			}
			port = apr_pstrdup(pool, v);
		} else if (!strcasecmp(k, "timeout")) {
			n = strtol(v, &end, 10);
			if (strcmp(end, "ms") || n < 10 || n > 60000) {
				err_msg("magnet_module: param timeout: '%s' is not 10ms to 60000ms", v);
				return -1;
			}
			timeout_ms = n;
		} else if (!strcasecmp(k, "probes")) {
			mm.nprobes = split(pool, v, mm.probes);
			if (mm.nprobes < 0) {
				err_msg("magnet_module: param probes: more than %d names", MAX_NAMED);
				return -1;
			}
		} else if (!strcasecmp(k, "jobs")) {
			mm.njobs = split(pool, v, mm.jobs);
			if (mm.njobs < 0) {
				err_msg("magnet_module: param jobs: more than %d cgroup paths", MAX_NAMED);
				return -1;
			}
			for (n = 0; n < mm.njobs; n++)
				if (mm.jobs[n][0] != '/') {
					err_msg("magnet_module: param jobs: '%s' is not a cgroup path (it starts with /)",
						mm.jobs[n]);
					return -1;
				}
		} else if (!strcasecmp(k, "top_jobs")) {
			n = strtol(v, &end, 10);
			if (*end || n < 0 || n > MAX_TOP) {
				err_msg("magnet_module: param top_jobs: '%s' is not 0 to %d", v, MAX_TOP);
				return -1;
			}
			mm.ntop = n;
		} else if ((n = mgg_auth_param(k, v, why, sizeof(why)))) {
			if (n < 0) {
				err_msg("magnet_module: %s", why);
				return -1;
			}
		} else {
			err_msg("magnet_module: unknown param '%s' (socket, host, port, timeout, probes, jobs, top_jobs, munge, munge_socket)", k);
			return -1;
		}
	}
	/* The Unix socket unless TCP was asked for (host, port, socket ""). */
	if (sock[0] && !tcp) {
		if (mgg_link_init_unix(&mm.link, sock, timeout_ms, why, sizeof(why))) {
			err_msg("magnet_module: param socket: %s", why);
			return -1;
		}
		return 0;
	}
	/* Once, here: a name's lookup would not keep to the timeout. */
	if (mgg_link_init(&mm.link, host, port, timeout_ms, why, sizeof(why))) {
		err_msg("magnet_module: param host: %s", why);
		return -1;
	}
	return 0;
}

static int magnet_init(apr_pool_t *p)
{
	char name[WORD_MAX + 64], desc[512];
	Ganglia_25metric *end;
	int i;

	metrics = apr_array_make(p, 16, sizeof(Ganglia_25metric));
	defs = apr_array_make(p, 16, sizeof(struct def));
	if (params(p)) {
		/* No metrics at all: gmond runs on, the log says why. */
		err_msg("magnet_module: bad configuration: no magnet metrics (see docs/ganglia.md)");
		mm.nprobes = mm.njobs = mm.ntop = 0;
		end = apr_array_push(metrics);
		memset(end, 0, sizeof(*end));
		magnet_module.metrics_info = (Ganglia_25metric *)metrics->elts;
		mm.defs = (struct def *)defs->elts;
		return 0;
	}

	add(p, K_UP, 0, "magnet_up", "", "both", "%.0f",
	    "magnet module loaded and read by magnetd (1), or not (0)");
	add(p, K_RECORDS_RATE, 0, "magnet_records_rate", "records/s", "both", "%.2f",
	    "Event records magnetd read per second");
	add(p, K_RECORDS, 0, "magnet_records", "records", "both", "%.0f",
	    "Event records magnetd read since it started");
	add(p, K_LOST_RATE, 0, "magnet_kernel_lost_rate", "records/s", "both", "%.2f",
	    "Records the kernel lost per second (ring full, too big, nesting, overwritten)");
	add(p, K_LOST, 0, "magnet_kernel_lost", "records", "both", "%.0f",
	    "Records the kernel lost since magnetd started");
	add(p, K_DROPPED_RATE, 0, "magnet_daemon_dropped_rate", "records/s", "both", "%.2f",
	    "Records per second magnetd counted but could not queue for its clients");
	add(p, K_DROPPED, 0, "magnet_daemon_dropped", "records", "both", "%.0f",
	    "Records magnetd dropped since it started");
	add(p, K_PROBES, 0, "magnet_probes", "probes", "both", "%.0f",
	    "Probes loaded in the magnet module");
	for (i = 0; i < mm.nprobes; i++)
		add_set(p, false, i, mm.probes[i]);
	for (i = 0; i < mm.njobs; i++)
		add_set(p, true, i, mm.jobs[i]);
	for (i = 0; i < mm.ntop; i++) {
		snprintf(name, sizeof(name), "magnet_top%d_job", i + 1);
		snprintf(desc, sizeof(desc), "The job (cgroup path) with the %d%s most events per second",
			 i + 1, i == 0 ? "st" : i == 1 ? "nd" : i == 2 ? "rd" : "th");
		add(p, K_TOP_NAME, i, name, "", "zero", "%s", desc);
		snprintf(name, sizeof(name), "magnet_top%d_job_rate", i + 1);
		snprintf(desc, sizeof(desc), "Events per second of magnet_top%d_job", i + 1);
		add(p, K_TOP_RATE, i, name, "events/s", "both", "%.2f", desc);
	}
	end = apr_array_push(metrics);
	memset(end, 0, sizeof(*end));
	magnet_module.metrics_info = (Ganglia_25metric *)metrics->elts;
	mm.defs = (struct def *)defs->elts;
	mm.nmetrics = defs->nelts;
	/* All handed out: the first metric asked for starts a collection. */
	mm.served = apr_palloc(p, mm.nmetrics * sizeof(*mm.served));
	for (i = 0; i < mm.nmetrics; i++)
		mm.served[i] = true;
	err_msg("magnet_module: %d metrics from magnetd at %s (%d probes, %d jobs, %d top slots)",
		metrics->nelts - 1, mm.link.where, mm.nprobes, mm.njobs, mm.ntop);
	return 0;
}

static void magnet_cleanup(void)
{
	if (mm.have_prev)
		mgg_free(&mm.prev);
	if (mm.have_cur)
		mgg_free(&mm.cur);
	mm.have_prev = mm.have_cur = false;
}

mmodule magnet_module = {
	STD_MMODULE_STUFF,
	magnet_init,
	magnet_cleanup,
	NULL,			/* metrics_info: made by magnet_init */
	magnet_handler,
};
