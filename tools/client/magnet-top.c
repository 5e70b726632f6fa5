// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-top: a live view of magnetd (docs/protocol.md), like top: the
 * busiest processes, jobs (cgroups) and probes of every interval, and the
 * network traffic of each job and the peers it talks to.
 *
 * An AGG replaces the connection's earlier one, so each of the four
 * reports (tgid, cgroup, probe, net) has a connection of its own; a fifth
 * asks HELLO, STATS and PROBES once per interval. A screen is drawn once
 * every report has come since the last one, so all show the same
 * interval; one that stays silent past half an interval more is shown as
 * it last was, marked stale. The net report is optional: -N, or a
 * magnetd that refuses it (shown, not fatal). docs/magnet-top.md.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "escape.h"
#include "mgclient.h"
#include "util.h"

#define PROG		"magnet-top"
/* getopt_long value of --munge-socket, which has no short form. */
#define OPT_MUNGE_SOCKET	256
#define REPLY_TIMEOUT_MS	10000
/* -d bounds: the protocol's AGG interval limits. */
#define INTERVAL_MIN_MS	10
#define INTERVAL_MAX_MS	86400000LL
/* Escaped text of one label, as shown. */
#define LABEL_MAX	256
/* A server's line quoted in a protocol error: this much of it. */
#define QUOTE_SHORT	200

enum { T_PROC, T_JOB, T_PROBE, T_NET, NTABLES };

/* The four reports: AGG key, title, and the tag of its -m lines. */
static const struct table_def {
	const char *key;
	const char *title;
	const char *tag;
} tables[NTABLES] = {
	[T_PROC] = { "tgid", "TOP PROCESSES", "process" },
	[T_JOB] = { "cgroup", "TOP JOBS", "job" },
	[T_PROBE] = { "probe", "PROBES", "probe" },
	[T_NET] = { "net", "NETWORK BY JOB", "net_job" },
};

/* The sections of a screen, in its order: T_NET shows as two. */
enum { S_PROC, S_JOB, S_NET, S_PEER, S_PROBE, NSECTIONS };

enum mode { MODE_TERM, MODE_BATCH, MODE_MACHINE };

struct table {
	struct mgc_conn c;
	struct mgc_agg rep;	/* the latest report (T_NET: net) */
	struct mgc_net net;
	bool have;		/* a report came at all */
	bool fresh;		/* ... since the last screen */
};

struct top {
	const char *server;
	long long interval_ms;
	unsigned long long iterations;	/* -n, 0 = until quit */
	enum mode mode;
	bool net;			/* the net report is asked (no -N) ... */
	/* ... and, if set, refused: the ERR, escaped (mgc_quote) */
	char net_refused[MGC_ERR_MAX];
	struct mgc_conn info;
	struct table t[NTABLES];
	struct mgc_hello hello;
	struct mgc_stats stats;
	struct mg_probe_table probes;
	/* STATS totals at the previous screen, for the "+N" of this one */
	bool polled, have_delta;
	__u64 prev_lost, prev_dropped;
	__u64 d_lost, d_dropped;
	unsigned long long iteration;
	bool quit;			/* 'q' */
};

static volatile sig_atomic_t stop, resized;
static struct termios saved_tio;
static bool tio_saved, screen_used;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		resized = 1;
	else
		stop = sig;
}

/* Raw mode off, cursor back: at exit, however it comes. */
static void term_restore(void)
{
	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
		tio_saved = false;
	}
	if (screen_used) {
		fputs("\033[?25h\n", stdout);
		fflush(stdout);
		screen_used = false;
	}
}

/* -h asks for it (stdout, 0); anything else is a usage error. */
__attribute__((noreturn))
static void usage(int status)
{
	fprintf(status ? stderr : stdout,
"usage: " PROG " [-s HOST:PORT] [-M] [-d SECONDS] [-n ITERATIONS] [-N]\n"
"       [-b | -m]\n"
"  -s, --server HOST:PORT  magnetd's address (default " MGC_DEFAULT_SERVER ");\n"
"                          IPv6 as [::1]:8650, a host name, or HOST alone\n"
"  -d, --delay SECONDS     interval (default 1, 0.01 to 86400, e.g. 0.5)\n"
"  -n, --iterations N      stop after N screens\n"
"  -N, --no-net            no network view (no AGG net)\n"
"  -b, --batch             plain text, a block per interval (the default\n"
"                          when stdout is not a terminal)\n"
"  -m, --machine           tab-separated lines: section, key, values\n"
"  -M, --munge             authenticate with MUNGE even on loopback (a\n"
"                          server not on loopback always gets a credential)\n"
"      --munge-socket PATH munged's socket (libmunge's default)\n"
"Interactive: q quits.\n");
	exit(status);
}

__attribute__((format(printf, 2, 3), noreturn))
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	term_restore();
	va_start(ap, fmt);
	mg_vdie(PROG, code, fmt, ap);
}

/* ---- talking to magnetd ---- */

