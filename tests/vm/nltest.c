// SPDX-License-Identifier: GPL-2.0
/*
 * nltest: drives magnet's generic-netlink family with raw netlink sockets
 * (no libnl: the kernel side is tested on its own, magnet-ctl separately)
 * and checks the results against ground truth it creates. Exit 0 when every
 * check held; otherwise it says which and exits 1.
 *
 *   nltest filters        tgid, cpu, cgroup, abstract-id filters: exact counts
 *   nltest sampling       1-in-N exact, at most one per interval
 *   nltest alarms         NOTIFY probe: one multicast alarm per hit
 *   nltest errors         refusals carry extended-ACK messages
 *   nltest perm           without CAP_SYS_ADMIN (or CAP_NET_ADMIN): EPERM
 *   nltest fuzz N         N malformed messages: errors only, module intact
 *   nltest cycles N       N add/remove cycles while probes fire
 *   nltest kapi           the sample module's event through filters
 *   nltest add-sock SYM   add a kprobe on SYM with the sock handler
 *   nltest alarm-perm     uid 65534 cannot join the alarm group, gets nothing
 *   nltest ids            a removed probe's id is not reused at once
 *   nltest sock-check     sock handler refused without a struct sock * first
 *                         (BTF), and harmless on bogus pointers (needs the
 *                         sample module)
 *   nltest kapi-len       magnet_log() of an impossible length: E2BIG
 *   nltest resize         counters monotonic across resizes; pending losses
 *                         and discarded records accounted
 *   nltest skb-check      skb handler refusals (BTF, kretprobe, offset, args,
 *                         CAPTURE_ARG, too big); a non-first sk_buff * found
 *   nltest skb-udp N SIZE CAP PROBE:DIR:IFINDEX:HOFF:COUNT... [same=P,Q]
 *                         N UDP datagrams over lo: each probe's skb records
 *                         checked field by field and byte by byte; PROBE:?
 *                         prints what PROBE saw instead (headers and payload
 *                         still checked)
 *   nltest skb-dump       drain the rings, one line per skb record
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/capability.h>
#include <linux/if_ether.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/magnet.h>

#include "sensor.h"

static int fd, family, alarm_group;
static unsigned int seq = 1;
static char errmsg[512];

__attribute__((noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "nltest: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* ---- message building ---- */

struct msg {
	union {
		struct nlmsghdr nh;
		char buf[8192];
	};
	struct nlattr *nest[8];
	int depth;
};

static void msg_init(struct msg *m, int type, int cmd, int flags)
{
	struct genlmsghdr *g;

	memset(m, 0, sizeof(*m));
	m->nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m->nh.nlmsg_type = type;
	m->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	m->nh.nlmsg_seq = seq++;
	g = NLMSG_DATA(&m->nh);
	g->cmd = cmd;
	g->version = 1;
}

static struct nlattr *put(struct msg *m, int type, const void *data, int len)
{
	struct nlattr *a = (struct nlattr *)(m->buf + NLMSG_ALIGN(m->nh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	m->nh.nlmsg_len = NLMSG_ALIGN(m->nh.nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static void put_u8(struct msg *m, int t, uint8_t v) { put(m, t, &v, 1); }
static void put_u16(struct msg *m, int t, uint16_t v) { put(m, t, &v, 2); }
static void put_u32(struct msg *m, int t, uint32_t v) { put(m, t, &v, 4); }
static void put_u64(struct msg *m, int t, uint64_t v) { put(m, t, &v, 8); }
static void put_str(struct msg *m, int t, const char *s) { put(m, t, s, strlen(s) + 1); }

static void nest(struct msg *m, int type)
{
	m->nest[m->depth++] = put(m, type | NLA_F_NESTED, NULL, 0);
}

static void end(struct msg *m)
{
	struct nlattr *a = m->nest[--m->depth];

	a->nla_len = m->buf + m->nh.nlmsg_len - (char *)a;
}

/* ---- talking ---- */

static void nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1;

	fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("netlink socket: %s", strerror(errno));
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
}

/*
 * Send @m; collect replies. Returns 0 or -errno from the ACK; the extended
 * ACK message goes to errmsg. @reply gets the first data message, if any.
 */
static int talk(struct msg *m, struct msg *reply, void (*each)(struct nlmsghdr *, void *), void *ctx)
{
	static char buf[65536];
	int done = 0, ret = 0;

	errmsg[0] = 0;
	if (send(fd, m->buf, m->nh.nlmsg_len, 0) < 0)
		die("send: %s", strerror(errno));
	while (!done) {
		int n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0)
			die("recv: %s", strerror(errno));
		for (nh = (void *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_seq != m->nh.nlmsg_seq)
				continue;	/* e.g. an alarm, or a stale reply */
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(nh);

				ret = e->error;
				if (nh->nlmsg_flags & NLM_F_ACK_TLVS) {
					int off = sizeof(*e) + (nh->nlmsg_flags & NLM_F_CAPPED ? 0 :
						  e->msg.nlmsg_len - sizeof(struct nlmsghdr));
					struct nlattr *a = (void *)((char *)e + NLA_ALIGN(off));
					int left = nh->nlmsg_len - NLMSG_HDRLEN - NLA_ALIGN(off);

					while (left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
					       a->nla_len <= left) {
						if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
							snprintf(errmsg, sizeof(errmsg), "%s",
								 (char *)a + NLA_HDRLEN);
						left -= NLA_ALIGN(a->nla_len);
						a = (void *)((char *)a + NLA_ALIGN(a->nla_len));
					}
				}
				done = 1;
			} else if (nh->nlmsg_type == NLMSG_DONE) {
				done = 1;
			} else {
				if (reply && !reply->nh.nlmsg_len)
					memcpy(reply->buf, nh, nh->nlmsg_len < sizeof(reply->buf) ?
					       nh->nlmsg_len : sizeof(reply->buf));
				if (each)
					each(nh, ctx);
			}
		}
	}
	return ret;
}

/* First attribute @type inside [a, a + len). */
static struct nlattr *find(void *start, int len, int type)
{
	struct nlattr *a = start;

