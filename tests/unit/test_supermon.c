// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/supermon.c: every reply parsed by sfsexp (Debian's libsexp, the
 * parser that came out of Supermon): the description's categories, bits
 * and variables; samples with their values, whole and under each mask;
 * only exported jobs and "other"; a Slurm job's series with its job id,
 * step, slurmstepd's mark, node and uid; strings with quotes, backslashes,
 * control and non-ASCII bytes arriving intact (as %XX where the grammar
 * says); malformed requests answered with an error that changes nothing;
 * Q closes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sfsexp/sexp.h>

#include "supermon.h"
#include "testutil.h"

static struct mg_totals_probe probes[2];
static struct mg_totals_job jobs[5];
static struct mg_totals_peer peers[2];
static struct mg_totals_view v;

static void setup(void)
{
	memset(&v, 0, sizeof(v));
	strcpy(v.node.node, "node-1");
	v.node.now_ns = 1700000000123456789ULL;
	v.node.uptime_ns = 42000000000ULL;
	v.node.module_up = true;
	v.node.cpus = 2;
	v.node.records = 1300;
	v.node.bytes = 52000;
	v.node.kernel_lost = 4;
	v.node.daemon_dropped = 1;
	v.node.probes = 2;
	v.node.probe_missed = 6;
	v.node.jobs = 3;
	probes[0] = (struct mg_totals_probe){ .id = 16, .type = "kprobe",
		.name = "__x64_sys_getppid", .symbol = "__x64_sys_getppid",
		.loaded = true, .events = 1000, .missed = 6 };
	probes[1] = (struct mg_totals_probe){ .id = 17, .type = "kprobe",
		.name = "tx", .symbol = "tcp_sendmsg", .loaded = true, .sock = true,
		.events = 3, .sock_bytes = 4096 };
	v.probes = probes;
	v.nprobes = 2;
	jobs[0] = (struct mg_totals_job){ .cgroup = 100, .path = "/a",
		.exported = true, .events = 1000, .sock_bytes = 4096,
		.series = { .events = 1000, .sock_bytes = 4096 } };
	jobs[1] = (struct mg_totals_job){ .cgroup = 101,
		.path = "/we \"ird\"\\\n\xff%", .exported = true, .events = 200,
		.series.events = 200 };
	jobs[2] = (struct mg_totals_job){ .cgroup = 102, .path = "/late",
		.events = 50 };
	/* /a's traffic: 10 TCP segments before it was exported, not in its series. */
	jobs[0].has_net = true;
	jobs[0].net.proto[MG_TOTALS_TCP] = (struct mg_totals_counts){ 80, 70000, 40, 1000, 0, 0 };
	jobs[0].net.proto_series[MG_TOTALS_TCP] = (struct mg_totals_counts){ 70, 60000, 40, 1000, 0, 0 };
	peers[0] = (struct mg_totals_peer){ .family = AF_INET, .addr = { 10, 0, 0, 2 },
		.n = { 80, 70000, 30, 900 }, .series = { 70, 60000, 30, 900 } };
	jobs[0].net.peers = peers;
	jobs[0].net.npeers = 1;
	jobs[0].net.other.n = jobs[0].net.other.series =
		(struct mg_totals_counts){ 0, 0, 10, 100, 0, 0 };
	jobs[0].net.evictions = jobs[0].net.evictions_series = 2;
	jobs[2].has_net = true;		/* not exported: not shown */
	jobs[2].net.proto[MG_TOTALS_UDP] = (struct mg_totals_counts){ 1, 1, 0, 0, 0, 0 };
	v.jobs = jobs;
	v.njobs = 3;
	v.other = (struct mg_totals_job){ .path = "other", .exported = true,
		.events = 100, .series.events = 100 };
}

/* The reply to one request: one line, parsed by sfsexp. */
static sexp_t *ask(struct mg_supermon_client *c, const char *req, int *rc,
		   char **text)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	sexp_t *e;

	ck_assert_ptr_nonnull(f);
	*rc = mg_supermon_handle(f, req, strlen(req), c, &v);
	fclose(f);
	ck_assert_msg(len && buf[len - 1] == '\n' && !memchr(buf, '\n', len - 1),
		      "not one line: '%s'", buf);
	e = parse_sexp(buf, len);
	ck_assert_msg(e && e->ty == SEXP_LIST, "sfsexp cannot parse '%s'", buf);
	*text = buf;
	return e;
}

