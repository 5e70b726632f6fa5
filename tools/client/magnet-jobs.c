// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-jobs: each job's network traffic across several nodes, from
 * their magnetds (docs/magnet-jobs.md). Per node, one connection: `AGG
 * net` for one interval (the flows, with both their ends), then
 * UNSUBSCRIBE and TOTALS (each job's traffic since magnetd started, per
 * protocol and peer host). mgjobs.c groups the jobs across nodes and
 * finds each flow's peer job; this file reads the nodes and prints.
 *
 * One print path: the same walk over the groups writes text, JSON (-j)
 * or tab-separated lines (-m), each field through one helper that knows
 * the three forms.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "mgclient.h"
#include "mgjobs.h"
#include "util.h"

#define PROG		"magnet-jobs"
#define OPT_MUNGE_SOCKET	256
#define REPLY_TIMEOUT_MS	10000
#define NODES_MAX	64
#define FIELD_MAX	1200	/* a field escaped for text (a path, 4 bytes a byte) */

enum mode { MODE_TEXT, MODE_JSON, MODE_MACHINE };

struct node {
	const char *server;
	char name[160];
	struct mgc_conn c;
	struct mgc_totals totals;
	struct mgc_net flows;
	bool have_totals, have_flows;
	char err[MGC_ERR_MAX];		/* why not read ("" when it was) */
	char flows_err[MGC_ERR_MAX];	/* why without flows ("" when with) */
};

static struct node nodes[NODES_MAX];
static size_t nnodes;
static enum mode mode;

__attribute__((format(printf, 2, 3), noreturn))
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mg_vdie(PROG, code, fmt, ap);
}

__attribute__((noreturn))
static void usage(int status)
{
	fprintf(status ? stderr : stdout,
"usage: " PROG " [-s HOST:PORT[,HOST:PORT...]]... [-d SECONDS] [-j | -m] [-M]\n"
"       [JOB...]\n"
"  -s, --server LIST       magnetds to read, comma-separated, the option again\n"
"                          for more (default " MGC_DEFAULT_SERVER ")\n"
"  -d, --delay SECONDS     how long to watch the flows that name peer jobs\n"
"                          (default 1, 0.01 to 3600; 0: no flows, TOTALS only)\n"
"  -j, --json              one JSON object\n"
"  -m, --machine           tab-separated lines: kind, job, node, values\n"
"  -M, --munge             authenticate with MUNGE even on loopback\n"
"      --munge-socket PATH munged's socket (libmunge's default)\n"
"  JOB                     only these: a Slurm job id (42, slurm=42) or a\n"
"                          cgroup path\n");
	exit(status);
}

/* ---- reading the nodes ---- */

__attribute__((format(printf, 2, 3)))
static void node_fail(struct node *nd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(nd->err, sizeof(nd->err), fmt, ap);
	va_end(ap);
	mgc_close(&nd->c);
}

/* An ERR, a protocol error or a closed connection, said for people. */
static void unexpected(char *buf, size_t size, struct node *nd, int r,
		       const struct mgc_msg *m)
{
	char q[MGC_QUOTE_MAX];

	if (r < 0)
		snprintf(buf, size, "%s", nd->c.err);
	else if (r == 0)
		snprintf(buf, size, "%s closed the connection", nd->c.server);
	else
		snprintf(buf, size, "%s: %s", nd->c.server,
			 mgc_quote(q, sizeof(q), m->text, m->line_len, false));
}

/* AGG net EVERY the window; an ERR leaves the node without flows. */
static void start_flows(struct node *nd, long long window_ms)
{
	struct mgc_msg m;
	char cmd[64];
	int r;

	snprintf(cmd, sizeof(cmd), "AGG net EVERY %lldms", window_ms);
	r = mgc_command(&nd->c, cmd, &m, REPLY_TIMEOUT_MS);
	if (r == 1 && m.kind == MGC_MSG_OK)
		return;
	if (r == 1 && m.kind == MGC_MSG_ERR) {
		unexpected(nd->flows_err, sizeof(nd->flows_err), nd, r, &m);
		return;
	}
	unexpected(nd->err, sizeof(nd->err), nd, r, &m);
	mgc_close(&nd->c);
}

