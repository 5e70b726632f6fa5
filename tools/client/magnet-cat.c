// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-cat: subscribe to magnetd (docs/protocol.md) and print what it
 * sends: records as text (decoded from binary frames by mg_print_record,
 * the one print path, so the lines are magnet-dump's), JSON lines as the
 * daemon writes them (-j), or the raw records (-b). docs/magnet-cat.md.
 *
 * Text lines name each record's thread from the TASK records the stream
 * carries (lib/tasks.h): every record is fed to the tables in stream
 * order; TASK records themselves print only with -T.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "mgclient.h"
#include "print.h"
#include "record.h"
#include "tasks.h"
#include "util.h"

#define PROG		"magnet-cat"
/* getopt_long value of --munge-socket, which has no short form. */
#define OPT_MUNGE_SOCKET	256
/* How long the daemon may take to answer HELLO, PROBES or SUBSCRIBE. */
#define REPLY_TIMEOUT_MS	10000
/*
 * Frames held while a refreshed probe table is on its way (see
 * want_names); past this they print with the names known so far.
 */
#define HOLD_MAX		(16U << 20)

enum out_mode { OUT_TEXT, OUT_JSON, OUT_RAW };

struct held {
	void *data;
	size_t len;
};

struct cat {
	const char *server;
	enum out_mode mode;
	bool tasks;			/* -T: print TASK records too */
	struct mg_tasks *names;		/* who wrote each record (text) */
	unsigned long long limit;	/* -n: event records, 0 = none */
	long long deadline_ms;		/* -t: CLOCK_MONOTONIC, 0 = none */
	char cmd[MGC_CMD_MAX + 1];	/* the SUBSCRIBE line */
	struct mgc_conn c;
	struct mgc_hello hello;
	struct mg_probe_table probes;
	struct mg_print_opts po;
	unsigned long long records;	/* event records out */
	unsigned long long lost;	/* records the kernel's LOST records report */
	unsigned long long dropped;	/* "D <n>": records magnetd dropped */
	bool done;			/* -n reached */
	/* text: a PROBES request for ids the table lacks, and frames held for it */
	bool refreshing;
	unsigned char asked[(MAGNET_EVENT_MAX + 1) / 8];
	struct held *held;
	size_t nheld, held_bytes;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

/* -h asks for it (stdout, 0); anything else is a usage error. */
__attribute__((noreturn))
static void usage(int status)
{
	fprintf(status ? stderr : stdout,
"usage: " PROG " [-s HOST:PORT] [-M] [-j | -b] [-n COUNT] [-t SECONDS]\n"
"       [FILTER...]\n"
"  -s, --server HOST:PORT  magnetd's address (default " MGC_DEFAULT_SERVER ");\n"
"                          IPv6 as [::1]:8650, a host name, or HOST alone\n"
"  -j, --json              print the daemon's JSON lines as they come\n"
"  -b, --raw               write the binary records to stdout (not a terminal)\n"
"  -n, --count COUNT       stop after COUNT event records\n"
"  -T, --tasks             also print TASK records (text and -j; every\n"
"                          record's line has its thread's comm already)\n"
"  -t, --time SECONDS      stop after this long (e.g. 10, 0.5)\n"
"  -M, --munge             authenticate with MUNGE even on loopback (a\n"
"                          server not on loopback always gets a credential)\n"
"      --munge-socket PATH munged's socket (libmunge's default)\n"
"FILTER is the protocol's filter (docs/protocol.md), its words joined by\n"
"spaces, e.g.: " PROG " 'probe == vfs_read && tgid == 1234'\n"
"Text output is magnet-dump's; a summary goes to stderr at the end.\n");
	exit(status);
}

__attribute__((format(printf, 2, 3), noreturn))
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mg_vdie(PROG, code, fmt, ap);
}

/* The filter words, joined; the SUBSCRIBE line around them. */
static void build_command(struct cat *k, int argc, char **argv)
{
	const char *fmt = k->mode == OUT_JSON ? "json" : "binary";
	size_t len;
	int i, n;

	snprintf(k->cmd, sizeof(k->cmd), "SUBSCRIBE");
	for (i = 0; i < argc; i++) {
		const unsigned char *p;

		for (p = (const unsigned char *)argv[i]; *p; p++)
			if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
				fprintf(stderr, PROG ": the filter holds a control character (0x%02x)\n",
					*p);
				usage(1);
			}
		len = strlen(k->cmd);
		n = snprintf(k->cmd + len, sizeof(k->cmd) - len, " %s", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(k->cmd) - len)
			break;
	}
	len = strlen(k->cmd);
	n = snprintf(k->cmd + len, sizeof(k->cmd) - len, " FORMAT %s", fmt);
	if (n < 0 || (size_t)n >= sizeof(k->cmd) - len) {
		fprintf(stderr, PROG ": the filter is too long (a command line holds %u bytes)\n",
			MGC_CMD_MAX);
		usage(1);
	}
}