static const char *head(const sexp_t *e)
{
	return e->list && e->list->ty == SEXP_VALUE ? e->list->val : "";
}

/* The list (NAME ...) among e's elements, from the n-th on. */
static const sexp_t *find(const sexp_t *e, const char *name)
{
	const sexp_t *x;

	for (x = e->list; x; x = x->next)
		if (x->ty == SEXP_LIST && !strcmp(head(x), name))
			return x;
	return NULL;
}

/* The value of (NAME VALUE) in e. */
static const char *val(const sexp_t *e, const char *name)
{
	const sexp_t *x = find(e, name);

	ck_assert_msg(x && x->list->next && x->list->next->ty == SEXP_VALUE,
		      "no (%s value)", name);
	return x->list->next->val;
}

START_TEST(description)
{
	struct mg_supermon_client c;
	const sexp_t *x, *cat;
	unsigned int bits = 0, n = 0;
	char *text;
	sexp_t *e;
	int rc;

	mg_supermon_client_init(&c);
	e = ask(&c, "#", &rc, &text);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(head(e), "description");
	ck_assert_str_eq(e->list->next->val, "node-1");
	ck_assert_int_eq(e->list->next->aty, SEXP_DQUOTE);
	for (x = e->list; x; x = x->next) {
		const sexp_t *var;

		if (x->ty != SEXP_LIST || strcmp(head(x), "category"))
			continue;
		cat = x->list->next;
		bits |= atoi(cat->next->val);
		n++;
		/* node: variables; the others: an entry's variables. */
		var = cat->next->next;
		if (strcmp(cat->val, "node")) {
			ck_assert_str_eq(head(var), !strcmp(cat->val, "probes") ? "probe" :
					 !strcmp(cat->val, "jobs") ? "job" :
					 !strcmp(cat->val, "net") ? "net" : "peer");
			var = var->list->next;
		}
		for (; var; var = var->next) {
			const sexp_t *f = var->list;

			/* (name type kind "source") */
			ck_assert_ptr_nonnull(f->next);
			ck_assert_ptr_nonnull(f->next->next);
			ck_assert_ptr_nonnull(f->next->next->next);
			ck_assert_int_eq(f->next->next->next->aty, SEXP_DQUOTE);
			ck_assert_ptr_null(f->next->next->next->next);
		}
	}
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(bits, 31);
	x = find(e, "category");
	ck_assert_str_eq(x->list->next->val, "node");
	ck_assert_str_eq(x->list->next->next->val, "1");
	ck_assert_ptr_nonnull(strstr(text, "(records u64 counter \""));
	ck_assert_ptr_nonnull(strstr(text, "(category probes 2 (probe (id u32 label"));
	ck_assert_ptr_nonnull(strstr(text, "(category jobs 4 (job (cgroup u64 label"));
	ck_assert_ptr_nonnull(strstr(text, "(category net 8 (net (cgroup u64 label"));
	ck_assert_ptr_nonnull(strstr(text, "(category peers 16 (peer (cgroup u64 label"));
	destroy_sexp(e);
	free(text);
}
END_TEST

