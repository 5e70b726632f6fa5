// SPDX-License-Identifier: GPL-2.0
/*
 * gen-stream: write a fake magnet directory of synthetic rings for the
 * end-to-end test (tests/unit/t-tools.sh): DIR/cpuN, probes, version,
 * stats. On stdout it prints what magnet-dump should print for it: the
 * records in merged order, formatted here independently of lib/print.c so
 * the test checks the printer too.
 *
 * Timestamps move in steps of 0, 5, 10 or 15 ns, so equal timestamps occur
 * within a CPU (stream order must hold) and across CPUs (lower CPU first).
 * abstract_id = cpu << 32 | sequence number identifies every record.
 *
 * Some probes capture memory (the probes file's 7th column): records carry
 * their capture length of mixed text and binary bytes, 1 in 10 of them
 * unreadable (len 0). The 4000-byte one is rare, to keep the files small.
 *
 * One probe uses the "sock" handler (IPv4, IPv6 and non-inet sockets, any
 * protocol and state) and one is a kernel module's custom event whose raw
 * records hold 0..200 bytes.
 *
 * Records name their threads as the module does (kmod/buffer.c,
 * mg_name_task): per CPU, slot pid % MAGNET_TASK_SLOTS, a TASK record in
 * front of a record whose thread the slot does not hold under its comm.
 * Threads: a few busy ones, many others sharing slots, pid 0 ("swapper/N",
 * often in interrupt context); they rename themselves (exec) and move
 * between cgroups (some ids with a high half). With -L, some TASK records
 * are missing (as when another reader consumed them: a LOST record goes
 * in front of the record that follows, the slot stays as it was), so that
 * record's comm is unknown, "?"; after a LOST record reporting overwritten
 * records every slot of its CPU is forgotten, by the module and readers. A lost TASK record is only ever a thread's first naming in the
 * slot, never a rename: a rename whose TASK record is lost is a hole in
 * the module's rule (test_tasks.c counts it), not something to print.
 * On stdout the TASK records' lines are there too (magnet-dump -T);
 * -J FILE also writes, per line, the truth as JSON for the JSON checks.
 *
 * gen-stream -X FILE writes a crafted trace file instead (see hostile()).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "record.h"
#include "trace.h"

static const struct {
	unsigned int id;
	const char *type;
	const char *target;
	const char *name;		/* the probe's, as magnet/probes lists it */
	unsigned int nargs;
	unsigned int cap_len, cap_arg;	/* cap_len 0: no capture */
	unsigned int handler;		/* enum magnet_handler */
} probes[] = {
	{ 16, "kprobe", "tcp_sendmsg", "tcp_sendmsg", 3, 0, 0, 0 },
	{ 17, "kretprobe", "tcp_sendmsg", "tcp_sendmsg%return", 1, 0, 0, 0 },
	{ 18, "kprobe", "vfs_write", "vfs_write", 6, 0, 0, 0 },
	{ 19, "kretprobe", "do_sys_openat2", "do_sys_openat2%return", 0, 0, 0, 0 },
	{ 20, "kprobe", "schedule", "schedule", 0, 0, 0, 0 },
	{ 21, "kprobe", "ksys_write", "ksys_write", 3, 65, 1, 0 },
	{ 22, "kretprobe", "ksys_read", "read_done", 3, 7, 1, 0 },
	{ 23, "kprobe", "do_unlinkat", "do_unlinkat", 2, 1, 1, 0 },
	{ 24, "kretprobe", "copy_to_user", "copy_to_user%return", 0, 64, 0, 0 },
	{ 25, "kprobe", "sock_sendmsg", "sock_sendmsg", 6, 4000, 5, 0 },
	{ 26, "kprobe", "tcp_cleanup_rbuf", "tcp_cleanup_rbuf", 0, 0, 0, MAGNET_HANDLER_SOCK },
	{ 27, "custom", "mymod_request", "mymod_request", 0, 0, 0, MAGNET_HANDLER_RAW },
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

struct line {
	unsigned long long ts;
	unsigned int cpu;
	unsigned long seq;
	char *text;
	char *truth;		/* -J: the line's JSON truth */
};

static struct line *lines;
static unsigned long nlines;

/* One record into a CPU's file, and its line for the expected output. */
static void emit(FILE *f, const void *buf, ssize_t len, unsigned long long ts,
		 unsigned int cpu, unsigned long *rseq, const char *text,
		 const char *truth)
{
	if (len < 0 || fwrite(buf, len, 1, f) != 1) {
		fprintf(stderr, "gen-stream: encode/write failed\n");
		exit(2);
	}
	lines[nlines].ts = ts;
	lines[nlines].cpu = cpu;
	lines[nlines].seq = (*rseq)++;
	lines[nlines].text = strdup(text);
	lines[nlines].truth = strdup(truth);
	nlines++;
}

static unsigned long long rng_state;

/* Threads' names: spaces, a tab, "?", UTF-8, a byte that is not. */
static const char *const comms[] = {
	"bash", "nginx: worker", "kworker/1:0H", "?", "caf\xc3\xa9", "bad\xff",
	"tab\tx", "0123456789abcde", "back\\slash", "python3", "a=b c",
	"systemd-journal", "x",
};
#define NCOMMS (sizeof(comms) / sizeof(comms[0]))
#define NTHREADS 200
#define NHOT 8

struct thread {
	unsigned int pid, tgid;
	unsigned long long cgroup;
	const char *comm;
};

struct slot {
	bool valid;
	unsigned int pid;
	const char *comm;
};

/*
 * docs/magnet-dump.md's text form of a comm, from the spec: one word,
 * "\\" for a backslash, \xNN for spaces, controls and bytes that are not
 * UTF-8 (the only multibyte character used is \xc3\xa9), "?" unknown and
 * \x3f for a comm that is "?".
 */
static int fmt_comm(char *out, size_t size, const char *comm)
{
	const unsigned char *c = (const unsigned char *)comm;
	int pos = 0;

	if (!comm)
		return snprintf(out, size, "?");
	if (!strcmp(comm, "?"))
		return snprintf(out, size, "\\x3f");
	for (; *c; c++) {
		if (*c == '\\') {
			pos += snprintf(out + pos, size - pos, "\\\\");
		} else if (*c == 0xc3 && c[1] == 0xa9) {
			pos += snprintf(out + pos, size - pos, "\xc3\xa9");
			c++;
		} else if (*c <= ' ' || *c >= 0x7f) {
			pos += snprintf(out + pos, size - pos, "\\x%02x", *c);
		} else {
			pos += snprintf(out + pos, size - pos, "%c", *c);
		}
	}
	return pos;
}

/* xorshift64*: deterministic across libcs, unlike rand(). */
static unsigned long long rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: gen-stream -d DIR [-C CPU,CPU...] [-n RECORDS] [-s SEED] [-L LOST_EVERY]\n"
			"                  [-c mono|tsc] [-k TSC_KHZ] [-J TRUTH]\n"
			"       gen-stream -X FILE\n");
	exit(1);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static bool tsc;