/* ---- replies during setup ---- */

/* Lines of the server quoted in an error: this much of them. */
#define QUOTE_SHORT		200

/*
 * The daemon's ERR line, as it came but escaped (mgc_quote): neither a
 * server nor a name a user chose that an error echoes drives the terminal.
 */
__attribute__((noreturn))
static void die_err(const struct mgc_msg *m)
{
	char q[MGC_QUOTE_MAX];

	die(2, "%s", mgc_quote(q, sizeof(q), m->text, m->line_len, false));
}

/* The reply to cmd, which must be an OK: ERR is printed as it came. */
static void command(struct cat *k, const char *cmd, struct mgc_msg *m,
		    const char *when)
{
	int r = mgc_command(&k->c, cmd, m, REPLY_TIMEOUT_MS);

	if (r == 0)
		die(2, "magnetd at %s closed the connection %s", k->c.server, when);
	if (r < 0)
		die(2, "%s", k->c.err);
	if (m->kind == MGC_MSG_ERR)
		die_err(m);
}

static void hello(struct cat *k)
{
	char why[MGC_ERR_MAX], node[256];
	struct mgc_msg m;
	bool big;

	command(k, "HELLO", &m,
		"before replying to HELLO (is this host in its --allow list?)");
	if (mgc_parse_hello(m.text, m.line_len, &k->hello, why, sizeof(why)))
		die(2, "protocol error from %s: %s", k->c.server, why);
	if (k->hello.version != MGC_PROTO_VERSION)
		die(2, "magnetd at %s speaks protocol version %u; this " PROG " speaks %u",
		    k->c.server, k->hello.version, MGC_PROTO_VERSION);
	big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
	if (k->mode != OUT_JSON && k->hello.format != MAGNET_FORMAT_VERSION)
		die(2, "magnetd at %s sends record format %u; this " PROG " decodes format %u (-j works with any)",
		    k->c.server, k->hello.format, MAGNET_FORMAT_VERSION);
	if (k->mode != OUT_JSON && k->hello.big_endian != big)
		die(2, "magnetd at %s sends %s-endian records; this host is %s-endian (-j works across byte orders)",
		    k->c.server, k->hello.big_endian ? "big" : "little",
		    big ? "big" : "little");
	if (!k->hello.module_up)
		fprintf(stderr, PROG ": note: magnet is not loaded on %s; magnetd sends records once it is\n",
			mgc_escape(node, sizeof(node), k->hello.node));
}

static void load_probes(struct cat *k, const struct mgc_msg *m)
{
	char why[MGC_ERR_MAX];
	struct mg_probe_table t;

	if (mgc_parse_probes(m->all, m->all_len, &t, why, sizeof(why)))
		die(2, "protocol error from %s: %s", k->c.server, why);
	mg_probes_free(&k->probes);
	k->probes = t;
}

