// SPDX-License-Identifier: GPL-2.0
/*
 * Prometheus' text exposition format (0.0.4) of magnetd's totals; see
 * prom.h and docs/prometheus.md. Every family is written, with its HELP
 * and TYPE, also when it has no sample, so a scrape always shows what
 * magnet can tell. Counters are the totals themselves: they restart from
 * 0 with the daemon, which Prometheus' rate() reads as a counter reset,
 * and magnet_daemon_start_time_seconds says when.
 *
 * A job's label is "cgroup", its cgroup v2 path: "job" is the label
 * Prometheus itself gives every target (the scrape job), and a sample's
 * own "job" would be renamed exported_job. A Slurm job's series (a step's
 * tasks, or its slurmstepd) also has slurm_job_id, slurm_step, and uid
 * when its user is known (docs/slurm.md); the path keeps series apart.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

/* One label value: \\, \" and \n escaped; bytes that are not UTF-8 as U+FFFD. */
static void label(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned int n = 0, i;

		if (*p == '\\' || *p == '"') {
			fprintf(out, "\\%c", *p++);
			continue;
		}
		if (*p == '\n') {
			fputs("\\n", out);
			p++;
			continue;
		}
		if (*p < 0x80) {
			fputc(*p++, out);
			continue;
		}
		/* A whole, shortest-form sequence, or U+FFFD for its lead byte. */
		if (*p >= 0xc2 && *p <= 0xdf)
			n = 1;
		else if (*p >= 0xe0 && *p <= 0xef)
			n = 2;
		else if (*p >= 0xf0 && *p <= 0xf4)
			n = 3;
		for (i = 1; i <= n; i++)
			if ((p[i] & 0xc0) != 0x80)
				break;
		if (!n || i <= n ||
		    (p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
		    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f)) {
			fputs("\xef\xbf\xbd", out);
			p++;
			continue;
		}
		fwrite(p, 1, n + 1, out);
		p += n + 1;
	}
}