/* The first report, then UNSUBSCRIBE: until its OK, data may still come. */
static void take_flows(struct node *nd, long long deadline)
{
	char why[MGC_ERR_MAX];
	struct mgc_msg m;
	int r;

	while (!nd->have_flows) {
		long long left = deadline - mgc_mono_ms();

		r = mgc_recv(&nd->c, &m, left > 0 ? (int)left : 0);
		if (r == -ETIMEDOUT) {
			snprintf(nd->flows_err, sizeof(nd->flows_err),
				 "no AGG net report from %s in time", nd->c.server);
			break;
		}
		if (r != 1 || m.kind == MGC_MSG_ERR || m.kind == MGC_MSG_OK) {
			unexpected(nd->err, sizeof(nd->err), nd, r, &m);
			mgc_close(&nd->c);
			return;
		}
		if (m.kind != MGC_MSG_AGG)
			continue;	/* a D line: drops the report counts */
		if (mgc_parse_net(m.all, m.all_len, &nd->flows, why, sizeof(why))) {
			node_fail(nd, "protocol error from %s: %s", nd->c.server, why);
			return;
		}
		nd->have_flows = true;
	}
	if (mgc_send(&nd->c, "UNSUBSCRIBE\n")) {
		node_fail(nd, "%s", nd->c.err);
		return;
	}
	do {
		r = mgc_recv(&nd->c, &m, REPLY_TIMEOUT_MS);
	} while (r == 1 && (m.kind == MGC_MSG_AGG || m.kind == MGC_MSG_DROP));
	if (r != 1 || m.kind != MGC_MSG_OK) {
		unexpected(nd->err, sizeof(nd->err), nd, r, &m);
		mgc_close(&nd->c);
	}
}

static void take_totals(struct node *nd)
{
	char why[MGC_ERR_MAX];
	struct mgc_msg m;
	int r = mgc_command(&nd->c, "TOTALS", &m, REPLY_TIMEOUT_MS);

	if (r != 1 || m.kind != MGC_MSG_OK) {
		unexpected(nd->err, sizeof(nd->err), nd, r, &m);
		mgc_close(&nd->c);
		return;
	}
	if (mgc_parse_totals(m.all, m.all_len, &nd->totals, why, sizeof(why))) {
		node_fail(nd, "protocol error from %s: %s", nd->c.server, why);
		return;
	}
	nd->have_totals = true;
	mgc_close(&nd->c);
}

/* Every node at once: the flows' interval is the same for all. */
static void read_nodes(long long window_ms)
{
	long long deadline;
	size_t i, k;

	for (i = 0; i < nnodes; i++)
		if (mgc_connect(&nodes[i].c, nodes[i].server, REPLY_TIMEOUT_MS))
			node_fail(&nodes[i], "%s", nodes[i].c.err);
	for (i = 0; window_ms && i < nnodes; i++)
		if (!nodes[i].err[0])
			start_flows(&nodes[i], window_ms);
	deadline = mgc_mono_ms() + window_ms * 3 / 2 + REPLY_TIMEOUT_MS;
	for (i = 0; window_ms && i < nnodes; i++)
		if (!nodes[i].err[0] && !nodes[i].flows_err[0])
			take_flows(&nodes[i], deadline);
	for (i = 0; i < nnodes; i++)
		if (!nodes[i].err[0])
			take_totals(&nodes[i]);
	/* Names: TOTALS' node=, the server's address for one that said none. */
	for (i = 0; i < nnodes; i++)
		snprintf(nodes[i].name, sizeof(nodes[i].name), "%s",
			 nodes[i].have_totals ? nodes[i].totals.node : nodes[i].server);
	for (i = 0; i < nnodes; i++)
		for (k = 0; k < i; k++)
			if (!strcmp(nodes[i].name, nodes[k].name)) {
				/* Two of one name (one magnetd twice, or twin hosts). */
				snprintf(nodes[i].name + strlen(nodes[i].name),
					 sizeof(nodes[i].name) - strlen(nodes[i].name),
					 "@%s", nodes[i].server);
				break;
			}
}

