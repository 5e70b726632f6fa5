// SPDX-License-Identifier: GPL-2.0
/*
 * Supermon's mon protocol over magnetd's totals; see supermon.h and
 * docs/supermon.md. As mon: one-character requests, each answered with
 * one s-expression (on one line here, so a reply is also a line), a
 * description that says what samples hold, and a category mask kept per
 * connection. Strings are double-quoted with \" and \\ escaped, as
 * sfsexp reads them; bytes outside printable ASCII, and '%', are %XX so a
 * reply never holds a control byte or a byte that is not ASCII.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "supermon.h"

#define ECHO_MAX	32

struct var {
	const char *name, *type, *kind, *source;
};

static const struct var header_vars[] = {
	{ "host", "string", "label", "the node's name (gethostname), after \"sample\"" },
	{ "time", "seconds", "gauge", "CLOCK_REALTIME of the sample, seconds since the epoch" },
};

static const struct var node_vars[] = {
	{ "module", "symbol", "gauge", "up while magnetd reads magnet's rings, down while the module is away" },
	{ "uptime", "u64", "gauge", "seconds since magnetd started; the counters start from 0 then" },
	{ "cpus", "u32", "gauge", "CPUs whose rings magnetd reads" },
	{ "records", "u64", "counter", "event records magnetd read from the rings" },
	{ "bytes", "u64", "counter", "bytes of those records" },
	{ "kernel_lost", "u64", "counter", "records the kernel reported lost (LOST records)" },
	{ "daemon_dropped", "u64", "counter", "records magnetd counted but could not queue for its clients" },
	{ "probes", "u32", "gauge", "probes loaded now (magnet/probes)" },
	{ "probe_missed", "u64", "counter", "hits of the loaded probes the kernel skipped (no record written)" },
	{ "jobs", "u32", "gauge", "jobs (cgroups) magnetd counts now" },
};

static const struct var probe_vars[] = {
	{ "id", "u32", "label", "the probe's event id" },
	{ "name", "string", "label", "the probe's name (unique: SYMBOL%return for a kretprobe unless named otherwise)" },
	{ "symbol", "string", "label", "its target function (and +OFFSET), or the custom event's name; \"\" if unknown" },
	{ "type", "symbol", "label", "kprobe, kretprobe, fentry, custom (unknown: removed before magnetd saw it)" },
	{ "loaded", "u32", "gauge", "1 while the probe is in magnet/probes" },
	{ "events", "u64", "counter", "records of the probe" },
	{ "sock_bytes", "u64", "counter", "sum of the size argument of its sock-handler records (bytes sent or received)" },
	{ "missed", "u64", "counter", "hits the kernel skipped, no record written (since the probe was added; 0 once removed)" },
};

static const struct var job_vars[] = {
	{ "cgroup", "u64", "label", "the job's cgroup id (0: other)" },
	{ "path", "string", "label", "its cgroup v2 path (cgroup:<id>: removed before magnetd saw it); \"other\": the jobs not exported (the export_jobs most active are) and records of cgroup 0" },
	{ "events", "u64", "counter", "records of the job (the cgroup each record carries) since it was last exported" },
	{ "sock_bytes", "u64", "counter", "sum of the size argument of the job's sock-handler records" },
	/* A Slurm job's series only (docs/slurm.md). */
	{ "slurm_job_id", "u32", "label", "a Slurm job's series only: its job id (the series of a step's tasks, or of its slurmstepd)" },
	{ "slurm_step", "string", "label", "a Slurm job's series only, but the job's own cgroup's: its step (0, batch, extern, interactive; N+C for a heterogeneous step's component)" },
	{ "slurm_stepd", "u32", "label", "1 on the series of a step's slurmstepd only" },
	{ "slurm_node", "string", "label", "a Slurm job's series only, when its slurmd's scope names its node (several slurmd on one host)" },
	{ "uid", "u32", "label", "a Slurm job's series only, when known: its user's uid" },
};