static char *fmt_ts(char *buf, unsigned long long ts)
{
	if (tsc)
		sprintf(buf, "%llu", ts);
	else
		sprintf(buf, "%llu.%09llu", ts / 1000000000ULL, ts % 1000000000ULL);
	return buf;
}

/*
 * Losses pending on a CPU (full ring) become a LOST record in front of the
 * next record that fits, as the ring writes it; its size, or 0 if none.
 */
static ssize_t flush_lost(FILE *f, struct magnet_lost *pending, struct magnet_lost *sum,
			  unsigned long long ts, unsigned int cpu, unsigned long *rseq)
{
	char text[256], tsb[32];
	__u64 lb[16];
	ssize_t len;

	if (!mg_lost_total(pending))
		return 0;
	len = mg_record_encode_lost(lb, sizeof(lb),
				    &(struct mg_record_hdr){ .cpu = cpu, .timestamp = ts },
				    pending);
	snprintf(text, sizeof(text), "%s %u LOST full=%llu too_big=0 nesting=0 overwritten=0",
		 fmt_ts(tsb, ts), cpu, (unsigned long long)pending->full);
	mg_lost_add(sum, pending);
	memset(pending, 0, sizeof(*pending));
	emit(f, lb, len, ts, cpu, rseq, text, "{\"lost\":true}");
	return len;
}