/* ---- printing: one walk, three forms ---- */

static bool json_comma[16];
static int json_depth;

static void json_key(const char *key)
{
	if (json_comma[json_depth])
		putchar(',');
	json_comma[json_depth] = true;
	if (key) {
		mg_json_string(stdout, key);
		putchar(':');
	}
}

/* An object or list ('{' or '['), named key in an object; JSON only. */
static void open_json(const char *key, char c)
{
	if (mode != MODE_JSON)
		return;
	json_key(key);
	putchar(c);
	json_comma[++json_depth] = false;
}

static void close_json(char c)
{
	if (mode != MODE_JSON)
		return;
	json_depth--;
	putchar(c);
}

/*
 * A string field: text as fmt says (escaped for a terminal), JSON as
 * "key":"value", machine as a tab and the value (escaped); where is
 * which forms show it (a row's job and node are its group's in text and
 * JSON, a field of every line in machine form).
 */
#define IN_TEXT		1
#define IN_JSON		2
#define IN_MACHINE	4
#define IN_ALL		7

static void field_str(unsigned int where, const char *key, const char *fmt,
		      const char *v)
{
	char esc[FIELD_MAX];

	if (mode == MODE_JSON && (where & IN_JSON)) {
		json_key(key);
		mg_json_string(stdout, v);
	} else if (mode == MODE_MACHINE && (where & IN_MACHINE)) {
		printf("\t%s", mgc_escape(esc, sizeof(esc), v));
	} else if (mode == MODE_TEXT && (where & IN_TEXT)) {
		printf(fmt, mgc_escape(esc, sizeof(esc), v));
	}
}

static void field_u64(unsigned int where, const char *key, const char *fmt,
		      unsigned long long v)
{
	if (mode == MODE_JSON && (where & IN_JSON)) {
		json_key(key);
		printf("%llu", v);
	} else if (mode == MODE_MACHINE && (where & IN_MACHINE)) {
		printf("\t%llu", v);
	} else if (mode == MODE_TEXT && (where & IN_TEXT)) {
		printf(fmt, v);
	}
}

/* A line: a JSON object in a list; machine lines start with their kind. */
static void line_start(const char *kind)
{
	if (mode == MODE_MACHINE)
		fputs(kind, stdout);
	open_json(NULL, '{');
}

static void line_end(void)
{
	if (mode == MODE_JSON)
		close_json('}');
	else
		putchar('\n');
}

static void text(const char *s)
{
	if (mode == MODE_TEXT)
		fputs(s, stdout);
}

static void counts(const struct mgc_counts *c)
{
	field_u64(IN_ALL, "tx_packets", " %9llu", c->tx_packets);
	field_u64(IN_ALL, "tx_bytes", " %13llu", c->tx_bytes);
	field_u64(IN_ALL, "rx_packets", " %9llu", c->rx_packets);
	field_u64(IN_ALL, "rx_bytes", " %13llu", c->rx_bytes);
}

static void print_nodes(long long window_ms)
{
	size_t i;

	if (mode == MODE_TEXT)
		printf("%zu node%s, flows of %lld.%03lld s:", nnodes, nnodes == 1 ? "" : "s",
		       window_ms / 1000, window_ms % 1000);
	if (mode == MODE_JSON) {
		open_json(NULL, '{');
		json_key("window_ms");
		printf("%lld", window_ms);
	}
	open_json("nodes", '[');
	for (i = 0; i < nnodes; i++) {
		const struct node *nd = &nodes[i];
		const char *state = nd->err[0] ? "error" : nd->have_flows ? "flows" : "no-flows";

		if (mode == MODE_TEXT) {
			printf(" %s", nd->name);
			if (nd->err[0] || !nd->have_flows)
				printf(" (%s)", nd->err[0] ? "unreachable" : "no flows");
			continue;
		}
		line_start("node");
		field_str(IN_ALL, "node", "%s", nd->name);
		field_str(IN_ALL, "server", "%s", nd->server);
		field_str(IN_ALL, "state", "%s", state);
		field_str(IN_ALL, "error", "%s", nd->err[0] ? nd->err :
			  nd->flows_err[0] ? nd->flows_err : "-");
		line_end();
	}
	close_json(']');
	text("\n");
}