static const struct var net_vars[] = {
	{ "cgroup", "u64", "label", "the job's cgroup id (0: other), as in its job entry" },
	{ "path", "string", "label", "its path, as in its job entry" },
	{ "proto", "symbol", "label", "tcp, udp, icmp, icmpv6, or other (any other IP protocol)" },
	{ "tx_packets", "u64", "counter", "packets its sockets sent (skb records; every segment sent, again too), since the job was last exported" },
	{ "tx_bytes", "u64", "counter", "their transport payload bytes (TCP or UDP data; IP payload for other protocols)" },
	{ "rx_packets", "u64", "counter", "packets its sockets received, also those handled in softirq" },
	{ "rx_bytes", "u64", "counter", "their transport payload bytes" },
};

static const struct var peer_vars[] = {
	{ "cgroup", "u64", "label", "the job's cgroup id (0: other), as in its job entry" },
	{ "path", "string", "label", "its path, as in its job entry" },
	{ "peer", "string", "label", "the other end's address (10.0.0.2, fe80::1); \"other\": the peers not listed (the job's 16 first still active are)" },
	{ "tx_packets", "u64", "counter", "packets sent to it, since the job was last exported" },
	{ "tx_bytes", "u64", "counter", "their transport payload bytes" },
	{ "rx_packets", "u64", "counter", "packets received from it" },
	{ "rx_bytes", "u64", "counter", "their transport payload bytes" },
	{ "evictions", "u64", "counter", "\"other\" only: listed peers that joined it (idle, replaced by a new one)" },
};

static const struct {
	const char *name;
	unsigned int bit;
	const char *entry;		/* NULL: the variables are direct */
	const struct var *vars;
	size_t nvars;
} categories[] = {
	{ "node", MG_SM_NODE, NULL, node_vars,
	  sizeof(node_vars) / sizeof(node_vars[0]) },
	{ "probes", MG_SM_PROBES, "probe", probe_vars,
	  sizeof(probe_vars) / sizeof(probe_vars[0]) },
	{ "jobs", MG_SM_JOBS, "job", job_vars,
	  sizeof(job_vars) / sizeof(job_vars[0]) },
	{ "net", MG_SM_NET, "net", net_vars,
	  sizeof(net_vars) / sizeof(net_vars[0]) },
	{ "peers", MG_SM_PEERS, "peer", peer_vars,
	  sizeof(peer_vars) / sizeof(peer_vars[0]) },
};

#define NCATEGORIES	(sizeof(categories) / sizeof(categories[0]))

static void str(FILE *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	fputc('"', out);
	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c > 0x7e || c == '%')
			fprintf(out, "%%%c%c", hex[c >> 4], hex[c & 15]);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void cstr(FILE *out, const char *s)
{
	str(out, s, strlen(s));
}

static void error(FILE *out, const char *msg, const char *word, size_t len)
{
	fputs("(error ", out);
	if (word) {
		char buf[256];
		size_t n = len > ECHO_MAX ? ECHO_MAX : len;

		snprintf(buf, sizeof(buf), "%s '%.*s%s'", msg, (int)n, word,
			 len > ECHO_MAX ? "..." : "");
		cstr(out, buf);
	} else {
		cstr(out, msg);
	}
	fputs(")\n", out);
}

void mg_supermon_client_init(struct mg_supermon_client *c)
{
	c->mask = MG_SM_ALL;
}

static void vars(FILE *out, const struct var *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		fprintf(out, " (%s %s %s ", v[i].name, v[i].type, v[i].kind);
		cstr(out, v[i].source);
		fputc(')', out);
	}
}

static void describe(FILE *out, const struct mg_totals_view *v)
{
	size_t i;

	fputs("(description ", out);
	cstr(out, v->node.node);
	fputs(" (protocol magnet-mon 1) (sample", out);
	vars(out, header_vars, sizeof(header_vars) / sizeof(header_vars[0]));
	fputc(')', out);
	for (i = 0; i < NCATEGORIES; i++) {
		fprintf(out, " (category %s %u", categories[i].name,
			categories[i].bit);
		if (categories[i].entry)
			fprintf(out, " (%s", categories[i].entry);
		vars(out, categories[i].vars, categories[i].nvars);
		if (categories[i].entry)
			fputc(')', out);
		fputc(')', out);
	}
	fputs(")\n", out);
}

