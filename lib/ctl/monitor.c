// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl monitor: print the alarms of NOTIFY probes as they come, from
 * the "alarm" multicast group, until COUNT of them or a signal.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define VERSION_FILE	"/sys/kernel/debug/magnet/version"

struct monitor {
	struct ctl_nl *nl;
	struct ctl_probes ps;
	bool refreshed;		/* the probe table, since the last unknown id */
	bool tsc;		/* the record clock is the raw TSC */
	long long left;		/* alarms still to print; -1: no limit */
};

static volatile int stop;

static void on_signal(int sig)
{
	stop = 1;
}

static int parse_monitor(struct ctl_args *a)
{
	static const char *const keys[] = { "count", NULL };
	struct ctl_req *r = a->req;
	const char *w;
	__u64 v;
	int ret;

	while (ctl_more(a)) {
		if (ctl_output_option(a))
			continue;
		w = a->argv[a->i++];
		if (strcmp(w, "-c") && strcmp(w, "--count") &&
		    ctl_keyword(a, w, keys, "option") < 0)
			return -1;
		w = ctl_next(a, "COUNT");
		if (!w)
			return -1;
		ret = ctl_parse_u64(w, INT64_MAX, &v);
		if (ret || !v)
			return ctl_usage_error(a, "count %s: expected a number from 1", w);
		r->count = v;
	}
	return 0;
}

/* The record clock, from magnet/version (debugfs may not be mounted). */
static bool clock_is_tsc(void)
{
	FILE *f = fopen(VERSION_FILE, "r");
	char line[128];
	bool tsc = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "clock tsc", 9))
			tsc = true;
	fclose(f);
	return tsc;
}

static const char *probe_name(struct monitor *m, __u16 id)
{
	size_t i;

	for (;;) {
		for (i = 0; i < m->ps.n; i++)
			if (m->ps.v[i].id == id)
				return m->ps.v[i].name;
		/* Added since we started: read the table again, once. */
		if (m->refreshed)
			return "unknown";
		ctl_probes_free(&m->ps);
		if (ctl_probes_get(m->nl, &m->ps, "monitor"))
			memset(&m->ps, 0, sizeof(m->ps));
		m->refreshed = true;
	}
}

static int on_alarm(struct nlattr **tb, void *arg)
{
	struct nlattr *al[MAGNET_ALARM_A_MAX + 1];
	struct monitor *m = arg;
	__u64 ts;
	__u16 id;

	if (ctl_nla_nested(al, MAGNET_ALARM_A_MAX, tb[MAGNET_A_ALARM]) ||
	    !al[MAGNET_ALARM_A_PROBE_ID])
		return 0;	/* not ours to judge: skip it */
#define AL(t)	(al[t] ? ctl_nla_uint(al[t]) : 0)
	id = AL(MAGNET_ALARM_A_PROBE_ID);
	ts = AL(MAGNET_ALARM_A_TIMESTAMP);
	pr_record_open("alarm");
	pr_u64("ts", NULL, ts);
	if (m->tsc)
		pr_text("%llu", (unsigned long long)ts);
	else
		pr_text("%llu.%09llu", (unsigned long long)(ts / 1000000000),
			(unsigned long long)(ts % 1000000000));
	pr_u64("id", " %llu", id);
	pr_str("name", " %s", probe_name(m, id));
	pr_u64("cpu", " cpu %llu", AL(MAGNET_ALARM_A_CPU));
	pr_u64("pid", " pid %llu", AL(MAGNET_ALARM_A_PID));
	pr_u64("tgid", "/%llu", AL(MAGNET_ALARM_A_TGID));
	pr_hex("abstract", " abstract 0x%llx\n", AL(MAGNET_ALARM_A_ABSTRACT_ID));
#undef AL
	pr_record_close();
	m->refreshed = false;
	if (fflush(ctl_outf))
		return -1;
	if (m->left > 0 && !--m->left)
		return 1;
	return 0;
}

static int run_monitor(struct ctl_nl *nl, struct ctl_req *r)
{
	struct monitor m = {
		.nl = nl,
		.left = r->count,
	};
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, old[sizeof(sigs) / sizeof(sigs[0])];
	unsigned int i;
	int ret;

	m.tsc = clock_is_tsc();
	ret = ctl_probes_get(nl, &m.ps, "monitor");
	if (ret)
		return ret;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: ppoll returns */
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, &old[i]);
	stop = 0;
	ret = ctl_nl_monitor(nl, on_alarm, &m, &stop);
	/* Run in-process (ctl_exec), the caller's handlers come back. */
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &old[i], NULL);
	ctl_probes_free(&m.ps);
	return ret;
}

static const struct ctl_cmd monitor_cmds[] = {
	{ NULL, "[-j|-m] [-c COUNT]", parse_monitor, run_monitor },
	{ NULL, NULL, NULL, NULL },
};

const struct ctl_object ctl_monitor_object = {
	.name = "monitor",
	.summary = "print the alarms of notify probes as they arrive",
	.cmds = monitor_cmds,
	.notes =
"One line per alarm: TIME ID NAME cpu CPU pid PID/TGID abstract 0xADDR\n"
"(TIME in seconds on the record clock; raw cycles when magnet runs with\n"
"clock=tsc). Stops after COUNT alarms, or at SIGINT/SIGTERM/SIGHUP (exit 0).\n"
"The kernel sends at most 1000 alarms per second per CPU; the rest are\n"
"counted in the probe's alarms_dropped. -j prints one JSON object per line.\n",
};