static void check_hello(struct top *t, const struct mgc_msg *m)
{
	char why[MGC_ERR_MAX];

	mgc_hello_free(&t->hello);
	if (mgc_parse_hello(m->text, m->line_len, &t->hello, why, sizeof(why)))
		die(2, "protocol error from %s: %s", t->info.server, why);
	if (t->hello.version != MGC_PROTO_VERSION)
		die(2, "magnetd at %s speaks protocol version %u; this " PROG " speaks %u",
		    t->info.server, t->hello.version, MGC_PROTO_VERSION);
}

/*
 * A message that is an ERR, or not the one expected: the line said,
 * escaped (mgc_quote), so that neither a server nor a name a user chose
 * that an error echoes drives the terminal.
 */
__attribute__((noreturn))
static void die_unexpected(const struct mgc_conn *c, const struct mgc_msg *m)
{
	char q[MGC_QUOTE_MAX];

	if (m->kind == MGC_MSG_ERR)	/* as it came */
		die(2, "%s", mgc_quote(q, sizeof(q), m->text, m->line_len, false));
	die(2, "protocol error from %s: unexpected '%s'", c->server,
	    mgc_quote(q, QUOTE_SHORT, m->text, m->line_len, false));
}

/* A reply that must be an OK; ERR is printed as it came. */
static void need_ok(struct mgc_conn *c, int r, const struct mgc_msg *m,
		    const char *what)
{
	if (r == 0)
		die(2, "magnetd at %s closed the connection%s", c->server, what);
	if (r < 0)
		die(2, "%s", c->err);
	if (m->kind != MGC_MSG_OK)
		die_unexpected(c, m);
}

static void start(struct top *t)
{
	char cmd[64], q[QUOTE_SHORT];
	struct mgc_msg m;
	int i, r;

	if (mgc_connect(&t->info, t->server, REPLY_TIMEOUT_MS))
		die(2, "%s", t->info.err);
	r = mgc_command(&t->info, "HELLO", &m, REPLY_TIMEOUT_MS);
	need_ok(&t->info, r, &m,
		" before replying to HELLO (is this host in its --allow list?)");
	check_hello(t, &m);

	for (i = 0; i < NTABLES; i++) {
		struct mgc_conn *c = &t->t[i].c;

		if (i == T_NET && !t->net)
			continue;
		if (mgc_connect(c, t->server, REPLY_TIMEOUT_MS))
			die(2, "%s", c->err);
		snprintf(cmd, sizeof(cmd), "AGG %s EVERY %lldms", tables[i].key,
			 t->interval_ms);
		r = mgc_command(c, cmd, &m, REPLY_TIMEOUT_MS);
		/* A magnetd without AGG net: the other views still work. */
		if (i == T_NET && r == 1 && m.kind == MGC_MSG_ERR) {
			mgc_quote(t->net_refused, sizeof(t->net_refused),
				  m.text, m.line_len, false);
			mgc_close(c);
			continue;
		}
		need_ok(c, r, &m, " before replying to AGG");
		if (m.line_len < 6 || memcmp(m.text, "OK agg", 6))
			die(2, "protocol error from %s: '%s' in reply to %s",
			    c->server, mgc_quote(q, sizeof(q), m.text,
						 m.line_len, false), cmd);
	}
}

/* HELLO, STATS and PROBES, pipelined on the info connection. */
static void poll_info(struct top *t)
{
	char why[MGC_ERR_MAX];
	struct mg_probe_table pt;
	struct mgc_stats st;
	struct mgc_msg m;
	__u64 dropped;
	int r;

	if (mgc_send(&t->info, "HELLO\nSTATS\nPROBES\n"))
		die(2, "%s", t->info.err);
	r = mgc_recv(&t->info, &m, REPLY_TIMEOUT_MS);
	need_ok(&t->info, r, &m, "");
	check_hello(t, &m);

	r = mgc_recv(&t->info, &m, REPLY_TIMEOUT_MS);
	need_ok(&t->info, r, &m, "");
	if (mgc_parse_stats(m.all, m.all_len, &st, why, sizeof(why)))
		die(2, "protocol error from %s: %s", t->info.server, why);
	mgc_stats_free(&t->stats);
	t->stats = st;

	r = mgc_recv(&t->info, &m, REPLY_TIMEOUT_MS);
	need_ok(&t->info, r, &m, "");
	if (mgc_parse_probes(m.all, m.all_len, &pt, why, sizeof(why)))
		die(2, "protocol error from %s: %s", t->info.server, why);
	mg_probes_free(&t->probes);
	t->probes = pt;

	/* A daemon restarted behind us starts from 0: no delta then. */
	dropped = st.queue_dropped + st.client_dropped;
	t->have_delta = t->polled && st.read_lost >= t->prev_lost &&
			dropped >= t->prev_dropped;
	if (t->have_delta) {
		t->d_lost = st.read_lost - t->prev_lost;
		t->d_dropped = dropped - t->prev_dropped;
	}
	t->polled = true;
	t->prev_lost = st.read_lost;
	t->prev_dropped = dropped;
}

/* Does report k come: asked, and not refused? */
static bool active(const struct top *t, int k)
{
	return k != T_NET || (t->net && !t->net_refused[0]);
}