static void subscribe(struct cat *k)
{
	const char *want = k->mode == OUT_JSON ? "json" : "binary";
	char why[MGC_ERR_MAX], q[QUOTE_SHORT];
	struct mgc_kvs kv;
	struct mgc_msg m;
	const char *fmt;

	command(k, k->cmd, &m, "before replying to SUBSCRIBE");
	if (m.line_len < 14 || memcmp(m.text, "OK subscribed ", 14) ||
	    mgc_kvs_parse(&kv, m.text + 14, m.line_len - 14, why, sizeof(why)))
		die(2, "protocol error from %s: '%s' in reply to SUBSCRIBE",
		    k->c.server, mgc_quote(q, sizeof(q), m.text, m.line_len, false));
	fmt = mgc_kvs_get(&kv, "format");
	if (!fmt || strcmp(fmt, want))
		die(2, "protocol error from %s: asked for format %s, got '%s'",
		    k->c.server, want,
		    mgc_quote(q, sizeof(q), m.text, m.line_len, false));
	mgc_kvs_free(&kv);
}

/* ---- data ---- */

static void out_error(void)
{
	die(2, "writing output: %s", strerror(errno));
}

static void put_records(struct cat *k, const void *buf, size_t len)
{
	const struct magnet_record *r;
	size_t off = 0;
	int ret;

	while (!k->done && (ret = mg_record_next(buf, len, &off, &r)) == 1) {
		if (k->mode != OUT_RAW) {
			if (mg_tasks_feed(k->names, r) < 0)
				die(2, "out of memory");
			if ((!mg_record_is_task(r) || k->tasks) &&
			    mg_print_record(stdout, &k->po, r))
				out_error();
		}
		if (mg_record_is_lost(r)) {
			k->lost += mg_lost_total(mg_record_lost(r));
		} else if (mg_record_is_job_lost(r)) {
			k->lost += mg_record_job_lost(r);
		} else if (mg_record_is_task(r)) {
			continue;	/* not an event */
		} else if (++k->records == k->limit) {
			k->done = true;
		}
	}
	/*
	 * Raw: every record checked goes (a reader of the output names them
	 * by the TASK records), in one write: past the buffer, no copy.
	 */
	if (k->mode == OUT_RAW && off && fwrite(buf, off, 1, stdout) != 1)
		out_error();
	if (!k->done && ret < 0)
		die(2, "protocol error from %s: bad record at byte %zu of a %zu-byte frame: %s",
		    k->c.server, off, len, mg_record_strerror(ret));
}

/*
 * Does the frame hold an event id the probe table lacks, not asked for
 * yet? Probes added after magnet-cat started are the usual case: then
 * PROBES is asked again (replies come between data, so on this very
 * connection) and frames wait for it, rather than print "unknown".
 */
static bool want_names(struct cat *k, const void *buf, size_t len)
{
	const struct magnet_record *r;
	bool want = false;
	size_t off = 0;

	while (mg_record_next(buf, len, &off, &r) == 1) {
		unsigned int id = r->event_id;

		if (mg_record_is_meta(r) || mg_probes_find(&k->probes, id) ||
		    k->asked[id / 8] & (1U << id % 8))
			continue;
		k->asked[id / 8] |= 1U << id % 8;
		want = true;
	}
	return want;
}

static void put_held(struct cat *k)
{
	size_t i;

	for (i = 0; i < k->nheld; i++) {
		put_records(k, k->held[i].data, k->held[i].len);
		free(k->held[i].data);
	}
	k->nheld = 0;
	k->held_bytes = 0;
}

static void hold(struct cat *k, const void *buf, size_t len)
{
	struct held *h = realloc(k->held, (k->nheld + 1) * sizeof(*h));
	void *copy = malloc(len);	/* malloc's alignment keeps records readable */

	if (!h || !copy)
		die(2, "out of memory");
	k->held = h;
	memcpy(copy, buf, len);
	h[k->nheld].data = copy;
	h[k->nheld++].len = len;
	k->held_bytes += len;
	if (k->held_bytes > HOLD_MAX)
		put_held(k);
}