static void job(FILE *out, const struct mg_totals_job *j)
{
	char step[24];

	fprintf(out, " (job (cgroup %llu) (path ", (unsigned long long)j->cgroup);
	cstr(out, j->path);
	fprintf(out, ") (events %llu) (sock_bytes %llu)",
		(unsigned long long)j->series.events,
		(unsigned long long)j->series.sock_bytes);
	if (j->is_slurm) {
		fprintf(out, " (slurm_job_id %u)", j->slurm.job);
		if (j->slurm.step != MG_SLURM_NONE) {
			fputs(" (slurm_step ", out);
			cstr(out, mg_slurm_step(&j->slurm, step, sizeof(step)));
			fputc(')', out);
		}
		if (j->slurm.part == MG_SLURM_STEPD)
			fputs(" (slurm_stepd 1)", out);
		if (j->slurm_node[0]) {
			fputs(" (slurm_node ", out);
			cstr(out, j->slurm_node);
			fputc(')', out);
		}
		if (j->has_owner)
			fprintf(out, " (uid %u)", (unsigned int)j->owner);
	}
	fputc(')', out);
}

static void counts(FILE *out, const struct mg_totals_counts *c)
{
	fprintf(out, " (tx_packets %llu) (tx_bytes %llu) (rx_packets %llu) (rx_bytes %llu)",
		(unsigned long long)c->tx_packets, (unsigned long long)c->tx_bytes,
		(unsigned long long)c->rx_packets, (unsigned long long)c->rx_bytes);
}

/* An entry's head: its name, and its job's cgroup and path. */
static void net_head(FILE *out, const char *entry, const struct mg_totals_job *j)
{
	fprintf(out, " (%s (cgroup %llu) (path ", entry, (unsigned long long)j->cgroup);
	cstr(out, j->path);
	fputc(')', out);
}

/* A job's traffic series: per protocol it has counted, or per peer. */
static void net(FILE *out, const struct mg_totals_job *j, bool peers)
{
	char addr[MG_TOTALS_PEER_NAME_MAX];
	size_t i;

	if (!j->has_net)
		return;
	for (i = 0; !peers && i < MG_TOTALS_PROTOS; i++) {
		if (!mg_totals_counts_any(&j->net.proto[i]))
			continue;
		net_head(out, "net", j);
		fprintf(out, " (proto %s)", mg_totals_proto_name(i));
		counts(out, &j->net.proto_series[i]);
		fputc(')', out);
	}
	for (i = 0; peers && i <= j->net.npeers; i++) {
		const struct mg_totals_peer *p = i < j->net.npeers ?
						 &j->net.peers[i] : &j->net.other;

		net_head(out, "peer", j);
		fputs(" (peer ", out);
		cstr(out, mg_totals_peer_name(p, addr, sizeof(addr)));
		fputc(')', out);
		counts(out, &p->series);
		if (p == &j->net.other)
			fprintf(out, " (evictions %llu)",
				(unsigned long long)j->net.evictions_series);
		fputc(')', out);
	}
}

/* The exported jobs' traffic, then "other"'s, as a category. */
static void net_category(FILE *out, const char *name, const struct mg_totals_view *v,
			 bool peers)
{
	size_t i;

	fprintf(out, " (%s", name);
	for (i = 0; i < v->njobs; i++)
		if (v->jobs[i].exported)
			net(out, &v->jobs[i], peers);
	net(out, &v->other, peers);
	fputc(')', out);
}