START_TEST(sample_whole_and_masked)
{
	struct mg_supermon_client c;
	const sexp_t *node, *pr, *jb, *x;
	char *text;
	sexp_t *e;
	int rc, n;

	mg_supermon_client_init(&c);
	e = ask(&c, "S", &rc, &text);
	ck_assert_str_eq(head(e), "sample");
	ck_assert_str_eq(e->list->next->val, "node-1");	/* names its node */
	ck_assert_str_eq(val(e, "time"), "1700000000.123456789");
	node = find(e, "node");
	ck_assert_str_eq(val(node, "module"), "up");
	ck_assert_str_eq(val(node, "uptime"), "42");
	ck_assert_str_eq(val(node, "records"), "1300");
	ck_assert_str_eq(val(node, "bytes"), "52000");
	ck_assert_str_eq(val(node, "kernel_lost"), "4");
	ck_assert_str_eq(val(node, "daemon_dropped"), "1");
	ck_assert_str_eq(val(node, "probes"), "2");
	ck_assert_str_eq(val(node, "probe_missed"), "6");
	pr = find(e, "probes");
	x = pr->list->next;
	ck_assert_str_eq(val(x, "name"), "__x64_sys_getppid");
	ck_assert_str_eq(val(x, "events"), "1000");
	ck_assert_str_eq(val(x, "symbol"), "__x64_sys_getppid");
	ck_assert_str_eq(val(x, "missed"), "6");
	ck_assert_str_eq(val(x->next, "missed"), "0");
	ck_assert_str_eq(val(x->next, "name"), "tx");
	ck_assert_str_eq(val(x->next, "symbol"), "tcp_sendmsg");
	ck_assert_str_eq(val(x->next, "sock_bytes"), "4096");
	jb = find(e, "jobs");
	for (n = 0, x = jb->list->next; x; x = x->next, n++)
		;
	ck_assert_int_eq(n, 3);		/* /a, the odd one, other: not /late */
	x = jb->list->next;
	ck_assert_str_eq(val(x, "path"), "/a");
	ck_assert_str_eq(val(x, "events"), "1000");
	ck_assert_str_eq(val(x->next, "path"), "/we \"ird\"\\%0A%FF%25");
	ck_assert_str_eq(val(x->next->next, "path"), "other");
	ck_assert_str_eq(val(x->next->next, "events"), "100");
	ck_assert_ptr_null(strstr(text, "/late"));
	/* Traffic: /a's series per protocol it has, per peer, then other. */
	x = find(e, "net")->list->next;
	ck_assert_str_eq(head(x), "net");
	ck_assert_str_eq(val(x, "path"), "/a");
	ck_assert_str_eq(val(x, "proto"), "tcp");
	ck_assert_str_eq(val(x, "tx_packets"), "70");
	ck_assert_str_eq(val(x, "tx_bytes"), "60000");
	ck_assert_str_eq(val(x, "rx_bytes"), "1000");
	ck_assert_ptr_null(x->next);	/* no other protocol, no other job */
	x = find(e, "peers")->list->next;
	ck_assert_str_eq(head(x), "peer");
	ck_assert_str_eq(val(x, "cgroup"), "100");
	ck_assert_str_eq(val(x, "peer"), "10.0.0.2");
	ck_assert_int_eq(find(x, "peer")->list->next->aty, SEXP_DQUOTE);
	ck_assert_str_eq(val(x, "tx_bytes"), "60000");
	ck_assert_ptr_null(find(x, "evictions"));
	x = x->next;
	ck_assert_str_eq(val(x, "peer"), "other");
	ck_assert_str_eq(val(x, "rx_bytes"), "100");
	ck_assert_str_eq(val(x, "evictions"), "2");
	ck_assert_ptr_null(x->next);
	destroy_sexp(e);
	free(text);

	/* A mask: only those categories, until changed. */
	e = ask(&c, "M 0x5", &rc, &text);
	ck_assert_str_eq(text, "(mask 5)\n");
	destroy_sexp(e);
	free(text);
	e = ask(&c, "S", &rc, &text);
	ck_assert_ptr_nonnull(find(e, "node"));
	ck_assert_ptr_null(find(e, "probes"));
	ck_assert_ptr_nonnull(find(e, "jobs"));
	ck_assert_str_eq(e->list->next->val, "node-1");
	destroy_sexp(e);
	free(text);
	e = ask(&c, "  M 2 ", &rc, &text);
	destroy_sexp(e);
	free(text);
	e = ask(&c, "S", &rc, &text);
	ck_assert_ptr_null(find(e, "node"));
	ck_assert_ptr_nonnull(find(e, "probes"));
	ck_assert_ptr_null(find(e, "jobs"));
	destroy_sexp(e);
	free(text);
	e = ask(&c, "M 24", &rc, &text);
	destroy_sexp(e);
	free(text);
	e = ask(&c, "S", &rc, &text);
	ck_assert_ptr_null(find(e, "jobs"));
	ck_assert_ptr_nonnull(find(e, "net"));
	ck_assert_ptr_nonnull(find(e, "peers"));
	destroy_sexp(e);
	free(text);
}
END_TEST

/* A Slurm job's series as magnetd's server describes it (fanout.c). */
static void slurm_job(struct mg_totals_job *j, __u64 cgroup, const char *path,
		      __u64 events, bool has_owner, uid_t owner)
{
	*j = (struct mg_totals_job){ .cgroup = cgroup, .exported = true,
				     .events = events, .series.events = events,
				     .has_owner = has_owner, .owner = owner,
				     .is_slurm = true };
	snprintf(j->path, sizeof(j->path), "%s", path);
	ck_assert(mg_slurm_parse(path, strlen(path), &j->slurm));
	mg_slurm_node(&j->slurm, path, j->slurm_node);
}