/* Take every whole message a table's connection has received. */
static void drain(struct top *t, struct table *tb)
{
	char why[MGC_ERR_MAX];
	struct mgc_agg a;
	struct mgc_net n;
	struct mgc_msg m;
	int r;

	while ((r = mgc_next(&tb->c, &m)) == 1) {
		switch (m.kind) {
		case MGC_MSG_AGG:
			/* Several since the last screen: the latest counts. */
			if (tb == &t->t[T_NET]) {
				if (mgc_parse_net(m.all, m.all_len, &n, why, sizeof(why)))
					die(2, "protocol error from %s: %s", tb->c.server, why);
				mgc_net_free(&tb->net);
				tb->net = n;
			} else {
				if (mgc_parse_agg(m.all, m.all_len, &a, why, sizeof(why)))
					die(2, "protocol error from %s: %s", tb->c.server, why);
				mgc_agg_free(&tb->rep);
				tb->rep = a;
			}
			tb->have = tb->fresh = true;
			break;
		case MGC_MSG_DROP:
			/* Sent to subscribers; nothing here depends on it. */
			break;
		default:
			die_unexpected(&tb->c, &m);
		}
	}
	if (r < 0)
		die(2, "%s", tb->c.err);
	if (tb->c.eof)
		die(2, "magnetd at %s closed the connection", tb->c.server);
}

/* ---- drawing ---- */

static void fmt_uptime(char *buf, size_t len, __u64 s)
{
	if (s >= 86400)
		snprintf(buf, len, "%llud %02llu:%02llu:%02llu",
			 (unsigned long long)s / 86400,
			 (unsigned long long)s / 3600 % 24,
			 (unsigned long long)s / 60 % 60,
			 (unsigned long long)s % 60);
	else
		snprintf(buf, len, "%llu:%02llu:%02llu",
			 (unsigned long long)s / 3600,
			 (unsigned long long)s / 60 % 60,
			 (unsigned long long)s % 60);
}

/* Records per second of a report: the probe table counts every record. */
static double report_rate(const struct mgc_agg *a)
{
	return a->interval ? (double)a->events * 1e9 / (double)a->interval : 0;
}

/* A probe row: the kernel's table joined with the interval's counts. */
struct prow {
	unsigned int id;
	const char *name;
	const char *type;
	bool has_hits;
	__u64 hits;
	__u64 events;
	double rate;
};

