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
#include <linux/capability.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/magnet.h>

static int fd, family, alarm_group;
static unsigned int seq = 1;
static char errmsg[512];

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

static int probe_add(int type, const char *sym, int nargs, uint32_t flags, const char *name)
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

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: nltest filters|sampling|alarms|errors|perm|kapi|fuzz N|cycles N\n");
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
	fprintf(stderr, "nltest: unknown command %s\n", argv[1]);
	return 1;
}
