// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/prom.c: the exposition of a made-up view, line by line (every
 * family with HELP and TYPE, probes and exported jobs labelled, "other"
 * always there), label escaping (quotes, backslashes, newlines, bytes
 * that are not UTF-8), a Slurm job's series with its labels (job id,
 * step, slurmstepd's, node, uid), the HTTP answers (200 with
 * Content-Length, HEAD, 404, 405, 400), and Debian's promtool accepting
 * the page.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "prom.h"
#include "record.h"
#include "testutil.h"

static struct mg_totals_probe probes[3];
static struct mg_totals_job jobs[6];
static struct mg_totals_peer peers[4];

/* A Slurm job's series as magnetd's server describes it (fanout.c). */
static struct mg_totals_job slurm_job(__u64 cgroup, const char *path,
				      __u64 events, bool has_owner, uid_t owner)
{
	struct mg_totals_job j = { .cgroup = cgroup, .exported = true,
				   .events = events, .series.events = events,
				   .has_owner = has_owner, .owner = owner,
				   .is_slurm = true };

	snprintf(j.path, sizeof(j.path), "%s", path);
	ck_assert(mg_slurm_parse(path, strlen(path), &j.slurm));
	mg_slurm_node(&j.slurm, path, j.slurm_node);
	return j;
}

static struct mg_totals_view view(void)
{
	struct mg_totals_view v = { 0 };

	memset(probes, 0, sizeof(probes));
	memset(jobs, 0, sizeof(jobs));
	v.node.now_ns = 1700000000500000000ULL;
	v.node.uptime_ns = 500000000ULL;
	v.node.module_up = true;
	v.node.cpus = 2;
	v.node.records = 1234;
	v.node.bytes = 56789;
	v.node.kernel_lost = 7;
	v.node.daemon_dropped = 3;
	v.node.probes = 2;
	v.node.jobs = 3;
	probes[0] = (struct mg_totals_probe){ .id = 16, .type = "kprobe",
		.name = "__x64_sys_getppid", .symbol = "__x64_sys_getppid",
		.loaded = true, .events = 1000, .missed = 9 };
	probes[1] = (struct mg_totals_probe){ .id = 17, .type = "kprobe",
		.name = "tx", .symbol = "tcp_sendmsg", .loaded = true, .sock = true,
		.events = 20, .sock_bytes = 100000 };
	probes[2] = (struct mg_totals_probe){ .id = 18, .type = "unknown",
		.name = "event18", .events = 5 };
	v.probes = probes;
	v.nprobes = 3;
	jobs[0] = (struct mg_totals_job){ .cgroup = 100, .path = "/a",
		.exported = true, .events = 1000, .sock_bytes = 100000,
		.series = { .events = 1000, .sock_bytes = 100000 } };
	jobs[1] = (struct mg_totals_job){ .cgroup = 101,
		.path = "/odd \"job\"\\x\n\xff\xc3\xa9", .exported = true,
		.events = 40, .series.events = 30 };	/* 10 before its entry */
	jobs[2] = (struct mg_totals_job){ .cgroup = 102, .path = "/late",
		.events = 9 };
	jobs[3] = slurm_job(103, "/system.slice/slurmstepd.scope/job_42/step_0", 77,
			    true, 1000);
	jobs[4] = slurm_job(104, "/system.slice/n1_slurmstepd.scope/job_42/step_batch/slurm",
			    5, true, 1000);
	jobs[5] = slurm_job(105, "/system.slice/slurmstepd.scope/job_43", 2, false, 0);
	/* /a's traffic: since met (n) and in its series alike; /late's not shown. */
	jobs[0].has_net = true;
	jobs[0].net.proto[MG_TOTALS_TCP] = (struct mg_totals_counts){ 70, 100000, 40, 1007, 2896, 1448 };
	jobs[0].net.proto_series[MG_TOTALS_TCP] = jobs[0].net.proto[MG_TOTALS_TCP];
	jobs[0].net.proto[MG_TOTALS_UDP] = (struct mg_totals_counts){ 5, 1500, 0, 0, 0, 0 };
	jobs[0].net.proto_series[MG_TOTALS_UDP] = jobs[0].net.proto[MG_TOTALS_UDP];
	memset(peers, 0, sizeof(peers));
	peers[0] = (struct mg_totals_peer){ .family = AF_INET, .addr = { 10, 0, 0, 2 },
		.n = { 70, 100000, 40, 1007 } };
	peers[1] = (struct mg_totals_peer){ .family = AF_INET6,
		.addr = { 0xfe, 0x80, [15] = 1 }, .n = { 4, 1200, 0, 0 } };
	peers[0].series = peers[0].n;
	peers[1].series = peers[1].n;
	jobs[0].net.peers = peers;
	jobs[0].net.npeers = 2;
	jobs[0].net.other.n = (struct mg_totals_counts){ 1, 300, 0, 0, 0, 0 };
	jobs[0].net.other.series = jobs[0].net.other.n;
	jobs[0].net.evictions = jobs[0].net.evictions_series = 3;
	jobs[2].has_net = true;
	jobs[2].net.proto[MG_TOTALS_TCP] = (struct mg_totals_counts){ 1, 1, 1, 1, 0, 0 };
	jobs[2].net.peers = &peers[2];
	jobs[2].net.npeers = 1;
	peers[2] = (struct mg_totals_peer){ .family = AF_INET, .addr = { 10, 9, 9, 9 },
		.n = { 1, 1, 1, 1 } };
	v.jobs = jobs;
	v.njobs = 6;
	v.other = (struct mg_totals_job){ .path = "other", .exported = true,
		.events = 12, .sock_bytes = 40,
		.series = { .events = 12, .sock_bytes = 40 }, .has_net = true };
	v.other.net.proto[MG_TOTALS_ICMP] = (struct mg_totals_counts){ 0, 0, 2, 112, 0, 0 };
	v.other.net.proto_series[MG_TOTALS_ICMP] = v.other.net.proto[MG_TOTALS_ICMP];
	v.other.net.other.n = v.other.net.proto[MG_TOTALS_ICMP];
	v.other.net.other.series = v.other.net.other.n;
	v.node.net_unkeyed = 4;
	v.node.net_seq_evictions = 6;
	return v;
}