static void sample(FILE *out, unsigned int mask, const struct mg_totals_view *v)
{
	const struct mg_totals_node *n = &v->node;
	size_t i;

	fputs("(sample ", out);
	cstr(out, n->node);
	fprintf(out, " (time %llu.%09llu)",
		(unsigned long long)(n->now_ns / 1000000000ULL),
		(unsigned long long)(n->now_ns % 1000000000ULL));
	if (mask & MG_SM_NODE)
		fprintf(out, " (node (module %s) (uptime %llu) (cpus %u) (records %llu) (bytes %llu) (kernel_lost %llu) (daemon_dropped %llu) (probes %u) (probe_missed %llu) (jobs %u))",
			n->module_up ? "up" : "down",
			(unsigned long long)(n->uptime_ns / 1000000000ULL),
			n->cpus, (unsigned long long)n->records,
			(unsigned long long)n->bytes,
			(unsigned long long)n->kernel_lost,
			(unsigned long long)n->daemon_dropped, n->probes,
			(unsigned long long)n->probe_missed, n->jobs);
	if (mask & MG_SM_PROBES) {
		fputs(" (probes", out);
		for (i = 0; i < v->nprobes; i++) {
			const struct mg_totals_probe *p = &v->probes[i];

			fprintf(out, " (probe (id %u) (name ", p->id);
			cstr(out, p->name);
			fputs(") (symbol ", out);
			cstr(out, p->symbol);
			fputs(") (type ", out);
			/* A symbol: the table's types are words; quote anything else. */
			if (p->type[0] && strspn(p->type, "abcdefghijklmnopqrstuvwxyz") == strlen(p->type))
				fputs(p->type, out);
			else
				cstr(out, p->type);
			fprintf(out, ") (loaded %d) (events %llu) (sock_bytes %llu) (missed %llu))",
				p->loaded, (unsigned long long)p->events,
				(unsigned long long)p->sock_bytes,
				(unsigned long long)p->missed);
		}
		fputc(')', out);
	}
	if (mask & MG_SM_JOBS) {
		fputs(" (jobs", out);
		for (i = 0; i < v->njobs; i++)
			if (v->jobs[i].exported)
				job(out, &v->jobs[i]);
		job(out, &v->other);
		fputc(')', out);
	}
	if (mask & MG_SM_NET)
		net_category(out, "net", v, false);
	if (mask & MG_SM_PEERS)
		net_category(out, "peers", v, true);
	fputs(")\n", out);
}

/* "M <mask>": decimal or 0x hex, some of the category bits, no others. */
static int set_mask(FILE *out, const char *arg, size_t len,
		    struct mg_supermon_client *c)
{
	char buf[32], *end;
	unsigned long m;

	if (!len || len >= sizeof(buf)) {
		error(out, "M needs a mask: the sum of 1 (node), 2 (probes), 4 (jobs), 8 (net), 16 (peers)",
		      NULL, 0);
		return 0;
	}
	memcpy(buf, arg, len);
	buf[len] = '\0';
	errno = 0;
	/* Decimal, or hex after 0x: a leading 0 is no octal (docs/supermon.md). */
	m = strtoul(buf, &end, buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X') ? 16 : 10);
	if (errno || *end || buf[0] == '-' || buf[0] == '+') {
		error(out, "bad mask", arg, len);
		return 0;
	}
	if (!m || (m & ~(unsigned long)MG_SM_ALL)) {
		error(out, "mask must be 1 to 31: the sum of 1 (node), 2 (probes), 4 (jobs), 8 (net), 16 (peers), not",
		      arg, len);
		return 0;
	}
	c->mask = m;
	fprintf(out, "(mask %u)\n", c->mask);
	return 0;
}

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* The request without the blanks around it. */
static void trim(const char **line, size_t *len)
{
	while (*len && blank(**line)) {
		(*line)++;
		(*len)--;
	}
	while (*len && blank((*line)[*len - 1]))
		(*len)--;
}

bool mg_supermon_wants_view(const char *line, size_t len)
{
	trim(&line, &len);
	return len == 1 && (line[0] == '#' || line[0] == 'S');
}

int mg_supermon_handle(FILE *out, const char *line, size_t len,
		       struct mg_supermon_client *c,
		       const struct mg_totals_view *v)
{
	size_t i;

	trim(&line, &len);
	if (!len)
		return 0;	/* nothing asked, nothing answered */
	for (i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 && line[i] != '\t') {
			error(out, "control character in the request", NULL, 0);
			return 0;
		}
	if (len == 1 && (line[0] == '#' || line[0] == 'S')) {
		if (!v)
			error(out, "out of memory", NULL, 0);
		else if (line[0] == '#')
			describe(out, v);
		else
			sample(out, c->mask, v);
		return 0;
	}
	if (len >= 1 && line[0] == 'M' && (len == 1 || blank(line[1]))) {
		for (i = 1; i < len && blank(line[i]); i++)
			;
		return set_mask(out, line + i, len - i, c);
	}
	if (len == 1 && line[0] == 'Q') {
		fputs("(bye)\n", out);
		return 1;
	}
	error(out, "unknown request: # (describe), S (sample), M <mask>, Q (quit), not",
	      line, len);
	return 0;
}

void mg_supermon_too_long(FILE *out, size_t max)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "request longer than %zu bytes", max);
	error(out, msg, NULL, 0);
}