	while (len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len) {
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		len -= NLA_ALIGN(a->nla_len);
		a = (void *)((char *)a + NLA_ALIGN(a->nla_len));
	}
	return NULL;
}

#define ADATA(a)	((void *)((char *)(a) + NLA_HDRLEN))
#define ALEN(a)		((a)->nla_len - NLA_HDRLEN)
#define GATTRS(nh)	((char *)NLMSG_DATA(nh) + GENL_HDRLEN)
#define GLEN(nh)	((int)((nh)->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN)))

static void resolve(void)
{
	struct msg m, r = { 0 };
	struct nlattr *a, *grps, *g;
	int left;

	msg_init(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	put_str(&m, CTRL_ATTR_FAMILY_NAME, MAGNET_GENL_NAME);
	if (talk(&m, &r, NULL, NULL))
		die("family %s not found: is magnet.ko loaded?", MAGNET_GENL_NAME);
	a = find(GATTRS(&r.nh), GLEN(&r.nh), CTRL_ATTR_FAMILY_ID);
	family = *(uint16_t *)ADATA(a);
	grps = find(GATTRS(&r.nh), GLEN(&r.nh), CTRL_ATTR_MCAST_GROUPS);
	for (g = ADATA(grps), left = ALEN(grps); left >= NLA_HDRLEN;
	     left -= NLA_ALIGN(g->nla_len), g = (void *)((char *)g + NLA_ALIGN(g->nla_len))) {
		struct nlattr *name = find(ADATA(g), ALEN(g), CTRL_ATTR_MCAST_GRP_NAME);
		struct nlattr *id = find(ADATA(g), ALEN(g), CTRL_ATTR_MCAST_GRP_ID);

		if (name && id && !strcmp(ADATA(name), MAGNET_GENL_MCGRP_ALARM))
			alarm_group = *(uint32_t *)ADATA(id);
	}
	if (!alarm_group)
		die("no alarm multicast group");
}

/* ---- operations ---- */

/* The new probe's id, or -errno; @handler NULL is the generic one. */
static int probe_add_handler(int type, const char *sym, int nargs, uint32_t flags,
			     const char *name, const char *handler)
{
	struct msg m, r = { 0 };
	struct nlattr *p, *id;
	int ret;

	msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u8(&m, MAGNET_PROBE_A_TYPE, type);
	put_str(&m, MAGNET_PROBE_A_SYMBOL, sym);
	if (nargs)
		put_u8(&m, MAGNET_PROBE_A_NARGS, nargs);
	if (flags)
		put_u32(&m, MAGNET_PROBE_A_FLAGS, flags);
	if (name)
		put_str(&m, MAGNET_PROBE_A_NAME, name);
	if (handler)
		put_str(&m, MAGNET_PROBE_A_HANDLER, handler);
	end(&m);
	ret = talk(&m, &r, NULL, NULL);
	if (ret)
		return ret;
	p = find(GATTRS(&r.nh), GLEN(&r.nh), MAGNET_A_PROBE);
	id = p ? find(ADATA(p), ALEN(p), MAGNET_PROBE_A_ID) : NULL;
	if (!id)
		die("PROBE_ADD reply without an id");
	return *(uint16_t *)ADATA(id);
}

static int probe_add(int type, const char *sym, int nargs, uint32_t flags, const char *name)
{
	return probe_add_handler(type, sym, nargs, flags, name, NULL);
}

static int must_add(int type, const char *sym, int nargs, uint32_t flags)
{
	int id = probe_add(type, sym, nargs, flags, NULL);

	if (id < 0)
		die("add %s: %s (%s)", sym, strerror(-id), errmsg);
	return id;
}

static int probe_simple(int cmd, int id)
{
	struct msg m;

	msg_init(&m, family, cmd, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u16(&m, MAGNET_PROBE_A_ID, id);
	end(&m);
	return talk(&m, NULL, NULL, NULL);
}

static void probe_del(int id)
{
	int ret = probe_simple(MAGNET_CMD_PROBE_DEL, id);

	if (ret)
		die("del %d: %s (%s)", id, strerror(-ret), errmsg);
}

static int filter_add(int id, int kind, int action, uint64_t value, const uint64_t *cpus, int words)
{
	struct msg m, r = { 0 };
	struct nlattr *f, *fid;
	int ret;

	msg_init(&m, family, MAGNET_CMD_FILTER_ADD, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u16(&m, MAGNET_PROBE_A_ID, id);
	end(&m);
	nest(&m, MAGNET_A_FILTER);
	put_u8(&m, MAGNET_FILTER_A_KIND, kind);
	put_u8(&m, MAGNET_FILTER_A_ACTION, action);
	if (cpus)
		put(&m, MAGNET_FILTER_A_CPUS, cpus, words * 8);
	else
		put_u64(&m, MAGNET_FILTER_A_VALUE, value);
	end(&m);
	ret = talk(&m, &r, NULL, NULL);
	if (ret)
		die("filter add: %s (%s)", strerror(-ret), errmsg);
	f = find(GATTRS(&r.nh), GLEN(&r.nh), MAGNET_A_FILTER);
	fid = f ? find(ADATA(f), ALEN(f), MAGNET_FILTER_A_ID) : NULL;
	if (!fid)
		die("FILTER_ADD reply without an id");
	return *(uint32_t *)ADATA(fid);
}

static void filter_del(int id, uint32_t fid)
{
	struct msg m;
	int ret;

	msg_init(&m, family, MAGNET_CMD_FILTER_DEL, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u16(&m, MAGNET_PROBE_A_ID, id);
	end(&m);
	nest(&m, MAGNET_A_FILTER);
	put_u32(&m, MAGNET_FILTER_A_ID, fid);
	end(&m);
	ret = talk(&m, NULL, NULL, NULL);
	if (ret)
		die("filter del: %s (%s)", strerror(-ret), errmsg);
}

static void sample_set(int id, int every_given, uint32_t every, int iv_given, uint64_t iv)
{
	struct msg m;
	int ret;

	msg_init(&m, family, MAGNET_CMD_SAMPLE_SET, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u16(&m, MAGNET_PROBE_A_ID, id);
	if (every_given)
		put_u32(&m, MAGNET_PROBE_A_SAMPLE_EVERY, every);
	if (iv_given)
		put_u64(&m, MAGNET_PROBE_A_SAMPLE_INTERVAL_NS, iv);
	end(&m);
	ret = talk(&m, NULL, NULL, NULL);
	if (ret)
		die("sample set: %s (%s)", strerror(-ret), errmsg);
}

struct pstat {
	uint64_t hits, filtered, sampled, recorded, lost, alarms, dropped;
};

static struct pstat probe_stats(int id)
{
	struct msg m, r = { 0 };
	struct nlattr *p, *st, *a;
	struct pstat s = { 0 };
	int ret;

	msg_init(&m, family, MAGNET_CMD_PROBE_GET, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u16(&m, MAGNET_PROBE_A_ID, id);
	end(&m);
	ret = talk(&m, &r, NULL, NULL);
	if (ret)
		die("probe get %d: %s (%s)", id, strerror(-ret), errmsg);
	p = find(GATTRS(&r.nh), GLEN(&r.nh), MAGNET_A_PROBE);
	st = p ? find(ADATA(p), ALEN(p), MAGNET_PROBE_A_STATS) : NULL;
	if (!st)
		die("PROBE_GET reply without stats");
#define GET(attr, field) \
	if ((a = find(ADATA(st), ALEN(st), attr))) s.field = *(uint64_t *)ADATA(a)
	GET(MAGNET_PSTAT_A_HITS, hits);
	GET(MAGNET_PSTAT_A_FILTERED, filtered);
	GET(MAGNET_PSTAT_A_SAMPLED, sampled);
	GET(MAGNET_PSTAT_A_RECORDED, recorded);
	GET(MAGNET_PSTAT_A_LOST, lost);
	GET(MAGNET_PSTAT_A_ALARMS, alarms);
	GET(MAGNET_PSTAT_A_ALARMS_DROPPED, dropped);
	if (s.hits != s.filtered + s.sampled + s.recorded + s.lost)
		die("probe %d: hits %llu != filtered %llu + sampled %llu + recorded %llu + lost %llu",
		    id, (unsigned long long)s.hits, (unsigned long long)s.filtered,
		    (unsigned long long)s.sampled, (unsigned long long)s.recorded,
		    (unsigned long long)s.lost);
	return s;
}

/* ---- workloads ---- */

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void getpids(int n)
{
	for (int i = 0; i < n; i++)
		syscall(SYS_getpid);
}

/* A child in cgroup @cg (or none), on @cpu (or any), calls getpid @n times. */
static void child_getpids(int n, const char *cg, int cpu)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (cg) {
			char path[256];
			FILE *f;

			snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
			f = fopen(path, "w");
			if (!f || fprintf(f, "0\n") < 0 || fclose(f))
				_exit(3);
		}
		if (cpu >= 0)
			pin(cpu);
		getpids(n);
		_exit(0);
	}
	int st;

	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("workload child failed (%d)", st);
}

static struct pstat delta(int id, struct pstat before)
{
	struct pstat now = probe_stats(id);

	now.hits -= before.hits;
	now.filtered -= before.filtered;
	now.sampled -= before.sampled;
	now.recorded -= before.recorded;
	now.lost -= before.lost;
	now.alarms -= before.alarms;
	now.dropped -= before.dropped;
	return now;
}

static void expect(const char *what, struct pstat d, uint64_t recorded, uint64_t filtered)
{
	if (d.recorded != recorded || d.filtered != filtered)
		die("%s: recorded %llu filtered %llu, want %llu and %llu", what,
		    (unsigned long long)d.recorded, (unsigned long long)d.filtered,
		    (unsigned long long)recorded, (unsigned long long)filtered);
	printf("%s: recorded %llu, filtered %llu (exact)\n", what,
	       (unsigned long long)d.recorded, (unsigned long long)d.filtered);
}

static uint64_t cgroup_id(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		die("stat %s: %s", path, strerror(errno));
	return st.st_ino;
}

static int cmd_filters(void)
{
	int id = must_add(MAGNET_PROBE_KPROBE, "__x64_sys_getpid", 0, 0);
	uint64_t cpu0 = 1;
	struct pstat b;
	uint32_t f;

	/* tgid include: only the parent's calls. */
	f = filter_add(id, MAGNET_FILTER_TGID, MAGNET_FILTER_INCLUDE, getpid(), NULL, 0);
	b = probe_stats(id);
	getpids(300);
	child_getpids(200, NULL, -1);
	expect("tgid include", delta(id, b), 300, 200);
	filter_del(id, f);

	/* tgid exclude. */
	f = filter_add(id, MAGNET_FILTER_TGID, MAGNET_FILTER_EXCLUDE, getpid(), NULL, 0);
	b = probe_stats(id);
	getpids(300);
	child_getpids(200, NULL, -1);
	expect("tgid exclude", delta(id, b), 200, 300);
	filter_del(id, f);

	/* cpu include: CPU 0 only. */
	f = filter_add(id, MAGNET_FILTER_CPU, MAGNET_FILTER_INCLUDE, 0, &cpu0, 1);
	b = probe_stats(id);
	child_getpids(250, NULL, 0);
	child_getpids(150, NULL, 1);
	expect("cpu include 0", delta(id, b), 250, 150);

	/* AND across kinds: cpu 0 and our tgid. */
	{
		uint32_t g = filter_add(id, MAGNET_FILTER_TGID, MAGNET_FILTER_INCLUDE, getpid(),
					NULL, 0);

		b = probe_stats(id);
		pin(0);
		getpids(100);		/* both: recorded */
		pin(1);
		getpids(60);		/* wrong cpu */
		child_getpids(40, NULL, 0);	/* wrong tgid */
		expect("cpu 0 and tgid", delta(id, b), 100, 100);
		filter_del(id, g);
	}
	filter_del(id, f);

	/* cgroup include covers the job and the cgroups below it. */
	mkdir("/sys/fs/cgroup/job42", 0755);
	mkdir("/sys/fs/cgroup/job42/step1", 0755);
	mkdir("/sys/fs/cgroup/other", 0755);
	f = filter_add(id, MAGNET_FILTER_CGROUP, MAGNET_FILTER_INCLUDE,
		       cgroup_id("/sys/fs/cgroup/job42"), NULL, 0);
	b = probe_stats(id);
	child_getpids(120, "/sys/fs/cgroup/job42", -1);
	child_getpids(80, "/sys/fs/cgroup/job42/step1", -1);
	child_getpids(70, "/sys/fs/cgroup/other", -1);
	getpids(30);
	expect("cgroup job42 (and below)", delta(id, b), 200, 100);
	filter_del(id, f);
	rmdir("/sys/fs/cgroup/job42/step1");
	rmdir("/sys/fs/cgroup/job42");
	rmdir("/sys/fs/cgroup/other");

	/* No filters: everything. */
	b = probe_stats(id);
	getpids(50);
	expect("no filter", delta(id, b), 50, 0);
	probe_del(id);
	return 0;
}

static int cmd_sampling(void)
{
	int id = must_add(MAGNET_PROBE_KPROBE, "__x64_sys_getpid", 0, 0);
	struct pstat b, d;
	struct timespec t0, t1;
	double secs;

	pin(0);
	sample_set(id, 1, 10, 0, 0);
	b = probe_stats(id);
	getpids(1000);
	d = delta(id, b);
	if (d.recorded != 100 || d.sampled != 900)
		die("1 in 10 of 1000: recorded %llu sampled %llu", (unsigned long long)d.recorded,
		    (unsigned long long)d.sampled);
	printf("sample every 10: 1000 hits -> 100 recorded, 900 sampled out (exact)\n");

	sample_set(id, 1, 0, 1, 100000000ULL);	/* at most one per 100 ms */
	b = probe_stats(id);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		getpids(100);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	} while (secs < 1.0);
	d = delta(id, b);
	if (d.recorded < 1 || d.recorded > secs * 10 + 1.5 || d.recorded + d.sampled != d.hits)
		die("interval 100ms over %.2fs: recorded %llu of %llu", secs,
		    (unsigned long long)d.recorded, (unsigned long long)d.hits);
	printf("sample interval 100ms: %.2f s, %llu hits -> %llu recorded\n", secs,
	       (unsigned long long)d.hits, (unsigned long long)d.recorded);
	probe_del(id);
	return 0;
}

static int cmd_alarms(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int id, mfd, got = 0, ours = 0, want = 50;
	static char buf[65536];
	struct timeval tv = { 5, 0 };
	pid_t child;
	struct pstat s;

	id = must_add(MAGNET_PROBE_KPROBE, "__x64_sys_getpid", 0, MAGNET_PROBE_F_NOTIFY);
	mfd = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
	if (mfd < 0 || bind(mfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(mfd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &alarm_group, sizeof(alarm_group)))
		die("join the alarm group: %s", strerror(errno));
	setsockopt(mfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	child = fork();
	if (child == 0) {
		getpids(want);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	while (ours < want) {
		int n = recv(mfd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0)
			die("alarms: got %d of %d for the child (%s)", ours, want, strerror(errno));
		for (nh = (void *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			struct nlattr *al = find(GATTRS(nh), GLEN(nh), MAGNET_A_ALARM), *t, *pid;

			if (!al)
				die("an alarm without MAGNET_A_ALARM");
			t = find(ADATA(al), ALEN(al), MAGNET_ALARM_A_TGID);
			pid = find(ADATA(al), ALEN(al), MAGNET_ALARM_A_PROBE_ID);
			if (!t || !pid || *(uint16_t *)ADATA(pid) != id)
				die("an alarm without tgid or with the wrong probe id");
			got++;
			ours += *(uint32_t *)ADATA(t) == (uint32_t)child;
		}
	}
	s = probe_stats(id);
	if (s.alarms + s.dropped != s.recorded)
		die("alarms %llu + dropped %llu != recorded %llu", (unsigned long long)s.alarms,
		    (unsigned long long)s.dropped, (unsigned long long)s.recorded);
	printf("alarms: %d multicast alarms for the child's %d hits (%d in all)\n", ours, want, got);
	close(mfd);
	probe_del(id);
	return 0;
}

static void expect_err(int ret, int err, const char *msg_part, const char *what)
{
	if (ret != -err)
		die("%s: got %d (%s), want -%s", what, ret, strerror(-ret), strerror(err));
	if (!strstr(errmsg, msg_part))
		die("%s: extended ACK '%s' lacks '%s'", what, errmsg, msg_part);
	printf("refused: %s -> %s: %s\n", what, strerror(err), errmsg);
}

static int cmd_errors(void)
{
	struct msg m;
	int id;

	expect_err(probe_add(MAGNET_PROBE_KPROBE, "no_such_function_xyz", 0, 0, NULL), ENOENT,
		   "no such symbol", "unknown symbol");
	expect_err(probe_add(MAGNET_PROBE_KPROBE, "do_int3", 0, 0, NULL), EINVAL,
		   "refused by kprobes", "blacklisted symbol");
	expect_err(probe_add(MAGNET_PROBE_KPROBE, "vfs_read", 7, 0, NULL), ERANGE, "range",
		   "7 arguments");
	expect_err(probe_add(MAGNET_PROBE_KPROBE, "vfs_read", 0, 0x80, NULL), EINVAL, "",
		   "unknown flag");
	expect_err(probe_add(MAGNET_PROBE_CUSTOM, "vfs_read", 0, 0, NULL), EINVAL,
		   "kernel modules", "type custom");
	expect_err(probe_add(MAGNET_PROBE_TRACEPOINT + 1, "vfs_read", 0, 0, NULL), ERANGE, "range",
		   "unknown type");
	expect_err(probe_add(MAGNET_PROBE_FENTRY, "vfs_*", 0, 0, NULL), EINVAL, "not a pattern",
		   "fentry glob");
	/* Debian's syscall wrappers have no ftrace call site (kprobes take them). */
	expect_err(probe_add(MAGNET_PROBE_FENTRY, "__x64_sys_getpid", 0, 0, NULL), ENOENT,
		   "no traceable function", "fentry on a function without ftrace call site");
	id = must_add(MAGNET_PROBE_KPROBE, "vfs_read", 0, 0);
	expect_err(probe_add(MAGNET_PROBE_KPROBE, "vfs_read", 0, 0, NULL), EEXIST, "exists",
		   "duplicate name");
	probe_del(id);
	expect_err(probe_simple(MAGNET_CMD_PROBE_DEL, id), ENOENT, "no such probe",
		   "delete twice");
	msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
	expect_err(talk(&m, NULL, NULL, NULL), EINVAL, "MAGNET_A_PROBE", "no attributes");
	msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
	put_u32(&m, 99, 1);
	expect_err(talk(&m, NULL, NULL, NULL), EINVAL, "", "unknown attribute");
	msg_init(&m, family, 200, 0);
	expect_err(talk(&m, NULL, NULL, NULL), EOPNOTSUPP, "", "unknown command");
	msg_init(&m, family, MAGNET_CMD_BUFFER_SET, 0);
	nest(&m, MAGNET_A_BUFFER);
	put_u64(&m, MAGNET_BUFFER_A_SIZE, 100000);
	end(&m);
	expect_err(talk(&m, NULL, NULL, NULL), EINVAL, "power of two", "buffer size 100000");
	return 0;
}

static int capset_drop(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[cap / 32].effective &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &h, d);
}

static int cmd_perm(void)
{
	int caps[] = { CAP_SYS_ADMIN, CAP_NET_ADMIN };

	for (int i = 0; i < 2; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			int ret;

			if (capset_drop(caps[i]))
				_exit(3);
			ret = probe_add(MAGNET_PROBE_KPROBE, "vfs_read", 0, 0, "perm");
			if (ret != -EPERM) {
				fprintf(stderr, "without cap %d: probe add gave %d\n", caps[i], ret);
				_exit(1);
			}
			printf("without %s: probe add refused with EPERM %s\n",
			       i ? "CAP_NET_ADMIN" : "CAP_SYS_ADMIN", errmsg);
			_exit(0);
		}
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("permission check %d failed", i);
	}
	return 0;
}

/* Random bytes, lengths, types, nesting; valid-looking headers half the time. */
static int cmd_fuzz(int n)
{
	unsigned int rnd = 12345, errors = 0, acks = 0;
	struct msg m;

#define R() (rnd = rnd * 1103515245 + 12345, (rnd >> 8))
	for (int i = 0; i < n; i++) {
		int cmd = R() % 2 ? 1 + R() % MAGNET_CMD_MAX : R() % 256, k, ret;

		/* Never let a random message delete or disturb the test itself. */
		msg_init(&m, family, cmd, R() % 8 == 0 ? NLM_F_DUMP : 0);
		for (k = R() % 6; k > 0; k--) {
			int type = R() % 4 ? 1 + R() % MAGNET_A_MAX : R() % 64;
			int len = R() % 40;
			char junk[64];

			for (int j = 0; j < len; j++)
				junk[j] = R();
			if (R() % 2) {
				nest(&m, type);
				for (int q = R() % 5; q > 0; q--) {
					int t2 = R() % 20, l2 = R() % 24;

					if (R() % 4 == 0 && m.depth < 6) {
						nest(&m, t2);
						put(&m, R() % 10, junk, l2);
						end(&m);
					} else {
						put(&m, t2, junk, l2);
					}
				}
				end(&m);
			} else {
				put(&m, type, junk, len);
			}
		}
		/* Now and then a broken length that runs past the message. */
		if (R() % 10 == 0 && m.nh.nlmsg_len > NLMSG_LENGTH(GENL_HDRLEN) + 4)
			((struct nlattr *)(m.buf + NLMSG_LENGTH(GENL_HDRLEN)))->nla_len += R() % 400;
		ret = talk(&m, NULL, NULL, NULL);
		if (ret)
			errors++;
		else
			acks++;
	}
	printf("fuzz: %d malformed messages, %u errors, %u accepted (harmless), module alive\n",
	       n, errors, acks);
	/* Still works. */
	probe_del(must_add(MAGNET_PROBE_KPROBE, "vfs_read", 3, 0));
	return 0;
}

static int cmd_cycles(int n)
{
	pid_t load = fork();

	if (load == 0) {
		pin(1);
		for (;;)
			getpids(1000);
	}
	for (int i = 0; i < n; i++) {
		int a = must_add(MAGNET_PROBE_KPROBE, "__x64_sys_getpid", 2, 0);
		int b = must_add(MAGNET_PROBE_KRETPROBE, "vfs_read", 3, 0);
		uint64_t cpu1 = 2;

		filter_add(a, MAGNET_FILTER_CPU, MAGNET_FILTER_INCLUDE, 0, &cpu1, 1);
		sample_set(b, 1, 3, 0, 0);
		if (i % 2 && probe_simple(MAGNET_CMD_PROBE_DEL, a) == 0)
			a = -1;
		if (a >= 0)
			probe_del(a);
		probe_del(b);
	}
	kill(load, SIGKILL);
	waitpid(load, NULL, 0);
	printf("cycles: %d add/filter/sample/remove cycles while getpid fired\n", n);
	return 0;
}

static int find_probe_by_name(const char *name)
{
	struct msg m, r = { 0 };
	struct nlattr *p, *id;

	msg_init(&m, family, MAGNET_CMD_PROBE_GET, 0);
	nest(&m, MAGNET_A_PROBE);
	put_str(&m, MAGNET_PROBE_A_NAME, name);
	end(&m);
	if (talk(&m, &r, NULL, NULL))
		return -1;
	p = find(GATTRS(&r.nh), GLEN(&r.nh), MAGNET_A_PROBE);
	id = p ? find(ADATA(p), ALEN(p), MAGNET_PROBE_A_ID) : NULL;
	return id ? *(uint16_t *)ADATA(id) : -1;
}

static void fire_sample(int n)
{
	FILE *f = fopen("/sys/kernel/debug/magnet_sample/fire", "w");

	if (!f || fprintf(f, "%d\n", n) < 0 || fclose(f))
		die("write magnet_sample/fire: %s", strerror(errno));
}

static int cmd_kapi(void)
{
	int id = find_probe_by_name("magnet_sample");
	struct pstat b;
	uint32_t f;

	if (id < 0)
		die("the sample module's event is not listed");
	expect_err(probe_simple(MAGNET_CMD_PROBE_DEL, id), EPERM, "only that module",
		   "deleting a module's event");
	b = probe_stats(id);
	fire_sample(100);
	expect("kapi: 100 logged", delta(id, b), 100, 0);
	f = filter_add(id, MAGNET_FILTER_ABSTRACT_ID, MAGNET_FILTER_INCLUDE, 105, NULL, 0);
	b = probe_stats(id);
	fire_sample(10);	/* abstract ids 101..110 */
	expect("kapi: abstract id 105 only", delta(id, b), 1, 9);
	filter_del(id, f);
	return 0;
}

/*
 * Alarms carry pids and kernel addresses: a process without privileges
 * (uid 65534, no capabilities) may not join the group, and receives
 * nothing while a NOTIFY probe fires.
 */
static int cmd_alarm_perm(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int id = must_add(MAGNET_PROBE_KPROBE, "__x64_sys_getpid", 0, MAGNET_PROBE_F_NOTIFY);
	int ready[2], st;
	pid_t child;

	if (pipe(ready))
		die("pipe: %s", strerror(errno));
	child = fork();
	if (child == 0) {
		struct timeval tv = { 3, 0 };
		static char rbuf[8192];
		int mfd, joined, n;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(3);
		mfd = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
		if (mfd < 0 || bind(mfd, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(4);
		joined = !setsockopt(mfd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &alarm_group,
				     sizeof(alarm_group));
		if (joined)
			fprintf(stderr, "uid 65534 joined the alarm group\n");
		else if (errno != EPERM)
			fprintf(stderr, "uid 65534: join failed with %s, not EPERM\n",
				strerror(errno));
		else
			printf("uid 65534: joining the alarm group refused: EPERM\n");
		setsockopt(mfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (write(ready[1], "x", 1) != 1)
			_exit(5);
		n = recv(mfd, rbuf, sizeof(rbuf), 0);
		if (n >= 0) {
			fprintf(stderr, "uid 65534 received a %d-byte alarm\n", n);
			_exit(1);
		}
		printf("uid 65534: no alarm received while the probe fired\n");
		_exit(joined || errno != EAGAIN ? 1 : 0);
	}
	char c;

	if (read(ready[0], &c, 1) != 1)
		die("the unprivileged child did not start");
	child_getpids(200, NULL, -1);
	waitpid(child, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("an unprivileged process could join the alarm group or got alarms (%d)", st);
	if (probe_stats(id).recorded < 200)
		die("the NOTIFY probe did not fire");
	probe_del(id);
	return 0;
}

/* A removed probe's id is not the next probe's: ids go round the space. */
static int cmd_ids(void)
{
	int prev = must_add(MAGNET_PROBE_KPROBE, "vfs_read", 0, 0), id;

	for (int i = 0; i < 5; i++) {
		probe_del(prev);
		id = must_add(MAGNET_PROBE_KPROBE, "vfs_read", 0, 0);
		if (id == prev)
			die("probe id %d handed out again at once after its probe was removed", id);
		printf("ids: removed %d, the next probe got %d\n", prev, id);
		prev = id;
	}
	probe_del(prev);
	return 0;
}

static int sock_add(const char *sym)
{
	return probe_add_handler(MAGNET_PROBE_KPROBE, sym, 0, 0, NULL, "sock");
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die("write %s to %s: %s", text, path, strerror(errno));
	close(fd);
}

/*
 * The sock handler: refused where BTF says the first argument is no
 * struct sock *; where it is, a caller passing something else costs a
 * record, not an oops (the sample module calls sk_stop_timer() on three
 * addresses that are no socket).
 */
static int cmd_sock_check(void)
{
	static const uint64_t bogus[] = { 0x1000, 0xdead000000000000ULL, 0x7ffff000 };
	struct pstat b;
	int id;

	expect_err(sock_add("ksys_read"), EINVAL, "struct sock",
		   "sock handler on ksys_read (an fd first)");
	expect_err(sock_add("inet_sendmsg"), EINVAL, "struct sock",
		   "sock handler on inet_sendmsg (a struct socket * first)");
	id = sock_add("sk_stop_timer");
	if (id < 0)
		die("sock handler on sk_stop_timer: %s (%s)", strerror(-id), errmsg);
	for (unsigned int i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++)
		filter_add(id, MAGNET_FILTER_ABSTRACT_ID, MAGNET_FILTER_INCLUDE, bogus[i], NULL, 0);
	b = probe_stats(id);
	for (int i = 0; i < 5; i++)
		write_file("/sys/kernel/debug/magnet_sample/bogus_sock", "1\n");
	expect("sock handler on bogus sockets", delta(id, b), 15, 0);
	probe_del(id);
	return 0;
}

/* magnet_log() with a length no record holds: E2BIG, counted, no overrun. */
static int cmd_kapi_len(void)
{
	static const char *const lens[] = { "4294967295", "4294967288", "4089" };
	int id = find_probe_by_name("magnet_sample");
	int fd;
	struct pstat b;

	if (id < 0)
		die("the sample module's event is not listed");
	b = probe_stats(id);
	for (unsigned int i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		fd = open("/sys/kernel/debug/magnet_sample/log_len", O_WRONLY);
		if (fd < 0)
			die("open log_len: %s", strerror(errno));
		if (write(fd, lens[i], strlen(lens[i])) >= 0 || errno != E2BIG)
			die("magnet_log of %s bytes: want E2BIG, got %s", lens[i], strerror(errno));
		close(fd);
		printf("kapi: magnet_log of %s bytes refused with E2BIG\n", lens[i]);
	}
	write_file("/sys/kernel/debug/magnet_sample/log_len", "64");
	b = delta(id, b);
	if (b.lost != 3 || b.recorded != 1)
		die("kapi lengths: lost %llu recorded %llu, want 3 and 1",
		    (unsigned long long)b.lost, (unsigned long long)b.recorded);
	return 0;
}

/* ---- counters across resizes ---- */

#define NSTAT	7	/* WRITTEN..OVERWRITTEN, then DISCARDED */
#define MAXCPU	64

struct cstats {
	uint64_t v[MAXCPU][NSTAT];
	int n;
};

static void each_cstat(struct nlmsghdr *nh, void *ctx)
{
	struct cstats *cs = ctx;
	struct nlattr *st = find(GATTRS(nh), GLEN(nh), MAGNET_A_CPU_STATS), *a;
	uint32_t cpu;

	if (!st || !(a = find(ADATA(st), ALEN(st), MAGNET_CSTAT_A_CPU)))
		die("STATS_GET message without CPU stats");
	cpu = *(uint32_t *)ADATA(a);
	if (cpu >= MAXCPU)
		return;
	for (int i = 0; i < NSTAT; i++) {
		a = find(ADATA(st), ALEN(st),
			 i < 6 ? MAGNET_CSTAT_A_WRITTEN + i : MAGNET_CSTAT_A_DISCARDED);
		if (!a)
			die("STATS_GET: cpu %u lacks counter %d", cpu, i);
		cs->v[cpu][i] = *(uint64_t *)ADATA(a);
	}
	if ((int)cpu >= cs->n)
		cs->n = cpu + 1;
}

static struct cstats cpu_stats(void)
{
	struct cstats cs = { 0 };
	struct msg m;
	int ret;

	msg_init(&m, family, MAGNET_CMD_STATS_GET, NLM_F_DUMP);
	ret = talk(&m, NULL, each_cstat, &cs);
	if (ret)
		die("stats: %s (%s)", strerror(-ret), errmsg);
	return cs;
}

static void buffer_size(uint64_t size)
{
	struct msg m;
	int ret;

	msg_init(&m, family, MAGNET_CMD_BUFFER_SET, 0);
	nest(&m, MAGNET_A_BUFFER);
	put_u64(&m, MAGNET_BUFFER_A_SIZE, size);
	end(&m);
	ret = talk(&m, NULL, NULL, NULL);
	if (ret)
		die("buffer size %llu: %s (%s)", (unsigned long long)size, strerror(-ret), errmsg);
}

static uint64_t sum_of(const struct cstats *cs, int k)
{
	uint64_t t = 0;

	for (int c = 0; c < cs->n; c++)
		t += cs->v[c][k];
	return t;
}

/*
 * Resizes with probes firing: no counter ever goes down (STATS_GET taken
 * between and during resizes), the unread records a resize throws away
 * are counted as discarded, and losses that had no LOST record yet are
 * reported by the new ring's first record.
 */
static int cmd_resize(void)
{
	static unsigned char rbuf[1 << 16];
	struct cstats prev, now, s0, s1, s2;
	int id = must_add(MAGNET_PROBE_KPROBE, "__x64_sys_getpid", 0, 0);
	uint64_t lost;
	pid_t load;
	long n;
	int rfd;

	buffer_size(64 << 10);
	load = fork();
	if (load == 0) {
		for (;;)
			syscall(SYS_getpid);
	}
	prev = cpu_stats();
	for (int i = 0; i < 40; i++) {
		if (i % 4 == 0)
			buffer_size(i % 8 ? 64 << 10 : 128 << 10);
		now = cpu_stats();
		for (int c = 0; c < now.n; c++)
			for (int k = 0; k < NSTAT; k++)
				if (now.v[c][k] < prev.v[c][k])
					die("resize: cpu %d counter %d went from %llu down to %llu", c, k,
					    (unsigned long long)prev.v[c][k],
					    (unsigned long long)now.v[c][k]);
		prev = now;
	}
	kill(load, SIGKILL);
	waitpid(load, NULL, 0);
	printf("resize: 10 resizes under load, 40 samples, no counter went down\n");

	/*
	 * A full ring with losses pending, no reader: then a resize. First
	 * a reader takes what the load left (the losses the resizes above
	 * carried over, reported in front of the first record), so that the
	 * losses pending at the resize below are all that is unreported.
	 */
	buffer_size(128 << 10);
	child_getpids(1, NULL, 0);
	rfd = open("/sys/kernel/debug/magnet/cpu0", O_RDONLY | O_NONBLOCK);
	if (rfd < 0)
		die("open cpu0: %s", strerror(errno));
	while (read(rfd, rbuf, sizeof(rbuf)) > 0)
		;
	close(rfd);
	s0 = cpu_stats();
	child_getpids(20000, NULL, 0);
	s1 = cpu_stats();
	lost = s1.v[0][2] - s0.v[0][2];
	if (!lost)
		die("resize: 20000 getpid on a 128 KiB ring lost nothing");
	buffer_size(64 << 10);
	s2 = cpu_stats();
	if (sum_of(&s2, 6) - sum_of(&s1, 6) < sum_of(&s1, 0) - sum_of(&s0, 0))
		die("resize: %llu records were written unread, only %llu counted discarded",
		    (unsigned long long)(sum_of(&s1, 0) - sum_of(&s0, 0)),
		    (unsigned long long)(sum_of(&s2, 6) - sum_of(&s1, 6)));
	child_getpids(1, NULL, 0);
	rfd = open("/sys/kernel/debug/magnet/cpu0", O_RDONLY | O_NONBLOCK);
	if (rfd < 0)
		die("open cpu0: %s", strerror(errno));
	n = read(rfd, rbuf, sizeof(rbuf));
	close(rfd);
	if (n < (long)(MAGNET_RECORD_HEADER + sizeof(struct magnet_lost)))
		die("resize: reading cpu0 gave %ld", n);
	struct magnet_record *r = (struct magnet_record *)rbuf;

	if (r->event_id != MAGNET_EVENT_LOST ||
	    ((struct magnet_lost *)r->payload)->full != lost)
		die("resize: the new ring's first record is event %u (full %llu), want LOST with "
		    "the %llu losses pending at the resize", r->event_id,
		    r->event_id == MAGNET_EVENT_LOST ?
		    (unsigned long long)((struct magnet_lost *)r->payload)->full : 0ULL,
		    (unsigned long long)lost);
	printf("resize: %llu pending losses reported by the new ring, %llu records discarded\n",
	       (unsigned long long)lost, (unsigned long long)(sum_of(&s2, 6) - sum_of(&s1, 6)));
	probe_del(id);
	return 0;
}

static int cmd_add_sock(const char *sym)
{
	struct msg m, r = { 0 };
	int ret;

	msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u8(&m, MAGNET_PROBE_A_TYPE, MAGNET_PROBE_KPROBE);
	put_str(&m, MAGNET_PROBE_A_SYMBOL, sym);
	put_str(&m, MAGNET_PROBE_A_HANDLER, "sock");
	end(&m);
	ret = talk(&m, &r, NULL, NULL);
	if (ret)
		die("add %s with the sock handler: %s (%s)", sym, strerror(-ret), errmsg);
	/* the sock handler takes no arguments */
	msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u8(&m, MAGNET_PROBE_A_TYPE, MAGNET_PROBE_KPROBE);
	put_str(&m, MAGNET_PROBE_A_SYMBOL, sym);
	put_str(&m, MAGNET_PROBE_A_NAME, "sock-with-args");
	put_u8(&m, MAGNET_PROBE_A_NARGS, 2);
	put_str(&m, MAGNET_PROBE_A_HANDLER, "sock");
	end(&m);
	expect_err(talk(&m, NULL, NULL, NULL), EINVAL, "sock", "sock handler with args");
	printf("added %s with the sock handler\n", sym);
	return 0;
}

/* ---- the skb handler ---- */

static int skb_add(int type, const char *sym, const char *name)
{
	return probe_add_handler(type, sym, 0, 0, name, "skb");
}

/*
 * The skb handler's refusals: no struct sk_buff * parameter per BTF, a
 * kretprobe, an offset, arguments, a capture argument, a capture larger
 * than a record; and where the skb is not the first parameter, the one BTF
 * names is found.
 */
static int cmd_skb_check(void)
{
	struct msg m;
	int id;

	expect_err(skb_add(MAGNET_PROBE_KPROBE, "ksys_read", NULL), EINVAL, "struct sk_buff",
		   "skb handler on ksys_read (no struct sk_buff *)");
	expect_err(skb_add(MAGNET_PROBE_KRETPROBE, "ip_rcv", NULL), EINVAL, "function entry",
		   "skb handler on a kretprobe");
	msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u8(&m, MAGNET_PROBE_A_TYPE, MAGNET_PROBE_KPROBE);
	put_str(&m, MAGNET_PROBE_A_SYMBOL, "ip_rcv");
	put_u32(&m, MAGNET_PROBE_A_OFFSET, 4);
	put_str(&m, MAGNET_PROBE_A_HANDLER, "skb");
	end(&m);
	expect_err(talk(&m, NULL, NULL, NULL), EINVAL, "function entry", "skb handler at an offset");
	expect_err(probe_add_handler(MAGNET_PROBE_KPROBE, "ip_rcv", 2, 0, NULL, "skb"), EINVAL,
		   "without args", "skb handler with args");
	msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
	nest(&m, MAGNET_A_PROBE);
	put_u8(&m, MAGNET_PROBE_A_TYPE, MAGNET_PROBE_KPROBE);
	put_str(&m, MAGNET_PROBE_A_SYMBOL, "ip_rcv");
	put_u16(&m, MAGNET_PROBE_A_CAPTURE_LEN, 64);
	put_u8(&m, MAGNET_PROBE_A_CAPTURE_ARG, 0);
	put_str(&m, MAGNET_PROBE_A_HANDLER, "skb");
	end(&m);
	expect_err(talk(&m, NULL, NULL, NULL), EINVAL, "CAPTURE_ARG", "skb handler with CAPTURE_ARG");
	for (int len = 4073; len <= 4074; len++) {
		msg_init(&m, family, MAGNET_CMD_PROBE_ADD, 0);
		nest(&m, MAGNET_A_PROBE);
		put_u8(&m, MAGNET_PROBE_A_TYPE, MAGNET_PROBE_KPROBE);
		put_str(&m, MAGNET_PROBE_A_SYMBOL, "ip_rcv");
		put_u16(&m, MAGNET_PROBE_A_CAPTURE_LEN, len);
		put_str(&m, MAGNET_PROBE_A_HANDLER, "skb");
		end(&m);
		expect_err(talk(&m, NULL, NULL, NULL), EINVAL, "4072", "skb capture past a record");
	}
	/* The sk_buff * is the second parameter here, the third of ip_output. */
	id = skb_add(MAGNET_PROBE_KPROBE, "udp_queue_rcv_skb", NULL);
	if (id < 0)
		die("skb handler on udp_queue_rcv_skb(sk, skb): %s (%s)", strerror(-id), errmsg);
	probe_del(id);
	printf("skb: handler accepted on udp_queue_rcv_skb(sk, skb)\n");
	return 0;
}

/* What one probe must have recorded of each datagram (cmd_skb_udp). */
struct skb_expect {
	char name[64];
	int id;
	unsigned int dir;	/* enum magnet_skb_direction */
	uint32_t ifindex;
	int hoff;		/* IP header's offset from skb->data */
	int count;		/* records expected per datagram: 1, or 0 (filtered) */
	int observe;		/* PROBE:?: print what is seen, assert only content */
	unsigned long others;	/* records of other packets (or unreadable) */
	uint64_t *ids;		/* abstract id, per datagram */
	int *seen;
};

static unsigned char skb_pattern(uint32_t seq, uint32_t k)
{
	return (unsigned char)(seq * 7 + k * 13 + (k >> 8));
}

/* Drain every CPU's ring; hand each record to @each. */
static void skb_read_rings(void (*each)(const struct magnet_record *r, void *ctx), void *ctx)
{
	static unsigned char rbuf[1 << 20] __attribute__((aligned(8)));
	char path[64], err[256];

	for (int cpu = 0;; cpu++) {
		int rfd;
		ssize_t n;

		/* As the tools open them: debugfs, else /dev/magnet (lockdown). */
		rfd = mg_sensor_open_cpu("/sys/kernel/debug/magnet", cpu, O_RDONLY | O_NONBLOCK,
					 path, sizeof(path), err, sizeof(err));
		if (rfd < 0) {
			if (rfd == -ENOENT)
				return;
			die("open %s", err);
		}
		while ((n = read(rfd, rbuf, sizeof(rbuf))) > 0) {
			for (ssize_t off = 0; off < n;) {
				const struct magnet_record *r = (const void *)(rbuf + off);

				if (r->size < MAGNET_RECORD_HEADER || r->size % 8 || off + r->size > n)
					die("cpu%d: bad record size %u at %zd", cpu, r->size, off);
				if (each)
					each(r, ctx);
				off += r->size;
			}
		}
		if (n < 0 && errno != EAGAIN)
			die("read %s: %s", path, strerror(errno));
		close(rfd);
	}
}

struct skb_run {
	struct skb_expect *e;
	int ne;
	int n, size, cap;
	uint16_t sport, dport;
	unsigned long ours, others;
};

static void skb_each(const struct magnet_record *r, void *ctx)
{
	struct skb_run *run = ctx;
	const struct magnet_skb *s = (const void *)r->payload;
	const unsigned char *d = s->data, *ip, *udp, *pl;
	struct skb_expect *e = NULL;
	uint32_t iplen = 28 + run->size, seq, want, k;

	for (int i = 0; i < run->ne; i++)
		if (run->e[i].id == r->event_id)
			e = &run->e[i];
	if (!e)
		return;
	if ((r->flags & ~MAGNET_REC_INTR) != MAGNET_HANDLER_SKB << MAGNET_REC_HANDLER_SHIFT)
		die("%s: record flags %#x", e->name, r->flags);
	if (r->size != MAGNET_RECORD_HEADER + sizeof(*s) + ((run->cap + 7) & ~7))
		die("%s: record size %u for a capture of %d", e->name, r->size, run->cap);
	for (k = s->caplen; k < r->size - MAGNET_RECORD_HEADER - sizeof(*s); k++)
		if (d[k])
			die("%s: byte %u past caplen %u not zero", e->name, k, s->caplen);
	if (!run->cap) {
		/* Metadata only: count what is on the expected interface. */
		if (s->caplen || s->layer != MAGNET_SKB_LAYER_NETWORK)
			die("%s: capture 0 gave caplen %u layer %u", e->name, s->caplen, s->layer);
		run->ours++;
		e->seen[0]++;
		return;
	}
	ip = d;
	udp = d + 20;
	pl = d + 28;
	/* Ours: IPv4 UDP to our port; the rest of the node's traffic is not. */
	if (s->layer != MAGNET_SKB_LAYER_NETWORK || s->caplen < 32 || ip[0] != 0x45 ||
	    ip[9] != IPPROTO_UDP || (udp[2] << 8 | udp[3]) != run->dport) {
		run->others++;
		e->others++;
		return;
	}
	run->ours++;
	seq = (uint32_t)pl[0] << 24 | pl[1] << 16 | pl[2] << 8 | pl[3];
	if (seq >= (uint32_t)run->n)
		die("%s: datagram number %u out of range", e->name, seq);
	if (e->seen[seq]++)
		die("%s: datagram %u recorded twice", e->name, seq);
	e->ids[seq] = r->abstract_id;
	want = iplen < (uint32_t)run->cap ? iplen : (uint32_t)run->cap;
	if (e->observe && e->seen[seq] == 1) {
		printf("skb: %s: datagram %u: len %u (IP length %+d) caplen %u ifindex %u dir %u proto %#x flags %#x\n",
		       e->name, seq, s->len, (int)(s->len - iplen), s->caplen, s->ifindex,
		       s->direction, ntohs(s->protocol), r->flags);
		want = s->caplen;	/* fragments: the IP packet is shorter */
		iplen = (uint32_t)(ip[2] << 8 | ip[3]);
		if (want < 32 || want > iplen)
			return;
	}
	if (e->observe)
		goto content;
	if (s->caplen != want)
		die("%s: caplen %u, want %u", e->name, s->caplen, want);
	if ((int64_t)s->len != (int64_t)iplen + e->hoff)
		die("%s: len %u, want %u", e->name, s->len, iplen + e->hoff);
	if (ntohs(s->protocol) != ETH_P_IP)
		die("%s: protocol %#x", e->name, ntohs(s->protocol));
	if (s->ifindex != e->ifindex)
		die("%s: ifindex %u, want %u", e->name, s->ifindex, e->ifindex);
	if (s->direction != e->dir)
		die("%s: direction %u, want %u", e->name, s->direction, e->dir);
content:
	if ((uint32_t)(ip[2] << 8 | ip[3]) != iplen || memcmp(ip + 12, "\x7f\0\0\x01\x7f\0\0\x01", 8) ||
	    (udp[0] << 8 | udp[1]) != run->sport || (udp[4] << 8 | udp[5]) != 8 + run->size)
		die("%s: datagram %u: IP/UDP header wrong (tot_len %u sport %u udp len %u)", e->name,
		    seq, ip[2] << 8 | ip[3], udp[0] << 8 | udp[1], udp[4] << 8 | udp[5]);
	for (k = 4; k < want - 28; k++)
		if (pl[k] != skb_pattern(seq, k))
			die("%s: datagram %u: payload byte %u is %#x, want %#x", e->name, seq, k,
			    pl[k], skb_pattern(seq, k));
}

static unsigned int skb_dir(const char *s)
{
	if (!strcmp(s, "out"))
		return MAGNET_SKB_DIR_OUT;
	if (!strcmp(s, "in"))
		return MAGNET_SKB_DIR_IN;
	if (!strcmp(s, "unknown"))
		return MAGNET_SKB_DIR_UNKNOWN;
	die("direction %s: want out, in or unknown", s);
}

/*
 * N UDP datagrams of SIZE bytes (a sequence number, then a pattern) to a
 * socket on 127.0.0.1, each received; then every probe named must have
 * recorded each exactly once (COUNT 1) or never (0), as the probe add'ed
 * with capture CAP: flags and size, caplen, len (the IP packet's length
 * plus HOFF, where the IP header lies from skb->data), protocol, IFINDEX,
 * DIR, the IP and UDP headers and the payload bytes captured. same=P,Q,..
 * asserts those probes saw each datagram as the same skb as P (abstract id).
 */
static int cmd_skb_udp(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct skb_expect e[8] = { 0 };
	struct skb_run run = { .e = e };
	socklen_t sl = sizeof(sa);
	const char *same = NULL;
	struct skb_expect *ref = NULL;
	unsigned char *pkt;
	int rx, tx;

	if (argc < 5)
		die("usage: nltest skb-udp N SIZE CAP PROBE:DIR:IFINDEX:HOFF:COUNT... [same=P,Q]");
	run.n = atoi(argv[2]);
	run.size = atoi(argv[3]);
	run.cap = atoi(argv[4]);
	if (run.n < 1 || run.size < 4 || run.size > 65000 || run.cap < 0)
		die("skb-udp: N >= 1, SIZE 4..65000");
	for (int i = 5; i < argc; i++) {
		struct skb_expect *x = &e[run.ne];
		char dir[16];

		if (!strncmp(argv[i], "same=", 5)) {
			same = argv[i] + 5;
			continue;
		}
		if (run.ne < 8 && sscanf(argv[i], "%63[^:]:%15s", x->name, dir) == 2 &&
		    !strcmp(dir, "?")) {
			x->observe = 1;
		} else {
			if (run.ne == 8 || sscanf(argv[i], "%63[^:]:%15[^:]:%u:%d:%d", x->name, dir,
						  &x->ifindex, &x->hoff, &x->count) != 5)
				die("bad probe expectation %s", argv[i]);
			x->dir = skb_dir(dir);
		}
		x->id = find_probe_by_name(x->name);
		if (x->id < 0)
			die("no probe named %s", x->name);
		x->ids = calloc(run.n, sizeof(*x->ids));
		x->seen = calloc(run.n, sizeof(*x->seen));
		run.ne++;
	}
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(rx, (struct sockaddr *)&sa, &sl) ||
	    connect(tx, (struct sockaddr *)&sa, sizeof(sa)))
		die("UDP sockets: %s", strerror(errno));
	run.dport = ntohs(sa.sin_port);
	sl = sizeof(sa);
	if (getsockname(tx, (struct sockaddr *)&sa, &sl))
		die("getsockname: %s", strerror(errno));
	run.sport = ntohs(sa.sin_port);
	pkt = malloc(run.size);
	skb_read_rings(NULL, NULL);	/* what came before is not ours */
	for (int s = 0; s < run.n; s++) {
		pkt[0] = s >> 24, pkt[1] = s >> 16, pkt[2] = s >> 8, pkt[3] = s;
		for (int k = 4; k < run.size; k++)
			pkt[k] = skb_pattern(s, k);
		if (send(tx, pkt, run.size, 0) != run.size)
			die("send %d bytes: %s", run.size, strerror(errno));
		if (recv(rx, pkt, run.size, 0) != run.size)
			die("recv: %s", strerror(errno));
	}
	skb_read_rings(skb_each, &run);
	for (int i = 0; i < run.ne; i++) {
		int got = 0;

		for (int s = 0; s < run.n; s++)
			got += e[i].seen[s];
		if (e[i].observe)
			printf("skb: %s: %d records of our %d datagrams, %lu of others\n",
			       e[i].name, got, run.n, e[i].others);
		else if (!run.cap ? got < run.n * e[i].count : got != run.n * e[i].count)
			die("%s: %d records of our %d datagrams, want %d (%lu of others)", e[i].name,
			    got, run.n, run.n * e[i].count, e[i].others);
		printf("skb: %s recorded %d of %d datagrams of %d bytes (capture %d)\n", e[i].name,
		       got, run.n, run.size, run.cap);
	}
	for (const char *p = same; p && *p;) {
		size_t l = strcspn(p, ",");
		struct skb_expect *a = NULL, *b;

		for (int i = 0; i < run.ne; i++)
			if (strlen(e[i].name) == l && !strncmp(e[i].name, p, l))
				a = &e[i];
		if (!a)
			die("same=: %.*s is not a probe of this run", (int)l, p);
		if (!ref) {
			ref = a;
			p += l + (p[l] == ',');
			continue;
		}
		b = ref;
		for (int s = 0; s < run.n; s++)
			if (a->ids[s] != b->ids[s])
				die("datagram %d: %s saw skb %#llx, %s %#llx", s, b->name,
				    (unsigned long long)b->ids[s], a->name,
				    (unsigned long long)a->ids[s]);
		printf("skb: %s and %s saw each datagram as the same skb\n", b->name, a->name);
		p += l + (p[l] == ',');
	}
	printf("skb: %lu records of ours, %lu of other packets\n", run.ours, run.others);
	return 0;
}

static void skb_print(const struct magnet_record *r, void *ctx)
{
	const struct magnet_skb *s = (const void *)r->payload;

	(void)ctx;
	if (r->event_id < MAGNET_EVENT_FIRST_DYNAMIC || MAGNET_REC_HANDLER(r->flags) != MAGNET_HANDLER_SKB)
		return;
	printf("%u skb=%#llx len %u caplen %u ifindex %u proto %#06x dir %u layer %u%s:",
	       r->event_id, (unsigned long long)r->abstract_id, s->len, s->caplen, s->ifindex,
	       ntohs(s->protocol), s->direction, s->layer, r->flags & MAGNET_REC_INTR ? " intr" : "");
	for (uint32_t k = 0; k < s->caplen && k < 64; k++)
		printf("%s%02x", k % 4 ? "" : " ", s->data[k]);
	putchar('\n');
}

/* Drain the rings, one line per skb record: to look at a path's packets. */
static int cmd_skb_dump(void)
{
	skb_read_rings(skb_print, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: nltest filters|sampling|alarms|errors|perm|kapi|fuzz N|cycles N|"
			"add-sock SYM|alarm-perm|ids|sock-check|kapi-len|resize|skb-check|skb-dump|\n"
			"skb-udp N SIZE CAP PROBE:DIR:IFINDEX:HOFF:COUNT... [same=P,Q]\n");
		return 1;
	}
	nl_open();
	resolve();
	if (!strcmp(argv[1], "filters"))
		return cmd_filters();
	if (!strcmp(argv[1], "sampling"))
		return cmd_sampling();
	if (!strcmp(argv[1], "alarms"))
		return cmd_alarms();
	if (!strcmp(argv[1], "errors"))
		return cmd_errors();
	if (!strcmp(argv[1], "perm"))
		return cmd_perm();
	if (!strcmp(argv[1], "kapi"))
		return cmd_kapi();
	if (!strcmp(argv[1], "fuzz") && argc > 2)
		return cmd_fuzz(atoi(argv[2]));
	if (!strcmp(argv[1], "cycles") && argc > 2)
		return cmd_cycles(atoi(argv[2]));
	if (!strcmp(argv[1], "add-sock") && argc > 2)
		return cmd_add_sock(argv[2]);
	if (!strcmp(argv[1], "alarm-perm"))
		return cmd_alarm_perm();
	if (!strcmp(argv[1], "ids"))
		return cmd_ids();
	if (!strcmp(argv[1], "sock-check"))
		return cmd_sock_check();
	if (!strcmp(argv[1], "kapi-len"))
		return cmd_kapi_len();
	if (!strcmp(argv[1], "resize"))
		return cmd_resize();
	if (!strcmp(argv[1], "skb-check"))
		return cmd_skb_check();
	if (!strcmp(argv[1], "skb-udp"))
		return cmd_skb_udp(argc, argv);
	if (!strcmp(argv[1], "skb-dump"))
		return cmd_skb_dump();
	fprintf(stderr, "nltest: unknown command %s\n", argv[1]);
	return 1;
}