static char *render(const struct mg_totals_view *v, int (*fn)(FILE *,
		    const char *, const struct mg_totals_view *), const char *line)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	if (fn)
		ck_assert_int_eq(fn(f, line, v), 0);
	else
		ck_assert_int_eq(mg_prom_render(f, v), 0);
	fclose(f);
	return buf;
}

static void has_line(const char *page, const char *line)
{
	const char *p = page;
	size_t n = strlen(line);

	while ((p = strstr(p, line))) {
		if ((p == page || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return;
		p++;
	}
	ck_abort_msg("no line '%s' in:\n%s", line, page);
}

START_TEST(page)
{
	struct mg_totals_view v = view();
	char *p = render(&v, NULL, NULL);

	has_line(p, "# HELP magnet_up Whether magnetd reads magnet's rings now (1: the module is loaded).");
	has_line(p, "# TYPE magnet_up gauge");
	has_line(p, "magnet_up 1");
	has_line(p, "magnet_daemon_start_time_seconds 1700000000.000");
	has_line(p, "# TYPE magnet_records_total counter");
	has_line(p, "magnet_records_total 1234");
	has_line(p, "magnet_record_bytes_total 56789");
	has_line(p, "magnet_kernel_lost_records_total 7");
	has_line(p, "magnet_daemon_dropped_records_total 3");
	has_line(p, "magnet_probes 2");
	has_line(p, "magnet_jobs 3");
	has_line(p, "magnet_probe_events_total{probe=\"__x64_sys_getppid\",symbol=\"__x64_sys_getppid\",type=\"kprobe\",id=\"16\"} 1000");
	has_line(p, "magnet_probe_events_total{probe=\"event18\",symbol=\"\",type=\"unknown\",id=\"18\"} 5");
	has_line(p, "magnet_probe_sock_bytes_total{probe=\"tx\",symbol=\"tcp_sendmsg\",type=\"kprobe\",id=\"17\"} 100000");
	has_line(p, "magnet_probe_missed_total{probe=\"__x64_sys_getppid\",symbol=\"__x64_sys_getppid\",type=\"kprobe\",id=\"16\"} 9");
	has_line(p, "magnet_probe_missed_total{probe=\"tx\",symbol=\"tcp_sendmsg\",type=\"kprobe\",id=\"17\"} 0");
	/* A probe removed has no count of its misses left. */
	ck_assert_ptr_null(strstr(p, "magnet_probe_missed_total{probe=\"event18\""));
	/* Only sock probes have sock bytes. */
	ck_assert_ptr_null(strstr(p, "magnet_probe_sock_bytes_total{probe=\"__x64"));
	has_line(p, "magnet_job_events_total{cgroup=\"/a\"} 1000");
	has_line(p, "magnet_job_events_total{cgroup=\"/odd \\\"job\\\"\\\\x\\n\xef\xbf\xbd\xc3\xa9\"} 30");
	/* Not exported: only in "other". */
	ck_assert_ptr_null(strstr(p, "/late"));
	has_line(p, "magnet_job_events_total{cgroup=\"other\"} 12");
	has_line(p, "magnet_job_sock_bytes_total{cgroup=\"/a\"} 100000");
	has_line(p, "magnet_job_sock_bytes_total{cgroup=\"other\"} 40");
	/* Slurm's: a step's tasks, a slurmstepd on a named node, a job's own. */
	has_line(p, "magnet_job_events_total{cgroup=\"/system.slice/slurmstepd.scope/job_42/step_0\",slurm_job_id=\"42\",slurm_step=\"0\",uid=\"1000\"} 77");
	has_line(p, "magnet_job_events_total{cgroup=\"/system.slice/n1_slurmstepd.scope/job_42/step_batch/slurm\",slurm_job_id=\"42\",slurm_step=\"batch\",slurm_stepd=\"1\",slurm_node=\"n1\",uid=\"1000\"} 5");
	has_line(p, "magnet_job_events_total{cgroup=\"/system.slice/slurmstepd.scope/job_43\",slurm_job_id=\"43\"} 2");
	has_line(p, "magnet_job_sock_bytes_total{cgroup=\"/system.slice/slurmstepd.scope/job_42/step_0\",slurm_job_id=\"42\",slurm_step=\"0\",uid=\"1000\"} 0");
	/* Traffic: per protocol counted, per peer listed, and "other". */
	has_line(p, "magnet_net_unkeyed_records_total 4");
	has_line(p, "# TYPE magnet_job_net_bytes_total counter");
	has_line(p, "magnet_job_net_bytes_total{cgroup=\"/a\",proto=\"tcp\",direction=\"tx\"} 100000");
	has_line(p, "magnet_job_net_bytes_total{cgroup=\"/a\",proto=\"tcp\",direction=\"rx\"} 1007");
	has_line(p, "magnet_job_net_packets_total{cgroup=\"/a\",proto=\"tcp\",direction=\"tx\"} 70");
	has_line(p, "magnet_job_net_bytes_total{cgroup=\"/a\",proto=\"udp\",direction=\"rx\"} 0");
	ck_assert_ptr_null(strstr(p, "cgroup=\"/a\",proto=\"icmp\""));
	/* TCP's bytes seen again, apart: tcp only, as its bytes' series. */
	has_line(p, "# TYPE magnet_job_net_repeated_bytes_total counter");
	has_line(p, "magnet_job_net_repeated_bytes_total{cgroup=\"/a\",proto=\"tcp\",direction=\"tx\"} 2896");
	has_line(p, "magnet_job_net_repeated_bytes_total{cgroup=\"/a\",proto=\"tcp\",direction=\"rx\"} 1448");
	ck_assert_ptr_null(strstr(p, "magnet_job_net_repeated_bytes_total{cgroup=\"/a\",proto=\"udp\""));
	ck_assert_ptr_null(strstr(p, "magnet_job_net_repeated_bytes_total{cgroup=\"other\""));
	has_line(p, "magnet_net_seq_evictions_total 6");
	has_line(p, "magnet_job_net_packets_total{cgroup=\"other\",proto=\"icmp\",direction=\"rx\"} 2");
	has_line(p, "magnet_job_peer_bytes_total{cgroup=\"/a\",peer=\"10.0.0.2\",direction=\"tx\"} 100000");
	has_line(p, "magnet_job_peer_packets_total{cgroup=\"/a\",peer=\"fe80::1\",direction=\"tx\"} 4");
	has_line(p, "magnet_job_peer_bytes_total{cgroup=\"/a\",peer=\"other\",direction=\"tx\"} 300");
	has_line(p, "magnet_job_peer_bytes_total{cgroup=\"other\",peer=\"other\",direction=\"rx\"} 112");
	has_line(p, "magnet_job_peer_evictions_total{cgroup=\"/a\"} 3");
	ck_assert_ptr_null(strstr(p, "10.9.9.9"));
	/* A Slurm job's traffic has its labels, then the protocol's. */
	jobs[3].has_net = true;
	jobs[3].net.proto[MG_TOTALS_UDP] = (struct mg_totals_counts){ 3, 30, 0, 0, 0, 0 };
	jobs[3].net.proto_series[MG_TOTALS_UDP] = jobs[3].net.proto[MG_TOTALS_UDP];
	free(p);
	p = render(&v, NULL, NULL);
	has_line(p, "magnet_job_net_bytes_total{cgroup=\"/system.slice/slurmstepd.scope/job_42/step_0\",slurm_job_id=\"42\",slurm_step=\"0\",uid=\"1000\",proto=\"udp\",direction=\"tx\"} 30");
	/* The uid is a Slurm job's only: other jobs keep their one label. */
	jobs[0].has_owner = true;
	free(p);
	p = render(&v, NULL, NULL);
	has_line(p, "magnet_job_events_total{cgroup=\"/a\"} 1000");
	free(p);

	/* Empty tables: the families are still there, "other" too. */
	v.nprobes = v.njobs = 0;
	v.node.module_up = false;
	p = render(&v, NULL, NULL);
	has_line(p, "magnet_up 0");
	has_line(p, "# TYPE magnet_probe_events_total counter");
	has_line(p, "magnet_job_events_total{cgroup=\"other\"} 12");
	free(p);
}
END_TEST

/* The sum of the samples of lines that start with prefix; their count in *n. */
static unsigned long long sum_of(const char *page, const char *prefix, size_t *n)
{
	unsigned long long sum = 0;
	const char *p = page;

	*n = 0;
	while ((p = strstr(p, prefix))) {
		if (p == page || p[-1] == '\n') {
			sum += strtoull(strchr(p, '}') + 2, NULL, 10);
			(*n)++;
		}
		p++;
	}
	return sum;
}

/*
 * A hostile flood through the real totals: 40 jobs, each sending to 3,000
 * new hosts and to 2 real ones. The page has at most export_jobs + 1
 * jobs' series, each at most 17 peers (16 and "other") a direction, and
 * each job's peers add up to its protocols, exactly.
 */
START_TEST(flood_bounded)
{
	static unsigned char rec[MAGNET_RECORD_MAX];
	struct mg_totals *t;
	struct mg_totals_view v;
	unsigned int job, k;
	size_t i, n, jobs_shown = 0;
	char *p, dst[32], prefix[512];

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	for (job = 1; job <= 40; job++)
		for (k = 0; k < 3000; k++) {
			struct tu_packet pk = { .family = AF_INET, .proto = IPPROTO_UDP,
				.src = "10.0.0.1", .dst = dst, .sport = 1000, .dport = 53,
				.payload = 10, .out = true, .cgroup = job, .sk_cgroup = job };

			snprintf(dst, sizeof(dst), "10.%u.%u.%u", job, k >> 8, k & 255);
			if (k % 10 == 0)
				snprintf(dst, sizeof(dst), "10.200.0.%u", k % 20 ? 1 : 2);
			ck_assert_int_gt(tu_skb_record(rec, sizeof(rec), &pk), 0);
			mg_totals_add(t, (const void *)rec);
		}
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	for (i = 0; i < v.njobs; i++)
		snprintf(v.jobs[i].path, sizeof(v.jobs[i].path), "/j%llu",
			 (unsigned long long)v.jobs[i].cgroup);
	p = render(&v, NULL, NULL);
	sum_of(p, "magnet_job_peer_bytes_total{", &n);
	ck_assert_uint_le(n, 21 * 17 * 2);
	for (i = 0; i <= v.njobs; i++) {
		const struct mg_totals_job *j = i < v.njobs ? &v.jobs[i] : &v.other;
		unsigned long long net, peers;
		size_t m;

		if (!j->exported)
			continue;
		jobs_shown++;
		snprintf(prefix, sizeof(prefix), "magnet_job_peer_bytes_total{cgroup=\"%s\",", j->path);
		peers = sum_of(p, prefix, &m);
		ck_assert_uint_le(m, 17 * 2);
		snprintf(prefix, sizeof(prefix), "magnet_job_net_bytes_total{cgroup=\"%s\",", j->path);
		net = sum_of(p, prefix, &n);
		ck_assert_uint_eq(peers, net);
		ck_assert_uint_gt(net, 0);
	}
	ck_assert_uint_eq(jobs_shown, 21);
	free(p);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

#define LONG_QUERY "0123456789012345678901234567890123456789012345678901234567890123" \
	"0123456789012345678901234567890123456789012345678901234567890123" \
	"0123456789012345678901234567890123456789012345678901234567890123" \
	"0123456789012345678901234567890123456789012345678901234567890123"

START_TEST(http)
{
	struct mg_totals_view v = view();
	char *r, *body;
	size_t len;

	r = render(&v, mg_prom_respond, "GET /metrics HTTP/1.1");
	ck_assert_msg(!strncmp(r, "HTTP/1.1 200 OK\r\n", 17), "%s", r);
	ck_assert_ptr_nonnull(strstr(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	ck_assert_ptr_nonnull(strstr(r, "\r\nConnection: close\r\n"));
	body = strstr(r, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	body += 4;
	ck_assert_int_eq(sscanf(strstr(r, "Content-Length: "), "Content-Length: %zu", &len), 1);
	ck_assert_uint_eq(len, strlen(body));
	ck_assert(!strncmp(body, "# HELP magnet_up ", 17));
	free(r);

	r = render(&v, mg_prom_respond, "GET /metrics?x=1 HTTP/1.0");
	ck_assert(!strncmp(r, "HTTP/1.1 200 OK\r\n", 17));
	free(r);
	r = render(&v, mg_prom_respond, "HEAD /metrics HTTP/1.1");
	ck_assert(!strncmp(r, "HTTP/1.1 200 OK\r\n", 17));
	ck_assert_str_eq(strstr(r, "\r\n\r\n"), "\r\n\r\n");	/* no body */
	free(r);
	r = render(&v, mg_prom_respond, "GET / HTTP/1.1");
	ck_assert_msg(!strncmp(r, "HTTP/1.1 404 Not Found\r\n", 24), "%s", r);
	ck_assert_ptr_nonnull(strstr(r, "/metrics"));
	free(r);
	r = render(&v, mg_prom_respond, "POST /metrics HTTP/1.1");
	ck_assert(!strncmp(r, "HTTP/1.1 405 Method Not Allowed\r\n", 33));
	ck_assert_ptr_nonnull(strstr(r, "\r\nAllow: GET, HEAD\r\n"));
	free(r);
	r = render(&v, mg_prom_respond, "hello");
	ck_assert(!strncmp(r, "HTTP/1.1 400 Bad Request\r\n", 26));
	free(r);
	r = render(&v, mg_prom_respond, "GET /metrics SPDY/3 x");
	ck_assert(!strncmp(r, "HTTP/1.1 400 Bad Request\r\n", 26));
	free(r);
	/* Two words are no request, however long the first (it was cut at 15
	 * bytes, its rest taken as the path: 405). */
	r = render(&v, mg_prom_respond, "AAAAAAAAAAAAAAAX HTTP/1.1");
	ck_assert(!strncmp(r, "HTTP/1.1 400 Bad Request\r\n", 26));
	free(r);
	/* A long query is still /metrics (the path was cut at 255 bytes). */
	r = render(&v, mg_prom_respond, "GET /metrics?x=" LONG_QUERY " HTTP/1.1");
	ck_assert(!strncmp(r, "HTTP/1.1 200 OK\r\n", 17));
	free(r);
	r = render(&v, mg_prom_respond, "GETGETGETGETGETGETGET /metrics HTTP/1.1");
	ck_assert(!strncmp(r, "HTTP/1.1 405 Method Not Allowed\r\n", 33));
	free(r);
}
END_TEST

/* Debian's promtool (tools/bootstrap installs it) parses the page. */
START_TEST(promtool)
{
	struct mg_totals_view v = view();
	char *p = render(&v, NULL, NULL), path[64], cmd[256];
	int fd, st;

	if (access("/usr/bin/promtool", X_OK)) {
		fprintf(stderr, "test_prom: promtool not installed: not checked (run tools/bootstrap)\n");
		free(p);
		return;
	}
	fd = tu_tmpfile(path);
	ck_assert_int_eq(write(fd, p, strlen(p)), (ssize_t)strlen(p));
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	st = system(cmd);
	unlink(path);
	ck_assert_msg(st == 0, "promtool check metrics refused the page:\n%s", p);
	free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prom");
	TCase *tc = tcase_create("prom");

	tcase_add_test(tc, page);
	tcase_add_test(tc, http);
	tcase_add_test(tc, flood_bounded);
	tcase_add_test(tc, promtool);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