static void family(FILE *out, const char *name, const char *type,
		   const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(FILE *out, const char *name, unsigned long long v)
{
	fprintf(out, "%s %llu\n", name, v);
}

static void probe_sample(FILE *out, const char *name,
			 const struct mg_totals_probe *p, unsigned long long v)
{
	fprintf(out, "%s{probe=\"", name);
	label(out, p->name);
	fprintf(out, "\",symbol=\"");
	label(out, p->symbol);
	fprintf(out, "\",type=\"");
	label(out, p->type);
	fprintf(out, "\",id=\"%u\"} %llu\n", p->id, v);
}

/* A job's labels, after the metric's name and its '{'. */
static void job_labels(FILE *out, const struct mg_totals_job *j)
{
	char step[24];

	fputs("cgroup=\"", out);
	label(out, j->path);
	fputc('"', out);
	if (j->is_slurm) {
		/* Numbers, step names and node names: nothing to escape. */
		fprintf(out, ",slurm_job_id=\"%u\"", j->slurm.job);
		if (j->slurm.step != MG_SLURM_NONE)
			fprintf(out, ",slurm_step=\"%s\"",
				mg_slurm_step(&j->slurm, step, sizeof(step)));
		if (j->slurm.part == MG_SLURM_STEPD)
			fputs(",slurm_stepd=\"1\"", out);
		if (j->slurm_node[0])
			fprintf(out, ",slurm_node=\"%s\"", j->slurm_node);
		if (j->has_owner)
			fprintf(out, ",uid=\"%u\"", (unsigned int)j->owner);
	}
}

static void job_sample(FILE *out, const char *name,
		       const struct mg_totals_job *j, unsigned long long v)
{
	fprintf(out, "%s{", name);
	job_labels(out, j);
	fprintf(out, "} %llu\n", v);
}

/* A job's series with one more label, key="value" (a word: no escape). */
static void job_sample_by(FILE *out, const char *name, const struct mg_totals_job *j,
			  const char *key, const char *value, const char *direction,
			  unsigned long long v)
{
	fprintf(out, "%s{", name);
	job_labels(out, j);
	fprintf(out, ",%s=\"%s\",direction=\"%s\"} %llu\n", key, value, direction, v);
}

/* Job i of the view (njobs: "other"), if it has traffic series; or NULL. */
static const struct mg_totals_job *exported(const struct mg_totals_view *v, size_t i)
{
	const struct mg_totals_job *j = i < v->njobs ? &v->jobs[i] : &v->other;

	return j->exported && j->has_net ? j : NULL;
}

/*
 * A job's traffic: per protocol (those it has counted since first met,
 * both directions), or per peer (every one listed, and "other").
 */
static void net_samples(FILE *out, const struct mg_totals_view *v, bool bytes,
			bool peers)
{
	const char *name = peers ? (bytes ? "magnet_job_peer_bytes_total" :
					    "magnet_job_peer_packets_total") :
				   (bytes ? "magnet_job_net_bytes_total" :
					    "magnet_job_net_packets_total");
	char addr[MG_TOTALS_PEER_NAME_MAX];
	const struct mg_totals_job *j;
	size_t i, k;

	for (i = 0; i <= v->njobs; i++) {
		j = exported(v, i);
		if (!j)
			continue;
		for (k = 0; k <= (peers ? j->net.npeers : MG_TOTALS_PROTOS - 1); k++) {
			const struct mg_totals_peer *p = peers && k < j->net.npeers ?
							 &j->net.peers[k] : &j->net.other;
			const struct mg_totals_counts *c = peers ? &p->series :
							   &j->net.proto_series[k];
			const char *key = peers ? "peer" : "proto";
			const char *value = peers ? mg_totals_peer_name(p, addr, sizeof(addr)) :
						    mg_totals_proto_name(k);

			if (!peers && !mg_totals_counts_any(&j->net.proto[k]))
				continue;
			job_sample_by(out, name, j, key, value, "tx",
				      bytes ? c->tx_bytes : c->tx_packets);
			job_sample_by(out, name, j, key, value, "rx",
				      bytes ? c->rx_bytes : c->rx_packets);
		}
	}
}

/*
 * A job's TCP bytes seen before (sent or received again), beside its tcp
 * series of magnet_job_net_bytes_total: the only protocol with sequence
 * numbers, so no other series is ever nonzero.
 */
static void repeated_samples(FILE *out, const struct mg_totals_view *v)
{
	const char *name = "magnet_job_net_repeated_bytes_total";
	const struct mg_totals_counts *c;
	const struct mg_totals_job *j;
	size_t i;

	for (i = 0; i <= v->njobs; i++) {
		j = exported(v, i);
		if (!j || !mg_totals_counts_any(&j->net.proto[MG_TOTALS_TCP]))
			continue;
		c = &j->net.proto_series[MG_TOTALS_TCP];
		job_sample_by(out, name, j, "proto", "tcp", "tx", c->tx_repeated_bytes);
		job_sample_by(out, name, j, "proto", "tcp", "rx", c->rx_repeated_bytes);
	}
}

int mg_prom_render(FILE *out, const struct mg_totals_view *v)
{
	const struct mg_totals_node *n = &v->node;
	double start = (double)(n->now_ns - n->uptime_ns) / 1e9;
	size_t i;

	const struct {
		const char *name, *type, *help;
		unsigned long long value;
	} totals[] = {
		{ "magnet_up", "gauge",
		  "Whether magnetd reads magnet's rings now (1: the module is loaded).",
		  n->module_up },
		{ "magnet_cpus", "gauge", "CPUs whose rings magnetd reads.", n->cpus },
		{ "magnet_records_total", "counter",
		  "Event records magnetd read from the rings.", n->records },
		{ "magnet_record_bytes_total", "counter",
		  "Bytes of the event records magnetd read.", n->bytes },
		{ "magnet_kernel_lost_records_total", "counter",
		  "Records the kernel reported lost (ring full, too big, nesting, overwritten).",
		  n->kernel_lost },
		{ "magnet_daemon_dropped_records_total", "counter",
		  "Records magnetd read and counted but could not queue for its clients (its queue was full).",
		  n->daemon_dropped },
		{ "magnet_probes", "gauge", "Probes loaded now.", n->probes },
		{ "magnet_jobs", "gauge",
		  "Jobs (cgroups) magnetd counts now, exported or not.", n->jobs },
	};

	for (i = 0; i < sizeof(totals) / sizeof(totals[0]); i++) {
		family(out, totals[i].name, totals[i].type, totals[i].help);
		sample(out, totals[i].name, totals[i].value);
	}
	family(out, "magnet_daemon_start_time_seconds", "gauge",
	       "When magnetd started, in seconds since the epoch; its counters start from 0 then.");
	fprintf(out, "magnet_daemon_start_time_seconds %.3f\n", start);

	family(out, "magnet_probe_events_total", "counter",
	       "Records of each probe (also of probes since removed).");
	for (i = 0; i < v->nprobes; i++)
		probe_sample(out, "magnet_probe_events_total", &v->probes[i],
			     v->probes[i].events);
	family(out, "magnet_probe_missed_total", "counter",
	       "Hits of each loaded probe the kernel skipped, writing no record (a kprobe hit while another kprobe's handler ran on the CPU, one from magnet's own handler, or where RCU is not watching): events no count holds. Since the probe was added.");
	for (i = 0; i < v->nprobes; i++)
		if (v->probes[i].loaded)
			probe_sample(out, "magnet_probe_missed_total", &v->probes[i],
				     v->probes[i].missed);
	family(out, "magnet_probe_sock_bytes_total", "counter",
	       "Bytes in the size argument of each sock-handler probe (for tcp_sendmsg: bytes sent).");
	for (i = 0; i < v->nprobes; i++)
		if (v->probes[i].sock)
			probe_sample(out, "magnet_probe_sock_bytes_total",
				     &v->probes[i], v->probes[i].sock_bytes);

	family(out, "magnet_job_events_total", "counter",
	       "Records of each exported job (the cgroup in the record) since it was last exported, by its cgroup v2 path (cgroup:<id> for a cgroup removed before magnetd saw it; a Slurm step's tasks count as one series, its step's, with slurm_job_id, slurm_step and uid); records of the jobs not exported then (the export_jobs most active are), and of cgroup 0, as cgroup=\"other\".");
	for (i = 0; i < v->njobs; i++)
		if (v->jobs[i].exported)
			job_sample(out, "magnet_job_events_total", &v->jobs[i],
				   v->jobs[i].series.events);
	job_sample(out, "magnet_job_events_total", &v->other, v->other.series.events);
	family(out, "magnet_job_sock_bytes_total", "counter",
	       "Bytes in the size argument of sock-handler records, per job, as magnet_job_events_total.");
	for (i = 0; i < v->njobs; i++)
		if (v->jobs[i].exported)
			job_sample(out, "magnet_job_sock_bytes_total", &v->jobs[i],
				   v->jobs[i].series.sock_bytes);
	job_sample(out, "magnet_job_sock_bytes_total", &v->other,
		   v->other.series.sock_bytes);
	family(out, "magnet_job_intr_events_total", "counter",
	       "Of magnet_job_events_total, records written in interrupt context (the job is the interrupted task's).");
	for (i = 0; i < v->njobs; i++)
		if (v->jobs[i].exported)
			job_sample(out, "magnet_job_intr_events_total", &v->jobs[i],
				   v->jobs[i].series.intr_events);
	job_sample(out, "magnet_job_intr_events_total", &v->other,
		   v->other.series.intr_events);
	family(out, "magnet_job_lost_fair_total", "counter",
	       "Records of each job the kernel's fairness rule dropped (its JOB_LOST records: the job over its share of a filling ring), as magnet_job_events_total; the shared job (interrupt context) as cgroup=\"other\".");
	for (i = 0; i < v->njobs; i++)
		if (v->jobs[i].exported)
			job_sample(out, "magnet_job_lost_fair_total", &v->jobs[i],
				   v->jobs[i].series.lost_fair);
	job_sample(out, "magnet_job_lost_fair_total", &v->other, v->other.series.lost_fair);

	family(out, "magnet_net_unkeyed_records_total", "counter",
	       "skb records whose packet magnetd could not read (no IP header in the capture, or too short): counted in no job's traffic.");
	sample(out, "magnet_net_unkeyed_records_total", n->net_unkeyed);
	family(out, "magnet_net_seq_evictions_total", "counter",
	       "TCP flows whose sequence numbers seen magnetd forgot to make room for others (it keeps the 16384 most recently active): a retransmission of a flow forgotten counts in magnet_job_net_bytes_total again.");
	sample(out, "magnet_net_seq_evictions_total", n->net_seq_evictions);
	family(out, "magnet_job_net_packets_total", "counter",
	       "Packets of each job's sockets (the socket's cgroup, also for packets received in softirq), per protocol (tcp, udp, icmp, icmpv6, other) and direction (tx sent, rx received), as magnet_job_events_total: since exported; packets without a socket, and of jobs not exported, as cgroup=\"other\". Every packet the skb probes see: a TCP segment sent again counts again.");
	net_samples(out, v, false, false);
	family(out, "magnet_job_net_bytes_total", "counter",
	       "Transport payload bytes (TCP or UDP data; the IP payload of other protocols) of those packets, as magnet_job_net_packets_total: each TCP byte once per connection and direction, what the tasks wrote and read; a retransmission's or duplicate's bytes are in magnet_job_net_repeated_bytes_total instead.");
	net_samples(out, v, true, false);
	family(out, "magnet_job_net_repeated_bytes_total", "counter",
	       "TCP payload bytes of each job sent again (retransmissions) or received again (duplicates), per direction, as magnet_job_net_bytes_total{proto=\"tcp\"}, which does not count them: what the wire carried more.");
	repeated_samples(out, v);
	family(out, "magnet_job_peer_packets_total", "counter",
	       "Packets of each job per peer host (the other end's address) and direction: the job's 16 first peers still active, the rest as peer=\"other\" (an idle peer replaced by a new one joins it: magnet_job_peer_evictions_total); a job's peers add up to its magnet_job_net_packets_total.");
	net_samples(out, v, false, true);
	family(out, "magnet_job_peer_bytes_total", "counter",
	       "Transport payload bytes per job, peer host and direction, as magnet_job_peer_packets_total.");
	net_samples(out, v, true, true);
	family(out, "magnet_job_peer_evictions_total", "counter",
	       "Peers of each job whose series ended into peer=\"other\" (an idle peer replaced by a new one, or a task's peer with no place left in its step's list).");
	for (i = 0; i <= v->njobs; i++)
		if (exported(v, i))
			job_sample(out, "magnet_job_peer_evictions_total", exported(v, i),
				   exported(v, i)->net.evictions_series);
	return ferror(out) ? -EIO : 0;
}

static int respond(FILE *out, int code, const char *reason,
		   const char *extra, const char *body, size_t len, bool head)
{
	fprintf(out, "HTTP/1.1 %d %s\r\n", code, reason);
	if (code == 200)
		fputs("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n", out);
	else
		fputs("Content-Type: text/plain; charset=utf-8\r\n", out);
	fprintf(out, "Content-Length: %zu\r\n%sConnection: close\r\n\r\n",
		len, extra ? extra : "");
	if (!head)
		fwrite(body, 1, len, out);
	return ferror(out) ? -EIO : 0;
}

static int respond_text(FILE *out, int code, const char *reason,
			const char *extra, const char *text, bool head)
{
	return respond(out, code, reason, extra, text, strlen(text), head);
}

/* A word of the request line, compared whole. */
struct word {
	const char *s;
	size_t len;
};

static bool word_is(const struct word *w, const char *s)
{
	return w->len == strlen(s) && !memcmp(w->s, s, w->len);
}

/* METHOD TARGET VERSION, split at whitespace; 3 if so, else not. */
static size_t request_words(const char *line, struct word *w)
{
	size_t n = 0;

	for (;;) {
		while (isspace((unsigned char)*line))
			line++;
		if (!*line || n == 3)
			return *line ? 4 : n;
		w[n].s = line;
		while (*line && !isspace((unsigned char)*line))
			line++;
		w[n].len = line - w[n].s;
		n++;
	}
}

int mg_prom_respond(FILE *out, const char *line, const struct mg_totals_view *v)
{
	struct word w[3];
	const char *query;
	char *body = NULL;
	size_t len = 0;
	FILE *page;
	bool head;
	int ret;

	/* Words of any length: a long query is still /metrics. */
	if (request_words(line, w) != 3 || w[2].len < 7 ||
	    memcmp(w[2].s, "HTTP/1.", 7))
		return respond_text(out, 400, "Bad Request", NULL,
				    "magnetd: not an HTTP/1.x request line\n", false);
	head = word_is(&w[0], "HEAD");
	if (!head && !word_is(&w[0], "GET"))
		return respond_text(out, 405, "Method Not Allowed",
				    "Allow: GET, HEAD\r\n",
				    "magnetd: only GET and HEAD\n", false);
	query = memchr(w[1].s, '?', w[1].len);	/* parameters: ignored */
	if (query)
		w[1].len = query - w[1].s;
	if (!word_is(&w[1], "/metrics"))
		return respond_text(out, 404, "Not Found", NULL,
				    "magnetd: the metrics are at /metrics\n", head);

	page = open_memstream(&body, &len);
	if (!page)
		return -ENOMEM;
	ret = mg_prom_render(page, v);
	if (fclose(page) || ret) {
		free(body);
		return respond_text(out, 500, "Internal Server Error", NULL,
				    "magnetd: out of memory\n", head);
	}
	ret = respond(out, 200, "OK", NULL, body, len, head);
	free(body);
	return ret;
}