START_TEST(slurm_jobs)
{
	struct mg_supermon_client c;
	const sexp_t *jb, *x;
	char *text;
	sexp_t *e;
	int rc;

	slurm_job(&jobs[3], 103, "/system.slice/slurmstepd.scope/job_42/step_0", 77,
		  true, 1000);
	slurm_job(&jobs[4], 104, "/system.slice/n1_slurmstepd.scope/job_42/step_3+1/slurm",
		  5, false, 0);
	v.njobs = 5;
	mg_supermon_client_init(&c);
	e = ask(&c, "#", &rc, &text);
	ck_assert_ptr_nonnull(strstr(text, " (slurm_job_id u32 label \""));
	ck_assert_ptr_nonnull(strstr(text, " (uid u32 label \""));
	destroy_sexp(e);
	free(text);

	e = ask(&c, "S", &rc, &text);
	jb = find(e, "jobs");
	x = jb->list->next;
	ck_assert_str_eq(val(x, "path"), "/a");
	ck_assert_ptr_null(find(x, "slurm_job_id"));	/* not Slurm's: as it was */
	ck_assert_ptr_null(find(x, "uid"));
	x = x->next->next;
	ck_assert_str_eq(val(x, "path"), "/system.slice/slurmstepd.scope/job_42/step_0");
	ck_assert_str_eq(val(x, "events"), "77");
	ck_assert_str_eq(val(x, "slurm_job_id"), "42");
	ck_assert_str_eq(val(x, "slurm_step"), "0");
	ck_assert_int_eq(find(x, "slurm_step")->list->next->aty, SEXP_DQUOTE);
	ck_assert_str_eq(val(x, "uid"), "1000");
	ck_assert_ptr_null(find(x, "slurm_stepd"));
	ck_assert_ptr_null(find(x, "slurm_node"));
	x = x->next;
	ck_assert_str_eq(val(x, "slurm_step"), "3+1");
	ck_assert_str_eq(val(x, "slurm_stepd"), "1");
	ck_assert_str_eq(val(x, "slurm_node"), "n1");
	ck_assert_ptr_null(find(x, "uid"));		/* not known */
	ck_assert_str_eq(val(x->next, "path"), "other");
	destroy_sexp(e);
	free(text);
}
END_TEST

START_TEST(bad_requests)
{
	static const char *const bad[] = {
		"X", "SS", "s", "M", "M 0", "M 32", "M 63", "M -1", "M x",
		"M 1 2", "M 99999999999999999999999", "#S", "\x01",
		"GET / HTTP/1.1", "(sample)",
	};
	struct mg_supermon_client c;
	char *text;
	sexp_t *e;
	size_t i;
	int rc;

	mg_supermon_client_init(&c);
	e = ask(&c, "M 4", &rc, &text);
	destroy_sexp(e);
	free(text);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e = ask(&c, bad[i], &rc, &text);
		ck_assert_msg(!strcmp(head(e), "error"), "'%s' got %s", bad[i], text);
		ck_assert_int_eq(e->list->next->aty, SEXP_DQUOTE);
		ck_assert_int_eq(rc, 0);
		ck_assert_uint_eq(c.mask, 4);	/* unchanged */
		destroy_sexp(e);
		free(text);
	}
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		mg_supermon_too_long(f, 4096);
		fclose(f);
		ck_assert_str_eq(buf, "(error \"request longer than 4096 bytes\")\n");
		free(buf);
	}
	/* Blank lines are no requests: no reply, no view needed. */
	{
		static const char *const blank[] = { "", " ", "\t \t" };
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		for (i = 0; i < sizeof(blank) / sizeof(blank[0]); i++) {
			ck_assert(!mg_supermon_wants_view(blank[i], strlen(blank[i])));
			ck_assert_int_eq(mg_supermon_handle(f, blank[i], strlen(blank[i]),
							    &c, NULL), 0);
		}
		fclose(f);
		ck_assert_uint_eq(len, 0);
		free(buf);
	}
	ck_assert(mg_supermon_wants_view(" S ", 3));
	ck_assert(mg_supermon_wants_view("#", 1));
	ck_assert(!mg_supermon_wants_view("M 1", 3));
	ck_assert(!mg_supermon_wants_view("Q", 1));
	e = ask(&c, "Q", &rc, &text);
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(text, "(bye)\n");
	destroy_sexp(e);
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("supermon");
	TCase *tc = tcase_create("supermon");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, description);
	tcase_add_test(tc, sample_whole_and_masked);
	tcase_add_test(tc, bad_requests);
	tcase_add_test(tc, slurm_jobs);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