/*
 * docs/magnet-dump.md's text form of capture and raw data, written from
 * the spec rather than shared with lib/print.c: at most 64 bytes, escaped.
 */
static int fmt_data(char *out, size_t size, const unsigned char *data,
		    unsigned int len)
{
	unsigned int i, n = len < 64 ? len : 64;
	int pos = snprintf(out, size, " \"");

	for (i = 0; i < n; i++) {
		if (data[i] == '"')
			pos += snprintf(out + pos, size - pos, "\\\"");
		else if (data[i] == '\\')
			pos += snprintf(out + pos, size - pos, "\\\\");
		else if (data[i] >= ' ' && data[i] <= '~')
			pos += snprintf(out + pos, size - pos, "%c", data[i]);
		else
			pos += snprintf(out + pos, size - pos, "\\x%02x", data[i]);
	}
	return pos + snprintf(out + pos, size - pos, "\"%s", len > 64 ? "..." : "");
}

static int fmt_capture(char *out, size_t size, const unsigned char *data,
		       unsigned int len, unsigned int arg)
{
	int pos = snprintf(out, size, " cap=%u@arg%u", len, arg);

	return pos + fmt_data(out + pos, size - pos, data, len);
}

/* Mixed text and binary: quotes, backslashes and other bytes. */
static void random_data(unsigned char *data, unsigned int len)
{
	static const char ascii[] = "magnet \"traces\" C:\\kernel ~{}";
	unsigned int k;

	for (k = 0; k < len; k++)
		data[k] = rnd() % 4 ? (unsigned char)ascii[rnd() % (sizeof(ascii) - 1)]
				    : rnd() % 256;
}

/* A random "sock" payload and its text, per docs/magnet-dump.md. */
static int random_sock(struct magnet_sock *s, char *out, size_t size)
{
	static const char *const states[] = {
		NULL, "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
		"FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK",
		"LISTEN", "CLOSING", "NEW_SYN_RECV", "BOUND_INACTIVE",
	};
	static const __u16 families[] = { AF_INET, AF_INET, AF_INET6, 0 };
	char src[64], dst[64], proto[16], state[32];
	unsigned int i, alen;

	memset(s, 0, sizeof(*s));
	s->family = families[rnd() % 4];
	s->protocol = rnd() % 8 ? (rnd() % 3 ? 6 : 17) : rnd() % 256;
	s->state = rnd() % 16;
	s->size = rnd() % 3 ? rnd() % 65536 : rnd();
	if (s->state && s->state < sizeof(states) / sizeof(states[0]))
		snprintf(state, sizeof(state), "%s(%u)", states[s->state], s->state);
	else
		snprintf(state, sizeof(state), "unknown(%u)", s->state);
	if (!s->family)
		return snprintf(out, size, " sock - size=%llu state=%s",
				(unsigned long long)s->size, state);
	s->sport = htons(rnd() % 65536);
	s->dport = htons(rnd() % 4 ? 80 : rnd() % 65536);
	alen = s->family == AF_INET ? 4 : 16;
	for (i = 0; i < alen; i++) {
		/* Runs of zeros, so IPv6 addresses compress with "::". */
		s->saddr[i] = rnd() % 3 ? 0 : rnd();
		s->daddr[i] = rnd() % 3 ? 0 : rnd();
	}
	inet_ntop(s->family, s->saddr, src, sizeof(src));
	inet_ntop(s->family, s->daddr, dst, sizeof(dst));
	if (s->protocol == 6 || s->protocol == 17)
		snprintf(proto, sizeof(proto), "%s", s->protocol == 6 ? "tcp" : "udp");
	else if (s->protocol == 1 || s->protocol == 58)
		snprintf(proto, sizeof(proto), "%s", s->protocol == 1 ? "icmp" : "icmpv6");
	else
		snprintf(proto, sizeof(proto), "ipproto%u", s->protocol);
	if (s->family == AF_INET)
		return snprintf(out, size, " sock %s %s:%u -> %s:%u size=%llu state=%s",
				proto, src, ntohs(s->sport), dst, ntohs(s->dport),
				(unsigned long long)s->size, state);
	return snprintf(out, size, " sock %s [%s]:%u -> [%s]:%u size=%llu state=%s",
			proto, src, ntohs(s->sport), dst, ntohs(s->dport),
			(unsigned long long)s->size, state);
}