static int prow_cmp(const void *a, const void *b)
{
	const struct prow *x = a, *y = b;

	if (x->events != y->events)
		return x->events > y->events ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Every probe of PROBES, and any the report names that PROBES lacks. */
static struct prow *probe_rows(const struct top *t, size_t *n)
{
	const struct table *tb = &t->t[T_PROBE];
	size_t np = t->probes.n, na = tb->have ? tb->rep.n : 0, i, j;
	struct prow *v = calloc(np + na + 1, sizeof(*v));

	if (!v)
		die(2, "out of memory");
	*n = 0;
	for (i = 0; i < np; i++) {
		const struct mg_probe *p = &t->probes.v[i];
		struct prow *r = &v[(*n)++];

		r->id = p->id;
		r->name = p->name;
		r->type = p->type;
		r->has_hits = true;
		r->hits = p->hits;
	}
	for (j = 0; j < na; j++) {
		const struct mgc_agg_entry *e = &tb->rep.v[j];
		struct prow *r = NULL;

		for (i = 0; i < np; i++)
			if (v[i].id == e->id)
				r = &v[i];
		if (!r) {
			r = &v[(*n)++];
			r->id = e->id;
			r->name = e->label;
			r->type = "-";
		}
		r->events = e->events;
		r->rate = e->rate;
	}
	qsort(v, *n, sizeof(*v), prow_cmp);
	return v;
}

/* How a table's report stands on this screen. */
static const char *staleness(const struct table *tb)
{
	if (!tb->have)
		return " (no report yet)";
	return tb->fresh ? "" : " (stale: no report this interval)";
}

static void section_title(FILE *f, const struct table *tb, int i)
{
	const struct mgc_agg *a = &tb->rep;

	fprintf(f, "%s", tables[i].title);
	if (tb->have)
		fprintf(f, ": %llu events in %.2f s, %llu keys",
			(unsigned long long)a->events, a->interval / 1e9,
			(unsigned long long)a->keys);
	if (tb->have && a->unkeyed)
		fprintf(f, ", %llu unkeyed", (unsigned long long)a->unkeyed);
	if (tb->have && a->evicted)
		fprintf(f, ", %llu evicted", (unsigned long long)a->evicted);
	fprintf(f, "%s\n", staleness(tb));
}

/* Per second over a report's measured interval. */
static double per_s(__u64 n, __u64 interval)
{
	return interval ? (double)n * 1e9 / (double)interval : 0;
}

/* A byte rate, SI units from 1000 as network rates go: 640, 1.2k, 64.0M. */
static const char *fmt_rate(char *buf, size_t len, double v)
{
	static const char units[] = "kMGTPE";
	int u = -1;

	while (v >= 1000 && u < 5) {
		v /= 1000;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.1f%c", v, units[u]);
	return buf;
}

/*
 * A job as people read it, escaped into buf: a Slurm job's series by its
 * Slurm job ("slurm=42.0,uid=1000": docs/slurm.md), any other by its path.
 */
static const char *job_shown(char *buf, size_t size, const char *label,
			     const struct mgc_slurm *s)
{
	char name[LABEL_MAX];

	if (s && s->is)
		return mgc_escape(buf, size, mgc_slurm_name(s, name, sizeof(name)));
	return mgc_escape(buf, size, label);
}

/*
 * A job for a peer row, as job_shown(): the net report's J lines name the
 * jobs they show, the cgroup report most others; "-" if neither does.
 */
static const char *job_label(char *buf, size_t size, const struct top *t,
			     __u32 job)
{
	const struct table *nt = &t->t[T_NET], *jt = &t->t[T_JOB];
	size_t i;

	for (i = 0; i < nt->net.njobs; i++)
		if (nt->net.job[i].job == job)
			return job_shown(buf, size, nt->net.job[i].label,
					 &nt->net.job[i].slurm);
	for (i = 0; jt->have && i < jt->rep.n; i++)
		if (jt->rep.v[i].id == job)
			return job_shown(buf, size, jt->rep.v[i].label,
					 &jt->rep.v[i].slurm);
	return "-";
}

/* -m's Slurm fields of a job: job id, step, uid; "-" for what is not. */
static void slurm_fields(FILE *f, const struct mgc_slurm *s)
{
	char step[40];

	if (!s->is) {
		fputs("\t-\t-\t-", f);
		return;
	}
	snprintf(step, sizeof(step), "%s%s", s->step[0] ? s->step : "-",
		 s->stepd ? "/slurmstepd" : "");
	fprintf(f, "\t%u\t%s\t", s->job, step);
	if (s->has_uid)
		fprintf(f, "%u", s->uid);
	else
		fputc('-', f);
}

/* The net report's lack of packets, said, not left to guess. */
static bool net_empty(const struct table *tb)
{
	return tb->have && !tb->net.packets && !tb->net.unkeyed;
}

/* Two P lines of one job, protocol and peer (their local ends apart). */
static bool same_peer(const struct mgc_net_peer *a, const struct mgc_net_peer *b)
{
	return a->job == b->job && !strcmp(a->proto, b->proto) && !strcmp(a->peer, b->peer);
}

/* The network sections: traffic by job, then by peer. */
static void render_net(FILE *f, const struct top *t, const size_t *max)
{
	const struct table *tb = &t->t[T_NET];
	const struct mgc_net *a = &tb->net;
	char lbl[LABEL_MAX], key[24], proto[LABEL_MAX], peer[LABEL_MAX];
	char tx[16], rx[16];
	size_t i, shown;

	if (!t->net)
		return;
	fprintf(f, "\n%s", tables[T_NET].title);
	if (t->net_refused[0]) {
		/* A sentence: its spaces stay. */
		fprintf(f, ": not shown, magnetd refused AGG net: %s\n",
			t->net_refused);
		return;
	}
	if (tb->have) {
		fprintf(f, ": %llu packets, %llu bytes in %.2f s, %llu jobs",
			(unsigned long long)a->packets,
			(unsigned long long)a->bytes, a->interval / 1e9,
			(unsigned long long)a->jobs);
		if (a->unkeyed)
			fprintf(f, ", %llu unkeyed", (unsigned long long)a->unkeyed);
		if (a->evicted_jobs)
			fprintf(f, ", %llu evicted (%llu bytes)",
				(unsigned long long)a->evicted_jobs,
				(unsigned long long)a->evicted_job_bytes);
	}
	fprintf(f, "%s\n", staleness(tb));
	fprintf(f, "%10s %-6s %10s %10s %10s %10s  %s\n", "CGROUP", "PROTO",
		"TX B/s", "RX B/s", "TX PKT/s", "RX PKT/s", "PATH");
	for (i = 0; tb->have && i < a->njobs && i < max[S_NET]; i++) {
		const struct mgc_net_job *e = &a->job[i];

		snprintf(key, sizeof(key), "%u", e->job);
		fprintf(f, "%10s %-6s %10s %10s %10.1f %10.1f  %s\n", key,
			mgc_escape(proto, sizeof(proto), e->proto),
			fmt_rate(tx, sizeof(tx), per_s(e->tx_bytes, a->interval)),
			fmt_rate(rx, sizeof(rx), per_s(e->rx_bytes, a->interval)),
			per_s(e->tx_packets, a->interval),
			per_s(e->rx_packets, a->interval),
			job_shown(lbl, sizeof(lbl), e->label, &e->slurm));
	}
	if (net_empty(tb))
		fprintf(f, "%10s no packets (no skb probes? magnet-ctl probe add set net-jobs)\n", "");

	fprintf(f, "\nPEERS");
	if (tb->have) {
		fprintf(f, ": %llu peers", (unsigned long long)a->peers);
		if (a->evicted_peers)
			fprintf(f, ", %llu evicted (%llu bytes)",
				(unsigned long long)a->evicted_peers,
				(unsigned long long)a->evicted_peer_bytes);
	}
	fprintf(f, "%s\n", staleness(tb));
	fprintf(f, "%10s %-6s %10s %10s  %-22s  %s\n", "CGROUP", "PROTO",
		"TX B/s", "RX B/s", "PEER", "PATH");
	for (i = 0, shown = 0; tb->have && i < a->npeers && shown < max[S_PEER]; i++) {
		const struct mgc_net_peer *e = &a->peer[i];
		__u64 txb = 0, rxb = 0;
		size_t k;

		/* A row per job, protocol and peer: its flows (local ends) summed. */
		for (k = 0; k < i && !same_peer(&a->peer[k], e); k++)
			;
		if (k < i)
			continue;
		for (k = i; k < a->npeers; k++)
			if (same_peer(&a->peer[k], e)) {
				txb += a->peer[k].tx_bytes;
				rxb += a->peer[k].rx_bytes;
			}
		snprintf(key, sizeof(key), "%u", e->job);
		fprintf(f, "%10s %-6s %10s %10s  %-22s  %s\n", key,
			mgc_escape(proto, sizeof(proto), e->proto),
			fmt_rate(tx, sizeof(tx), per_s(txb, a->interval)),
			fmt_rate(rx, sizeof(rx), per_s(rxb, a->interval)),
			mgc_escape(peer, sizeof(peer), e->peer),
			job_label(lbl, sizeof(lbl), t, e->job));
		shown++;
	}
}

/* Text: batch blocks, and the terminal's screen with max rows a section. */
static void render_text(FILE *f, const struct top *t, const size_t *max)
{
	const struct table *pt = &t->t[T_PROBE];
	char up[32], when[16], lbl[LABEL_MAX], lbl2[LABEL_MAX];
	struct prow *rows;
	struct tm tm;
	time_t now;
	size_t i, n;
	int k;

	now = pt->have ? (time_t)(pt->rep.ts / 1000000000ULL) : time(NULL);
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fmt_uptime(up, sizeof(up), t->stats.uptime);
	fprintf(f, "magnet-top - %s up %s, node %s, %u cpus, clock %s, module %s\n",
		when, up, mgc_escape(lbl, sizeof(lbl), t->hello.node),
		t->hello.cpus, mgc_escape(lbl2, sizeof(lbl2), t->hello.clock),
		t->hello.module_up ? "up" : "down");
	fprintf(f, "records %.1f/s, kernel lost %llu", pt->have ?
		report_rate(&pt->rep) : 0.0,
		(unsigned long long)t->stats.read_lost);
	if (t->have_delta)
		fprintf(f, " (+%llu)", (unsigned long long)t->d_lost);
	fprintf(f, ", daemon drops %llu", (unsigned long long)
		(t->stats.queue_dropped + t->stats.client_dropped));
	if (t->have_delta)
		fprintf(f, " (+%llu)", (unsigned long long)t->d_dropped);
	fprintf(f, ", clients %llu\n", (unsigned long long)t->stats.clients);

	/* Processes and jobs: the key, the counts, and the label last. */
	for (k = T_PROC; k <= T_JOB; k++) {
		const struct table *tb = &t->t[k];
		size_t lim = max[k == T_PROC ? S_PROC : S_JOB];

		fputc('\n', f);
		section_title(f, tb, k);
		fprintf(f, "%10s %10s %10s  %s\n", k == T_PROC ? "TGID" : "CGROUP",
			"EVENTS", "RATE/s", k == T_PROC ? "COMM" : "PATH");
		for (i = 0; tb->have && i < tb->rep.n && i < lim; i++) {
			const struct mgc_agg_entry *e = &tb->rep.v[i];

			fprintf(f, "%10s %10llu %10.1f  %s\n",
				mgc_escape(lbl2, sizeof(lbl2), e->value),
				(unsigned long long)e->events, e->rate,
				job_shown(lbl, sizeof(lbl), e->label,
					  k == T_JOB ? &e->slurm : NULL));
		}
	}

	render_net(f, t, max);

	fputc('\n', f);
	section_title(f, pt, T_PROBE);
	fprintf(f, "%6s %-10s %12s %10s %10s  %s\n", "ID", "TYPE", "HITS",
		"EVENTS", "RATE/s", "NAME");
	rows = probe_rows(t, &n);
	for (i = 0; i < n && i < max[S_PROBE]; i++) {
		char hits[24] = "-";

		if (rows[i].has_hits)
			snprintf(hits, sizeof(hits), "%llu",
				 (unsigned long long)rows[i].hits);
		fprintf(f, "%6u %-10s %12s %10llu %10.1f  %s\n", rows[i].id,
			mgc_escape(lbl2, sizeof(lbl2), rows[i].type), hits,
			(unsigned long long)rows[i].events, rows[i].rate,
			mgc_escape(lbl, sizeof(lbl), rows[i].name));
	}
	free(rows);
}

/* -m's net_job and net_peer lines: the interval's counts, exact. */
static void render_net_machine(FILE *f, const struct top *t)
{
	const struct table *tb = &t->t[T_NET];
	char lbl[LABEL_MAX], proto[LABEL_MAX];
	size_t i;

	for (i = 0; tb->have && i < tb->net.njobs; i++) {
		const struct mgc_net_job *e = &tb->net.job[i];

		fprintf(f, "net_job\t%u\t%s\t%s\t%llu\t%llu\t%llu\t%llu",
			e->job, mgc_escape(proto, sizeof(proto), e->proto),
			mgc_escape(lbl, sizeof(lbl), e->label),
			(unsigned long long)e->tx_packets,
			(unsigned long long)e->tx_bytes,
			(unsigned long long)e->rx_packets,
			(unsigned long long)e->rx_bytes);
		slurm_fields(f, &e->slurm);
		fputc('\n', f);
	}
	for (i = 0; tb->have && i < tb->net.npeers; i++) {
		const struct mgc_net_peer *e = &tb->net.peer[i];

		fprintf(f, "net_peer\t%u\t%s\t%s\t%llu\t%llu\t%llu\t%llu\t",
			e->job, mgc_escape(proto, sizeof(proto), e->proto),
			mgc_escape(lbl, sizeof(lbl), e->peer),
			(unsigned long long)e->tx_packets,
			(unsigned long long)e->tx_bytes,
			(unsigned long long)e->rx_packets,
			(unsigned long long)e->rx_bytes);
		/* The flow's local end last: "-" from a magnetd that sends none. */
		fprintf(f, "%s\n", e->local ? mgc_escape(lbl, sizeof(lbl), e->local) : "-");
	}
}

/* -m: "section<TAB>key<TAB>value..." lines; "-" for a value not known. */
static void render_machine(FILE *f, const struct top *t)
{
	const struct table *pt = &t->t[T_PROBE];
	char lbl[LABEL_MAX], lbl2[LABEL_MAX];
	struct prow *rows;
	size_t i, n;
	int k;

	fprintf(f, "header\titeration\t%llu\n", t->iteration);
	if (pt->have)
		fprintf(f, "header\tts\t%llu\n", (unsigned long long)pt->rep.ts);
	else
		fprintf(f, "header\tts\t-\n");
	fprintf(f, "header\tnode\t%s\n", mgc_escape(lbl, sizeof(lbl), t->hello.node));
	fprintf(f, "header\tcpus\t%u\n", t->hello.cpus);
	fprintf(f, "header\tclock\t%s\n", mgc_escape(lbl, sizeof(lbl), t->hello.clock));
	fprintf(f, "header\tuptime\t%llu\n", (unsigned long long)t->stats.uptime);
	fprintf(f, "header\tmodule\t%s\n", t->hello.module_up ? "up" : "down");
	if (pt->have)
		fprintf(f, "header\trecords_per_s\t%.1f\n", report_rate(&pt->rep));
	else
		fprintf(f, "header\trecords_per_s\t-\n");
	fprintf(f, "header\tkernel_lost\t%llu\n",
		(unsigned long long)t->stats.read_lost);
	fprintf(f, "header\tdaemon_dropped\t%llu\n", (unsigned long long)
		(t->stats.queue_dropped + t->stats.client_dropped));
	if (t->have_delta)
		fprintf(f, "header\tkernel_lost_delta\t%llu\n"
			"header\tdaemon_dropped_delta\t%llu\n",
			(unsigned long long)t->d_lost,
			(unsigned long long)t->d_dropped);
	else
		fprintf(f, "header\tkernel_lost_delta\t-\n"
			"header\tdaemon_dropped_delta\t-\n");
	fprintf(f, "header\tclients\t%llu\n", (unsigned long long)t->stats.clients);
	if (!t->net)
		fprintf(f, "header\tnet\toff\n");
	else if (t->net_refused[0])
		fprintf(f, "header\tnet\trefused\t%s\n", t->net_refused);
	else
		fprintf(f, "header\tnet\ton\n");

	for (k = 0; k < NTABLES; k++) {
		const struct table *tb = &t->t[k];
		const struct mgc_agg *a = &tb->rep;
		const struct mgc_net *na = &tb->net;

		if (!tb->have)
			continue;
		if (k == T_NET) {
			fprintf(f, "report\tnet\t%d\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n",
				tb->fresh, (unsigned long long)na->ts,
				(unsigned long long)na->interval,
				(unsigned long long)na->packets,
				(unsigned long long)na->bytes,
				(unsigned long long)na->jobs,
				(unsigned long long)na->peers,
				(unsigned long long)na->lost,
				(unsigned long long)na->evicted_jobs,
				(unsigned long long)na->evicted_job_bytes,
				(unsigned long long)na->evicted_peers,
				(unsigned long long)na->evicted_peer_bytes,
				(unsigned long long)na->unkeyed,
				(unsigned long long)na->dropped,
				(unsigned long long)na->skipped);
			continue;
		}
		fprintf(f, "report\t%s\t%d\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n",
			a->key, tb->fresh, (unsigned long long)a->ts,
			(unsigned long long)a->interval,
			(unsigned long long)a->events,
			(unsigned long long)a->bytes,
			(unsigned long long)a->keys,
			(unsigned long long)a->lost,
			(unsigned long long)a->evicted,
			(unsigned long long)a->evicted_events,
			(unsigned long long)a->unkeyed,
			(unsigned long long)a->dropped);
	}
	for (k = T_PROC; k <= T_JOB; k++) {
		const struct table *tb = &t->t[k];

		for (i = 0; tb->have && i < tb->rep.n; i++) {
			const struct mgc_agg_entry *e = &tb->rep.v[i];

			fprintf(f, "%s\t%s\t%s\t%llu\t%.1f", tables[k].tag,
				mgc_escape(lbl2, sizeof(lbl2), e->value),
				mgc_escape(lbl, sizeof(lbl), e->label),
				(unsigned long long)e->events, e->rate);
			if (k == T_JOB)
				slurm_fields(f, &e->slurm);
			fputc('\n', f);
		}
	}
	render_net_machine(f, t);
	rows = probe_rows(t, &n);
	for (i = 0; i < n; i++) {
		fprintf(f, "probe\t%u\t%s\t", rows[i].id,
			mgc_escape(lbl, sizeof(lbl), rows[i].name));
		fprintf(f, "%s\t", mgc_escape(lbl2, sizeof(lbl2), rows[i].type));
		if (rows[i].has_hits)
			fprintf(f, "%llu", (unsigned long long)rows[i].hits);
		else
			fputc('-', f);
		fprintf(f, "\t%llu\t%.1f\n", (unsigned long long)rows[i].events,
			rows[i].rate);
	}
	free(rows);
}

/*
 * Rows of each section on a screen of height rows: what is left after the
 * fixed lines, shared evenly, a section's unused share going to the others.
 */
static void share_rows(const struct top *t, unsigned int rows, size_t *max)
{
	const struct table *nt = &t->t[T_NET];
	/* 2 header lines, then 3 sections of blank + title + column names */
	unsigned int fixed = 2 + 3 * 3 + 1;
	size_t want[NSECTIONS] = { 0 }, left, n;
	bool more = true;
	int k;

	/* the network's two sections, or the line saying why none */
	if (t->net && t->net_refused[0])
		fixed += 2;
	else if (t->net)
		fixed += 2 * 3 + net_empty(nt);
	want[S_PROC] = t->t[T_PROC].have ? t->t[T_PROC].rep.n : 0;
	want[S_JOB] = t->t[T_JOB].have ? t->t[T_JOB].rep.n : 0;
	want[S_NET] = nt->have ? nt->net.njobs : 0;
	want[S_PEER] = nt->have ? nt->net.npeers : 0;
	free(probe_rows(t, &n));
	want[S_PROBE] = n;
	left = rows > fixed ? rows - fixed : 0;
	for (k = 0; k < NSECTIONS; k++)
		max[k] = 0;
	/* One row at a time, round robin: simple, and rows are few. */
	while (left && more) {
		more = false;
		for (k = 0; k < NSECTIONS && left; k++) {
			if (max[k] < want[k]) {
				max[k]++;
				left--;
				more = true;
			}
		}
	}
}

/* Columns of a line of UTF-8 (escaped labels hold nothing wider). */
static void put_cut(FILE *out, const char *s, size_t len, unsigned int cols)
{
	unsigned int col = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80 && col++ == cols)
			break;
		fputc(s[i], out);
	}
}