static void frame(struct cat *k, const struct mgc_msg *m)
{
	if (k->mode != OUT_TEXT) {
		put_records(k, m->body, m->body_len);
		return;
	}
	if (!k->refreshing && want_names(k, m->body, m->body_len)) {
		if (mgc_send(&k->c, "PROBES\n"))
			die(2, "%s", k->c.err);
		k->refreshing = true;
	}
	if (k->refreshing || k->nheld)
		hold(k, m->body, m->body_len);
	else
		put_records(k, m->body, m->body_len);
}

/*
 * A TASK record's JSON line (lib/print.c): no probe has id 2, and an
 * event name cannot hold an unescaped quote, so this cannot match others.
 */
static bool json_task(const struct mgc_msg *m)
{
	static const char key[] = ",\"id\":2,\"event\":\"task\"";

	return memmem(m->text, m->line_len, key, sizeof(key) - 1) != NULL;
}

static void json_line(struct cat *k, const struct mgc_msg *m)
{
	char q[QUOTE_SHORT];
	size_t ok;
	__u64 lost;

	if (k->mode != OUT_JSON || !m->line_len || m->text[0] != '{')
		die(2, "protocol error from %s: unexpected line '%s'", k->c.server,
		    mgc_quote(q, sizeof(q), m->text, m->line_len, false));
	/*
	 * The line goes out as it came, so all of it is looked at: JSON
	 * escapes every control character in a string, and the daemon's
	 * writer every byte that is not UTF-8 too, so a raw one is no
	 * record of magnetd's but could drive the terminal.
	 */
	ok = mg_text_inert(m->text, m->line_len);
	if (ok < m->line_len)
		die(2, "protocol error from %s: a JSON line with byte 0x%02x at column %zu (controls and bytes that are not UTF-8 are never raw in JSON): '%s'",
		    k->c.server, (unsigned char)m->text[ok], ok + 1,
		    mgc_quote(q, sizeof(q), m->text, m->line_len, false));
	if (json_task(m)) {
		if (k->tasks && (fwrite(m->text, 1, m->line_len, stdout) != m->line_len ||
				 putchar('\n') == EOF))
			out_error();
		return;
	}
	if (fwrite(m->text, 1, m->line_len, stdout) != m->line_len ||
	    putchar('\n') == EOF)
		out_error();
	if (mgc_json_lost(m->text, m->line_len, &lost))
		k->lost += lost;
	else if (++k->records == k->limit)
		k->done = true;
}

static void message(struct cat *k, const struct mgc_msg *m)
{
	char q[QUOTE_SHORT];

	switch (m->kind) {
	case MGC_MSG_FRAME:
		if (k->mode == OUT_JSON)
			break;
		frame(k, m);
		return;
	case MGC_MSG_LINE:
		json_line(k, m);
		return;
	case MGC_MSG_DROP:
		k->dropped += m->n;
		fflush(stdout);
		fprintf(stderr, PROG ": warning: magnetd dropped %llu records for this client (it fell behind)\n",
			(unsigned long long)m->n);
		return;
	case MGC_MSG_OK:
		/* The only command sent while subscribed is a PROBES refresh. */
		if (!k->refreshing)
			break;
		load_probes(k, m);
		k->refreshing = false;
		put_held(k);
		return;
	case MGC_MSG_ERR:
		die_err(m);
	case MGC_MSG_AGG:
		break;
	}
	die(2, "protocol error from %s: unexpected '%s'", k->c.server,
	    mgc_quote(q, sizeof(q), m->text, m->line_len, false));
}