/*
 * A trace as nobody's magnet-read writes it, for the escaping tests: its
 * hostname, release, clock and probe names hold terminal escapes (OSC,
 * CSI, C1 CSI), controls, quotes, backslashes, valid UTF-8 and bytes that
 * are not UTF-8; one record of each probe; and a start 2^63 ns after the
 * first record, so that -w works out a clock difference of INT64_MIN.
 */
static void hostile(const char *path)
{
	static const char probes_text[] =
		"16\tkprobe\tevil\x1b]0;owned\x07\x1b[2J\t1\t1\t0\n"
		"17\tkret\xc2\x9b" "31m\tbad\xff\xc0\xafutf8\xed\xa0\x80\xe2\x82\t0\t1\t0\n"
		"18\tcustom\tq\"uo\\te\r\x7f caf\xc3\xa9\xe2\x80\xa8\t0\t1\t0\n";
	struct mg_trace_info info = {
		.ncpus = 1,
		.start_realtime_ns = 1700000000000000000ULL,
		.start_clock_ns = 1016 + (1ULL << 63),
		.clock = "mono\x1b[5m",
		.hostname = "host\x1b[31mred\xff\x9b" "1m",
		.release = "6.1\r\x1b[Kfake\xc2\x85",
		.probes = probes_text,
		.probes_len = sizeof(probes_text) - 1,
	};
	struct mg_trailer_cpu tc = { .cpu = 0, .records = 3 };
	struct mg_trailer tr = {
		.stop_realtime_ns = info.start_realtime_ns + 1,
		.stop_clock_ns = info.start_clock_ns + 1,
		.ncpus = 1,
		.cpu = &tc,
	};
	__u64 buf[3 * 64], arg = 7;
	size_t len = 0;
	unsigned int id;
	ssize_t n;
	int fd;

	for (id = 16; id <= 18; id++) {
		struct mg_record_hdr h = {
			.event_id = id,
			.timestamp = 1000 + id,
			.pid = 100,
			.tgid = 100,
		};

		n = mg_record_encode_kprobe((char *)buf + len, sizeof(buf) - len,
					    &h, &arg, 1);
		if (n < 0)
			die("encode");
		len += n;
	}
	tc.bytes = len;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path);
	if (mg_trace_write_header(fd, &info) ||
	    mg_trace_write_chunk(fd, 0, buf, len) ||
	    mg_trace_write_trailer(fd, &tr) || close(fd))
		die(path);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *cpulist = "0,1", *clock = "mono";
	unsigned long tsc_khz = 2500000;
	unsigned long n = 1000, lost_every = 0, i;
	unsigned int cpus[256], ncpus = 0, c;
	static struct thread thr[NTHREADS], idle[256];
	static struct slot slots[256][MAGNET_TASK_SLOTS];
	unsigned int hot[NHOT];
	const char *truth_path = NULL;
	char path[4096], *s, *tok;
	FILE *f, *stats, *truth = NULL;
	int opt;

	rng_state = 1;
	while ((opt = getopt(argc, argv, "d:C:n:s:L:c:k:X:J:")) != -1) {
		switch (opt) {
		case 'X': hostile(optarg); return 0;
		case 'd': dir = optarg; break;
		case 'C': cpulist = optarg; break;
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 's': rng_state = strtoull(optarg, NULL, 0) | 1; break;
		case 'L': lost_every = strtoul(optarg, NULL, 0); break;
		case 'c': clock = optarg; break;
		case 'k': tsc_khz = strtoul(optarg, NULL, 0); break;
		case 'J': truth_path = optarg; break;
		default: usage();
		}
	}
	if (!dir || optind != argc)
		usage();
	tsc = !strcmp(clock, "tsc");
	s = strdup(cpulist);
	for (tok = strtok(s, ","); tok && ncpus < 256; tok = strtok(NULL, ","))
		cpus[ncpus++] = strtoul(tok, NULL, 0);
	free(s);
	if (mkdir(dir, 0755) && errno != EEXIST)
		die(dir);

	snprintf(path, sizeof(path), "%s/probes", dir);
	f = fopen(path, "w");
	if (!f)
		die(path);
	for (i = 0; i < NPROBES; i++) {
		fprintf(f, "%u\t%s\t%s\t%u\t%lu\t0", probes[i].id,
			probes[i].type, probes[i].target, probes[i].nargs, n);
		if (probes[i].cap_len)
			fprintf(f, "\t%u@%u", probes[i].cap_len, probes[i].cap_arg);
		else
			fputs("\t-", f);
		fprintf(f, "\t%s\n", probes[i].name);
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/version", dir);
	f = fopen(path, "w");
	if (!f)
		die(path);
	fprintf(f, "magnet test\nformat %d\nclock %s\ncpus %u\ntsc_khz %lu\n",
		MAGNET_FORMAT_VERSION, clock, ncpus, tsc_khz);
	fclose(f);
	snprintf(path, sizeof(path), "%s/stats", dir);
	stats = fopen(path, "w");
	if (!stats)
		die(path);
	fprintf(stats, "cpu\twritten\tbytes\tlost_full\tlost_too_big\tlost_nesting\toverwritten\n");

	/*
	 * The threads: distinct pids, many sharing a slot; processes of one
	 * or more threads in one cgroup; pid 0 per CPU. Drawn after the
	 * records' first numbers, so seeds keep their old streams' shape.
	 */
	for (i = 0; i < NTHREADS; i++) {
		unsigned int j;

		do {
			thr[i].pid = 1 + rnd() % (i < NHOT ? 300 : 30000);
			for (j = 0; j < i && thr[j].pid != thr[i].pid; j++)
				;
		} while (j < i);
		thr[i].tgid = i && rnd() % 3 == 0 ? thr[i - 1].tgid : thr[i].pid;
		thr[i].cgroup = i && thr[i].tgid == thr[i - 1].tgid ? thr[i - 1].cgroup :
				rnd() % 8 ? 1 + rnd() % 5000 :
					    (1 + rnd() % 3ULL) << 32 | (rnd() % 100000);
		thr[i].comm = comms[rnd() % NCOMMS];
	}
	for (i = 0; i < NHOT; i++)
		hot[i] = i;
	for (c = 0; c < ncpus; c++) {
		char *name = malloc(24);

		if (!name)
			die("malloc");
		snprintf(name, 24, "swapper/%u", cpus[c]);
		idle[c].comm = name;
		idle[c].cgroup = 1;
	}

	lines = calloc(ncpus * n * 3 + 1, sizeof(*lines));
	if (!lines)
		die("calloc");
	if (truth_path) {
		truth = fopen(truth_path, "w");
		if (!truth)
			die(truth_path);
	}
	for (c = 0; c < ncpus; c++) {
		unsigned long long ts = 1000000000000ULL;
		unsigned long long bytes = 0;
		struct magnet_lost lsum = { 0 }, pending = { 0 };
		unsigned long seq = 0, rseq = 0;

		snprintf(path, sizeof(path), "%s/cpu%u", dir, cpus[c]);
		f = fopen(path, "w");
		if (!f)
			die(path);
		for (i = 0; i < n; i++) {
			__u64 buf[MAGNET_RECORD_MAX / 8], args[MAGNET_ARGS_MAX];
			struct mg_record_hdr h = {
				.cpu = cpus[c],
			};
			unsigned int p = rnd() % NPROBES, k, pick = rnd() % 100;
			unsigned char data[4000];
			struct mg_record_cap cap, *capp = NULL;
			char tsb[32], text[1024], jt[256], cm[128];
			struct thread *th;
			struct slot *sl;
			ssize_t len;
			int pos;

			/* The 4000-byte capture: 1 in 50 of its draws. */
			if (probes[p].cap_len > 1000 && rnd() % 50)
				p = 0;
			ts += 5 * (rnd() % 4);
			th = pick < 10 ? &idle[c] : pick < 85 ? &thr[hot[rnd() % NHOT]] :
			     &thr[rnd() % NTHREADS];
			if (th->pid && rnd() % 300 == 0)
				th->comm = comms[rnd() % NCOMMS];	/* exec */
			if (th->pid && rnd() % 500 == 0)
				th->cgroup = 1 + rnd() % 5000;		/* moved */
			if (rnd() % 400 == 0)
				hot[rnd() % NHOT] = rnd() % NTHREADS;
			h.pid = th->pid;
			h.tgid = th->tgid;
			h.cgroup = (__u32)th->cgroup;
			h.intr = rnd() % (th->pid ? 20 : 2) == 0;
			h.timestamp = ts;
			if (lost_every && i % lost_every == lost_every - 1) {
				struct magnet_lost l = {
					.full = rnd() % 7,
					.too_big = rnd() % 2,
					.nesting = rnd() % 2,
					.overwritten = rnd() % 3,
				};

				mg_lost_add(&l, &pending);
				memset(&pending, 0, sizeof(pending));
				h.pid = h.tgid = h.cgroup = 0;
				len = mg_record_encode_lost(buf, sizeof(buf), &h, &l);
				snprintf(text, sizeof(text), "%s %u LOST full=%llu too_big=%llu nesting=%llu overwritten=%llu",
					 fmt_ts(tsb, ts), cpus[c],
					 (unsigned long long)l.full,
					 (unsigned long long)l.too_big,
					 (unsigned long long)l.nesting,
					 (unsigned long long)l.overwritten);
				mg_lost_add(&lsum, &l);
				emit(f, buf, len, ts, cpus[c], &rseq, text, "{\"lost\":true}");
				bytes += len;
				/* A TASK record may have been overwritten: readers forget. */
				if (l.overwritten)
					memset(slots[c], 0, sizeof(slots[c]));
				continue;
			}

			/* mg_name_task: the slot must hold the thread under its comm. */
			sl = &slots[c][th->pid % MAGNET_TASK_SLOTS];
			if (!sl->valid || sl->pid != th->pid || strcmp(sl->comm, th->comm)) {
				bool first = !sl->valid || sl->pid != th->pid;

				if (lost_every && first && rnd() % 10 == 0) {
					pending.full++;		/* lost: slot unchanged */
				} else {
					struct mg_record_hdr th_h = h;

					th_h.abstract_id = th->cgroup;
					bytes += flush_lost(f, &pending, &lsum, ts, cpus[c], &rseq);
					th_h.timestamp = ts;
					len = mg_record_encode_task(buf, sizeof(buf), &th_h, th->comm);
					fmt_comm(cm, sizeof(cm), th->comm);
					snprintf(text, sizeof(text), "%s %u TASK %u/%u comm=%s cgroup=%u cgroup_id=%llu",
						 fmt_ts(tsb, ts), cpus[c], th->pid, th->tgid, cm,
						 (__u32)th->cgroup, th->cgroup);
					pos = snprintf(jt, sizeof(jt), "{\"task\":true,\"pid\":%u,\"cgroup\":%u,\"cgroup_id\":%llu,\"comm_hex\":",
						       th->pid, (__u32)th->cgroup, th->cgroup);
					for (k = 0; th->comm[k]; k++)
						pos += snprintf(jt + pos, sizeof(jt) - pos, "%s%02x",
								k ? "" : "\"", (unsigned char)th->comm[k]);
					snprintf(jt + pos, sizeof(jt) - pos, "\"}");
					emit(f, buf, len, ts, cpus[c], &rseq, text, jt);
					bytes += len;
					sl->valid = true;
					sl->pid = th->pid;
					sl->comm = th->comm;
				}
			}
			bytes += flush_lost(f, &pending, &lsum, ts, cpus[c], &rseq);

			h.timestamp = ts;
			h.event_id = probes[p].id;
			h.abstract_id = (__u64)cpus[c] << 32 | i;
			pos = snprintf(text, sizeof(text), "%s %u %u/%u %s(%u) abstract=0x%llx",
				       fmt_ts(tsb, ts), cpus[c], h.pid, h.tgid,
				       probes[p].name, probes[p].id,
				       (unsigned long long)h.abstract_id);
			if (probes[p].handler == MAGNET_HANDLER_SOCK) {
				struct magnet_sock sk;

				pos += random_sock(&sk, text + pos, sizeof(text) - pos);
				len = mg_record_encode_sock(buf, sizeof(buf), &h, &sk);
				goto done;
			}
			if (probes[p].handler == MAGNET_HANDLER_RAW) {
				unsigned int dlen = rnd() % 8 ? rnd() % 80 : rnd() % 201;

				random_data(data, dlen);
				len = mg_record_encode_raw(buf, sizeof(buf), &h, data, dlen);
				pos += snprintf(text + pos, sizeof(text) - pos, " raw len=%u", dlen);
				pos += fmt_data(text + pos, sizeof(text) - pos, data, dlen);
				goto done;
			}
			for (k = 0; k < probes[p].nargs; k++)
				args[k] = rnd() >> (rnd() % 64);
			pos += snprintf(text + pos, sizeof(text) - pos, " args=[");
			for (k = 0; k < probes[p].nargs; k++)
				pos += snprintf(text + pos, sizeof(text) - pos, "%s0x%llx",
						k ? "," : "", (unsigned long long)args[k]);
			pos += snprintf(text + pos, sizeof(text) - pos, "]");
			if (probes[p].cap_len) {
				random_data(data, probes[p].cap_len);
				cap.len = probes[p].cap_len;
				cap.arg = probes[p].cap_arg;
				cap.data = rnd() % 10 ? data : NULL;
				capp = &cap;
			}
			if (!strcmp(probes[p].type, "kretprobe")) {
				__s64 ret = (__s64)(rnd() % 200) - 100;
				__u64 lat = rnd() % 100000;

				len = mg_record_encode_kretprobe_cap(buf, sizeof(buf), &h, ret, lat,
								     args, probes[p].nargs, capp);
				pos += snprintf(text + pos, sizeof(text) - pos, " ret=%lld lat=%lluns",
						(long long)ret, (unsigned long long)lat);
			} else {
				len = mg_record_encode_kprobe_cap(buf, sizeof(buf), &h, args,
								  probes[p].nargs, capp);
			}
			if (capp)
				pos += fmt_capture(text + pos, sizeof(text) - pos, data,
						   cap.data ? cap.len : 0, cap.arg);
done:
			/* Named if the slot holds it (a lost TASK record: not). */
			{
				const char *known = sl->valid && sl->pid == th->pid ?
						    sl->comm : NULL;

				fmt_comm(cm, sizeof(cm), known);
				snprintf(text + pos, sizeof(text) - pos, "%s comm=%s cgroup=%u",
					 h.intr ? " intr" : "", cm, h.cgroup);
				pos = snprintf(jt, sizeof(jt), "{\"pid\":%u,\"cgroup\":%u,\"intr\":%s,\"comm_hex\":",
					       h.pid, h.cgroup, h.intr ? "true" : "false");
				if (!known)
					pos += snprintf(jt + pos, sizeof(jt) - pos, "null");
				for (k = 0; known && known[k]; k++)
					pos += snprintf(jt + pos, sizeof(jt) - pos, "%s%02x",
							k ? "" : "\"", (unsigned char)known[k]);
				snprintf(jt + pos, sizeof(jt) - pos, "%s}", known ? "\"" : "");
			}
			seq++;
			emit(f, buf, len, ts, cpus[c], &rseq, text, jt);
			bytes += len;
		}
		if (fclose(f))
			die(path);
		fprintf(stats, "%u\t%lu\t%llu\t%llu\t%llu\t%llu\t%llu\n", cpus[c], seq,
			bytes, (unsigned long long)lsum.full,
			(unsigned long long)lsum.too_big,
			(unsigned long long)lsum.nesting,
			(unsigned long long)lsum.overwritten);
	}
	fclose(stats);

	qsort(lines, nlines, sizeof(*lines), cmp_line);
	for (i = 0; i < nlines; i++) {
		puts(lines[i].text);
		if (truth)
			fprintf(truth, "%s\n", lines[i].truth);
		free(lines[i].text);
		free(lines[i].truth);
	}
	if (truth && fclose(truth))
		die(truth_path);
	free(lines);
	return 0;
}