static void draw(const struct top *t)
{
	size_t max[NSECTIONS], len;
	struct winsize ws = { 0 };
	unsigned int rows = 24, cols = 80;
	char *buf = NULL;
	const char *p, *end, *nl;
	FILE *f;
	int k;

	for (k = 0; k < NSECTIONS; k++)
		max[k] = SIZE_MAX;
	if (t->mode == MODE_MACHINE) {
		render_machine(stdout, t);
		fputc('\n', stdout);
		fflush(stdout);
		return;
	}
	if (t->mode == MODE_BATCH) {
		render_text(stdout, t, max);
		fputc('\n', stdout);
		fflush(stdout);
		return;
	}
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		rows = ws.ws_row;
		cols = ws.ws_col;
	}
	share_rows(t, rows, max);
	f = open_memstream(&buf, &len);
	if (!f)
		die(2, "out of memory");
	render_text(f, t, max);
	if (fclose(f))
		die(2, "out of memory");
	/* Home, clear, and each line cut to the width: nothing scrolls. */
	fputs("\033[H\033[2J", stdout);
	for (p = buf, end = buf + len; p < end; p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		put_cut(stdout, p, nl - p, cols);
		if (nl < end && nl + 1 < end)
			fputc('\n', stdout);
	}
	free(buf);
	if (fflush(stdout))
		die(2, "writing output: %s", strerror(errno));
}