/* Until -n, -t, a signal, or the server closing. */
static void run(struct cat *k, const sigset_t *waitmask)
{
	struct pollfd pfd = { .fd = k->c.fd, .events = POLLIN };
	struct mgc_msg m;

	while (!k->done && !stop) {
		struct timespec ts, *tsp = NULL;
		ssize_t n;
		int r = mgc_next(&k->c, &m);

		if (r < 0)
			die(2, "%s", k->c.err);
		if (r) {
			message(k, &m);
			continue;
		}
		if (k->c.eof) {
			fflush(stdout);
			fprintf(stderr, PROG ": magnetd at %s closed the connection\n",
				k->c.server);
			break;
		}
		/* Everything received is out: show it before waiting. */
		if (fflush(stdout))
			out_error();
		if (k->deadline_ms) {
			long long left = k->deadline_ms - mgc_mono_ms();

			if (left <= 0)
				break;
			ts.tv_sec = left / 1000;
			ts.tv_nsec = left % 1000 * 1000000;
			tsp = &ts;
		}
		/* Signals are blocked except here: none is missed. */
		r = ppoll(&pfd, 1, tsp, waitmask);
		if (r < 0 && errno != EINTR)
			die(2, "poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		n = mgc_fill(&k->c);
		if (n < 0 && n != -EAGAIN)
			die(2, "%s", k->c.err);
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "raw", no_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ "tasks", no_argument, NULL, 'T' },
		{ "time", required_argument, NULL, 't' },
		{ "munge", no_argument, NULL, 'M' },
		{ "munge-socket", required_argument, NULL, OPT_MUNGE_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static struct cat k;
	static const int sigs[] = { SIGINT, SIGTERM, 0 };
	enum mga_munge munge = MGA_MUNGE_AUTO;
	const char *munge_socket = NULL;
	sigset_t waitmask;
	long long ms = 0;
	struct mgc_msg m;
	int opt;
	__u64 v;

	k.server = MGC_DEFAULT_SERVER;
	while ((opt = getopt_long(argc, argv, "+s:jbn:Tt:Mh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			k.server = optarg;
			break;
		case 'j':
		case 'b':
			if (k.mode != OUT_TEXT) {
				fprintf(stderr, PROG ": -j and -b exclude each other\n");
				usage(1);
			}
			k.mode = opt == 'j' ? OUT_JSON : OUT_RAW;
			break;
		case 'n':
			if (mgc_opt_count(PROG, 'n', optarg, &v))
				usage(1);
			k.limit = v;
			break;
		case 'T':
			k.tasks = true;
			break;
		case 't':
			if (mgc_parse_ms(optarg, &ms) || !ms) {
				fprintf(stderr, PROG ": -t needs seconds above 0 (e.g. 10 or 0.5), not '%s'\n",
					optarg);
				usage(1);
			}
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
	if (k.mode == OUT_RAW && isatty(STDOUT_FILENO)) {
		fprintf(stderr, PROG ": -b writes binary records: redirect stdout to a file or a pipe\n");
		usage(1);
	}
	/* Records arrive in frames of up to a read buffer: write in big pieces. */
	if (k.mode == OUT_RAW)
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	build_command(&k, argc - optind, argv + optind);

	/*
	 * SIGINT and SIGTERM end the run normally (summary, status 0). They
	 * are blocked, and let through only while ppoll waits, so one that
	 * comes between the check and the wait is not lost.
	 */
	mgc_catch_signals(sigs, on_signal, &waitmask);

	mgc_set_munge(munge, munge_socket);
	if (mgc_connect(&k.c, k.server, REPLY_TIMEOUT_MS))
		die(2, "%s", k.c.err);
	hello(&k);
	if (k.mode == OUT_TEXT) {
		command(&k, "PROBES", &m, "before replying to PROBES");
		load_probes(&k, &m);
	}
	subscribe(&k);

	k.names = mg_tasks_new();
	if (!k.names)
		die(2, "out of memory");
	mg_print_opts_init(&k.po, NULL, &k.probes);
	k.po.tasks = k.names;
	k.po.tsc = !strcmp(k.hello.clock, "tsc");
	if (ms)
		k.deadline_ms = mgc_mono_ms() + ms;
	run(&k, &waitmask);
	/* Held frames wait only for names: without them they still print. */
	put_held(&k);
	if (fflush(stdout))
		out_error();
	fprintf(stderr, PROG ": %llu records, %llu lost (kernel), %llu dropped (magnetd)\n",
		k.records, k.lost, k.dropped);
	mgc_close(&k.c);
	mgc_hello_free(&k.hello);
	mg_probes_free(&k.probes);
	mg_tasks_free(k.names);
	free(k.held);
	return 0;
}