static void peer_jobs(const struct mgj_peer *p)
{
	char buf[FIELD_MAX] = "", one[MGJ_KEY_MAX + 200];
	size_t i;

	open_json("peer_jobs", '[');
	for (i = 0; i < p->njobs; i++) {
		if (mode == MODE_JSON) {
			open_json(NULL, '{');
			field_str(IN_JSON, "node", "", nodes[p->jobs[i].node].name);
			field_str(IN_JSON, "job", "", p->jobs[i].job);
			close_json('}');
			continue;
		}
		snprintf(one, sizeof(one), "%s%s:%s", i ? "," : "",
			 nodes[p->jobs[i].node].name, p->jobs[i].job);
		if (strlen(buf) + strlen(one) < sizeof(buf))
			strcat(buf, one);
	}
	close_json(']');
	if (p->more && strlen(buf) + 24 < sizeof(buf))
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ",+%zu", p->more);
	field_u64(IN_JSON, "peer_jobs_more", "", p->more);
	field_str(IN_TEXT | IN_MACHINE, "peer_jobs", "  %s", buf[0] ? buf : "-");
}

static void print_row(const struct mgj_group *g, const struct mgj_row *r)
{
	const char *node = nodes[r->node].name;
	char peer[2 * FIELD_MAX + 4];
	size_t i;

	open_json(NULL, '{');
	field_str(IN_JSON, "node", "", node);
	open_json("net", '[');
	for (i = 0; i < r->nprotos; i++) {
		line_start("net");
		field_str(IN_MACHINE, "job", "", g->key);
		field_str(IN_TEXT | IN_MACHINE, "node", "  %-16s", node);
		field_str(IN_ALL, "proto", " %-24s", r->protos[i].proto);
		counts(&r->protos[i].c);
		line_end();
	}
	close_json(']');
	open_json("peers", '[');
	for (i = 0; i < r->npeers; i++) {
		const struct mgj_peer *p = &r->peers[i];

		if (!strcmp(p->addr, "other") && !p->c.tx_packets && !p->c.rx_packets)
			continue;	/* no peer unlisted */
		line_start("peer");
		field_str(IN_MACHINE, "job", "", g->key);
		field_str(IN_TEXT | IN_MACHINE, "node", "  %-16s", node);
		field_str(IN_JSON | IN_MACHINE, "peer", "", p->addr);
		field_str(IN_JSON | IN_MACHINE, "peer_node", "",
			  p->node >= 0 ? nodes[p->node].name : "-");
		/* Text: one column, the host and its node, each escaped. */
		if (mode == MODE_TEXT) {
			char a[FIELD_MAX], nn[FIELD_MAX];

			mgc_escape(a, sizeof(a), p->addr);
			if (p->node >= 0)
				snprintf(peer, sizeof(peer), "%s (%s)", a,
					 mgc_escape(nn, sizeof(nn), nodes[p->node].name));
			else
				snprintf(peer, sizeof(peer), "%s", a);
			printf(" %-24s", peer);
		}
		counts(&p->c);
		peer_jobs(p);
		line_end();
	}
	close_json(']');
	close_json('}');
}

static void print_group(const struct mgj_group *g)
{
	size_t i;

	open_json(NULL, '{');
	if (mode == MODE_TEXT)
		printf("\nJOB %s on %zu node%s\n", g->key, g->nrows, g->nrows == 1 ? "" : "s");
	field_str(IN_JSON, "job", "", g->key);
	if (g->slurm)
		field_u64(IN_JSON, "slurm_job_id", "", g->slurm_job);
	if (mode == MODE_JSON) {
		open_json("total", '{');
		counts(&g->c);
		close_json('}');
	}
	text("  NODE             PROTO / PEER              TX PKTS      TX BYTES   RX PKTS      RX BYTES  PEER JOBS\n");
	open_json("nodes", '[');
	for (i = 0; i < g->nrows; i++)
		print_row(g, &g->rows[i]);
	close_json(']');
	close_json('}');
}