/* ---- the loop ---- */

static void read_keys(struct top *t)
{
	char keys[64];
	ssize_t n = read(STDIN_FILENO, keys, sizeof(keys)), i;

	for (i = 0; i < n; i++)
		if (keys[i] == 'q' || keys[i] == 'Q')
			t->quit = true;
}

/*
 * Until every table has reported since the last screen (1), the
 * deadline passes (0), or the user asks to stop (-1).
 */
static int wait_reports(struct top *t, long long deadline,
			const sigset_t *waitmask, bool keys)
{
	struct pollfd pfd[NTABLES + 1];
	int k, r;

	for (;;) {
		struct timespec ts;
		bool all = true;
		long long left;

		for (k = 0; k < NTABLES; k++) {
			if (!active(t, k))
				continue;
			drain(t, &t->t[k]);
			all &= t->t[k].fresh;
		}
		if (all)
			return 1;
		if (stop || t->quit)
			return -1;
		if (resized && t->mode == MODE_TERM && t->iteration)
			draw(t);
		resized = 0;
		left = deadline - mgc_mono_ms();
		if (left <= 0)
			return 0;
		for (k = 0; k < NTABLES; k++) {
			pfd[k].fd = active(t, k) ? t->t[k].c.fd : -1;
			pfd[k].events = POLLIN;
			pfd[k].revents = 0;
		}
		pfd[NTABLES].fd = keys ? STDIN_FILENO : -1;
		pfd[NTABLES].events = POLLIN;
		pfd[NTABLES].revents = 0;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = left % 1000 * 1000000;
		/* Signals are blocked except here: none is missed. */
		r = ppoll(pfd, NTABLES + 1, &ts, waitmask);
		if (r < 0 && errno != EINTR)
			die(2, "poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		for (k = 0; k < NTABLES; k++) {
			ssize_t n;

			if (!pfd[k].revents)
				continue;
			n = mgc_fill(&t->t[k].c);
			if (n < 0 && n != -EAGAIN)
				die(2, "%s", t->t[k].c.err);
		}
		if (pfd[NTABLES].revents)
			read_keys(t);
	}
}