/* Is g one of the jobs asked for (all when none)? */
static bool wanted(const struct mgj_group *g, char **jobs, int njobs)
{
	char want[MGJ_KEY_MAX];
	int i;

	for (i = 0; i < njobs; i++) {
		const char *j = jobs[i];

		if (j[0] >= '0' && j[0] <= '9')
			snprintf(want, sizeof(want), "slurm=%s", j);
		else
			snprintf(want, sizeof(want), "%s", j);
		if (!strcmp(want, g->key))
			return true;
	}
	return !njobs;
}

/* "a,b" and -s c: every server, in order. */
static void add_servers(char *list)
{
	char *save = NULL, *s;

	for (s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		if (nnodes == NODES_MAX) {
			fprintf(stderr, PROG ": at most %d servers\n", NODES_MAX);
			usage(1);
		}
		nodes[nnodes].c.fd = -1;
		nodes[nnodes++].server = s;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "delay", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "machine", no_argument, NULL, 'm' },
		{ "munge", no_argument, NULL, 'M' },
		{ "munge-socket", required_argument, NULL, OPT_MUNGE_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	enum mga_munge munge = MGA_MUNGE_AUTO;
	const char *munge_socket = NULL;
	struct mgj_node in[NODES_MAX];
	struct mgj_group *groups;
	long long window_ms = 1000;
	size_t ngroups, i, failed = 0;
	bool json = false, machine = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "s:d:jmMh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			add_servers(optarg);
			break;
		case 'd':
			if (mgc_parse_ms(optarg, &window_ms) ||
			    (window_ms && window_ms < 10) || window_ms > 3600000) {
				fprintf(stderr, PROG ": -d needs seconds from 0.01 to 3600, or 0, not '%s'\n",
					optarg);
				usage(1);
			}
			break;
		case 'j':
			json = true;
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
	if (json && machine) {
		fprintf(stderr, PROG ": -j or -m, not both\n");
		usage(1);
	}
	mode = json ? MODE_JSON : machine ? MODE_MACHINE : MODE_TEXT;
	if (!nnodes) {
		nodes[0].c.fd = -1;
		nodes[nnodes++].server = MGC_DEFAULT_SERVER;
	}
	mgc_set_munge(munge, munge_socket);

	read_nodes(window_ms);
	for (i = 0; i < nnodes; i++) {
		in[i] = (struct mgj_node){ .name = nodes[i].name,
			.totals = nodes[i].have_totals ? &nodes[i].totals : NULL,
			.flows = nodes[i].have_flows ? &nodes[i].flows : NULL };
		if (nodes[i].err[0]) {
			char esc[MGC_QUOTE_MAX];

			fprintf(stderr, PROG ": %s\n", mgc_quote(esc, sizeof(esc), nodes[i].err,
								 strlen(nodes[i].err), false));
			failed++;
		} else if (window_ms && nodes[i].flows_err[0]) {
			fprintf(stderr, PROG ": no flows of %s (no peer jobs there): %s\n",
				nodes[i].name, nodes[i].flows_err);
		}
	}
	if (mgj_build(in, nnodes, &groups, &ngroups))
		die(2, "out of memory");

	print_nodes(window_ms);
	open_json("jobs", '[');
	for (i = 0; i < ngroups; i++)
		if (wanted(&groups[i], argv + optind, argc - optind))
			print_group(&groups[i]);
	close_json(']');
	close_json('}');
	if (mode == MODE_JSON)
		putchar('\n');
	mgj_free(groups, ngroups);
	for (i = 0; i < nnodes; i++) {
		mgc_totals_free(&nodes[i].totals);
		mgc_net_free(&nodes[i].flows);
		mgc_close(&nodes[i].c);
	}
	if (fflush(stdout) || ferror(stdout))
		die(2, "writing output: %s", strerror(errno));
	return failed == nnodes ? 2 : failed ? 3 : 0;
}