static void term_setup(bool keys)
{
	struct termios tio;

	if (keys && !tcgetattr(STDIN_FILENO, &saved_tio)) {
		tio = saved_tio;
		/* Keys one by one, unechoed; ISIG stays, so ^C is SIGINT. */
		tio.c_lflag &= ~(ICANON | ECHO);
		tio.c_cc[VMIN] = 1;
		tio.c_cc[VTIME] = 0;
		if (!tcsetattr(STDIN_FILENO, TCSANOW, &tio))
			tio_saved = true;
	}
	screen_used = true;
	fputs("\033[?25l", stdout);
	atexit(term_restore);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "delay", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "no-net", no_argument, NULL, 'N' },
		{ "batch", no_argument, NULL, 'b' },
		{ "machine", no_argument, NULL, 'm' },
		{ "munge", no_argument, NULL, 'M' },
		{ "munge-socket", required_argument, NULL, OPT_MUNGE_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static struct top t;
	static const int sigs[] = { SIGINT, SIGTERM, SIGWINCH, 0 };
	bool batch = false, machine = false, keys = false;
	enum mga_munge munge = MGA_MUNGE_AUTO;
	const char *munge_socket = NULL;
	sigset_t waitmask;
	long long last;
	int opt, k, r;
	__u64 v;

	t.server = MGC_DEFAULT_SERVER;
	t.interval_ms = 1000;
	t.net = true;
	for (k = 0; k < NTABLES; k++)
		t.t[k].c.fd = -1;
	while ((opt = getopt_long(argc, argv, "s:d:n:NbmMh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			t.server = optarg;
			break;
		case 'd':
			if (mgc_parse_ms(optarg, &t.interval_ms) ||
			    t.interval_ms < INTERVAL_MIN_MS ||
			    t.interval_ms > INTERVAL_MAX_MS) {
				fprintf(stderr, PROG ": -d needs seconds from 0.01 to 86400, not '%s'\n",
					optarg);
				usage(1);
			}
			break;
		case 'n':
			if (mgc_opt_count(PROG, 'n', optarg, &v))
				usage(1);
			t.iterations = v;
			break;
		case 'N':
			t.net = false;
			break;
		case 'b':
			batch = true;
			break;
		case 'm':
			machine = true;
			break;
		case 'M':
			munge = MGA_MUNGE_ALWAYS;
			break;
		case OPT_MUNGE_SOCKET:
			munge_socket = optarg;
			break;
		case 'h':
			usage(0);
		default:
			usage(1);
		}
	}
	if (optind != argc)
		usage(1);
	if (machine)
		t.mode = MODE_MACHINE;
	else if (batch || !isatty(STDOUT_FILENO))
		t.mode = MODE_BATCH;
	else
		t.mode = MODE_TERM;
	keys = t.mode == MODE_TERM && isatty(STDIN_FILENO);

	/* As magnet-cat: blocked, and delivered only while ppoll waits. */
	mgc_catch_signals(sigs, on_signal, &waitmask);

	mgc_set_munge(munge, munge_socket);
	start(&t);
	if (t.mode == MODE_TERM)
		term_setup(keys);
	last = mgc_mono_ms();
	for (;;) {
		/* Half an interval more, and a little for the network. */
		r = wait_reports(&t, last + t.interval_ms * 3 / 2 + 500,
				 &waitmask, keys);
		if (r < 0)
			break;
		poll_info(&t);
		t.iteration++;
		draw(&t);
		last = mgc_mono_ms();
		for (k = 0; k < NTABLES; k++)
			t.t[k].fresh = false;
		if (t.iterations && t.iteration >= t.iterations)
			break;
	}
	term_restore();
	for (k = 0; k < NTABLES; k++) {
		mgc_agg_free(&t.t[k].rep);
		mgc_net_free(&t.t[k].net);
		mgc_close(&t.t[k].c);
	}
	mgc_close(&t.info);
	mgc_hello_free(&t.hello);
	mgc_stats_free(&t.stats);
	mg_probes_free(&t.probes);
	return 0;
}
