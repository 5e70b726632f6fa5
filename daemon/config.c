// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's configuration: defaults, the config file, the command line.
 * See config.h for the rules and docs/magnetd.conf.md (magnetd.conf(5)) for the keys.
 *
 * One table describes every key: its file name (the long option is the
 * same with '-' for '_'), short option, type, field, range and help, so
 * the file, the command line, --help and the reload comparison cannot
 * disagree about what exists.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magnet.h>

#include "agg.h"
#include "access.h"
#include "chunkq.h"
#include "config.h"
#include "tracewr.h"

#define KIB	1024ULL
#define MIB	(1024ULL * KIB)
#define GIB	(1024ULL * MIB)

/* Words from the user are echoed in errors cut to this many bytes. */
#define ECHO_MAX	40

enum ktype {
	K_CONFIG,	/* -c FILE */
	K_FOREGROUND,	/* -f */
	K_HELP,		/* -h */
	K_LOG,
	K_READ,		/* mapped | aio */
	K_LISTEN,
	K_ALLOW,
	K_UINT,		/* unsigned int field */
	K_SIZE,		/* size_t field, K/M/G */
	K_MS,		/* unsigned int field of ms; ms, s, m */
	K_PATH,		/* char[4096] field, absolute */
	K_PROBE,
	K_LISTENER,	/* struct mg_listener, "" off */
	K_WHO,		/* char[] field: users and @groups (access.h) */
};

#define F_CMDLINE	(1U << 0)	/* command line only */
#define F_NOARG		(1U << 1)	/* a flag: takes no value */
#define F_LIST		(1U << 2)	/* repeatable, accumulates */
#define F_EMPTY		(1U << 3)	/* "" is a value (trace: none) */
#define F_POW2		(1U << 4)
#define F_ZERO		(1U << 5)	/* 0 is allowed besides min..max */
#define F_SECONDS	(1U << 6)	/* K_MS: a bare number is seconds */
#define F_LIVE		(1U << 7)	/* applied at SIGHUP, no restart */

struct key {
	const char *name;
	char short_opt;
	enum ktype type;
	unsigned int flags;
	size_t off;
	size_t size;		/* of the field: strings */
	unsigned long long min, max;	/* numbers; ms for K_MS */
	const char *why;	/* appended to a range error */
	const char *arg;	/* --help */
	const char *help;
};

#define FIELD(f)	.off = offsetof(struct mg_config, f), \
			.size = sizeof(((struct mg_config *)0)->f)

static const struct key keys[] = {
	{ .name = "config", .short_opt = 'c', .type = K_CONFIG,
	  .flags = F_CMDLINE, .arg = "FILE",
	  .help = "configuration file (" MG_CONFIG_DEFAULT_PATH ", may be absent)" },
	{ .name = "foreground", .short_opt = 'f', .type = K_FOREGROUND,
	  .flags = F_CMDLINE | F_NOARG,
	  .help = "stay in the foreground (log to stderr unless --log syslog)" },
	{ .name = "help", .short_opt = 'h', .type = K_HELP,
	  .flags = F_CMDLINE | F_NOARG,
	  .help = "print this help and exit" },
	{ .name = "log", .type = K_LOG, .flags = F_LIVE, FIELD(log),
	  .arg = "auto|stderr|syslog",
	  .help = "where messages go (auto: stderr with -f, else syslog)" },
	{ .name = "listen", .short_opt = 'l', .type = K_LISTEN, FIELD(listen),
	  .arg = "ADDR:PORT",
	  .help = "serve clients here (127.0.0.1:8650; [::1]:8650, *:8650)" },
	{ .name = "allow", .short_opt = 'a', .type = K_ALLOW,
	  .flags = F_LIST | F_LIVE, .arg = "CIDR[,CIDR]",
	  .help = "accept clients only from these (repeatable; needed off loopback)" },
	{ .name = "socket", .short_opt = 'S', .type = K_PATH, .flags = F_EMPTY,
	  FIELD(socket), .arg = "PATH",
	  .help = "serve local clients on this Unix socket (/run/magnet/magnetd.sock; \"\": none)" },
	{ .name = "access_all", .type = K_WHO, .flags = F_LIVE | F_EMPTY,
	  FIELD(access_all), .arg = "WHO",
	  .help = "users and @groups who see every record and job, as root does (@magnet)" },
	{ .name = "access_totals", .type = K_WHO, .flags = F_LIVE | F_EMPTY,
	  FIELD(access_totals), .arg = "WHO",
	  .help = "users and @groups who see every job's totals: the monitors (ganglia prometheus)" },
	{ .name = "max_clients", .type = K_UINT, .flags = F_LIVE,
	  FIELD(max_clients), .min = 1, .max = 65536, .arg = "N",
	  .help = "connections at once on the client port (64)" },
	{ .name = "client_queue", .type = K_SIZE, .flags = F_LIVE,
	  FIELD(client_queue), .min = 64 * KIB, .max = GIB, .arg = "SIZE",
	  .help = "output queue of each client (4M)" },
	{ .name = "client_timeout", .type = K_MS, .flags = F_LIVE | F_SECONDS,
	  FIELD(client_timeout_ms), .min = 100, .max = 3600000, .arg = "TIME",
	  .help = "cut off a client whose full queue takes nothing this long (5s; bare number: s)" },
	{ .name = "idle_timeout", .type = K_MS,
	  .flags = F_LIVE | F_SECONDS | F_ZERO, FIELD(idle_timeout_ms),
	  .min = 1000, .max = 24 * 3600000, .arg = "TIME",
	  .help = "close a client that sends and takes nothing this long (5m; 0: never)" },
	{ .name = "max_clients_per_user", .type = K_UINT, .flags = F_LIVE,
	  FIELD(max_clients_per_user), .min = 1, .max = 65536, .arg = "N",
	  .help = "connections at once per local user or remote address; root exempt (16)" },
	{ .name = "root_reserve", .type = K_UINT, .flags = F_LIVE,
	  FIELD(root_reserve), .max = 65536, .arg = "N",
	  .help = "connections root may open beyond each listener's slots (4)" },
	{ .name = "prometheus_clients", .type = K_UINT, .flags = F_LIVE,
	  FIELD(prometheus_clients), .min = 1, .max = 65536, .arg = "N",
	  .help = "connections at once on the prometheus listener (8)" },
	{ .name = "supermon_clients", .type = K_UINT, .flags = F_LIVE,
	  FIELD(supermon_clients), .min = 1, .max = 65536, .arg = "N",
	  .help = "connections at once on the supermon listener (8)" },
	{ .name = "request_timeout", .type = K_MS,
	  .flags = F_LIVE | F_SECONDS | F_ZERO, FIELD(request_timeout_ms),
	  .min = 100, .max = 3600000, .arg = "TIME",
	  .help = "close a client whose request line (HTTP: request) takes longer (10s; 0: never)" },
	{ .name = "dir", .short_opt = 'd', .type = K_PATH, FIELD(dir),
	  .arg = "DIR",
	  .help = "magnet's debugfs directory (/sys/kernel/debug/magnet)" },
	{ .name = "ring_size", .type = K_SIZE, .flags = F_ZERO | F_POW2, FIELD(ring_size),
	  .min = 64 * KIB, .max = GIB, .arg = "SIZE",
	  .help = "grow each CPU's ring to this while it is empty, never shrink (4M; 0: as loaded)" },
	{ .name = "ring_memory", .type = K_SIZE, .flags = F_ZERO, FIELD(ring_memory),
	  .min = 64 * KIB, .max = 1024 * GIB, .arg = "SIZE",
	  .help = "all CPUs' rings together at most (0: 1/32 of the memory)" },
	{ .name = "read", .type = K_READ, FIELD(read), .arg = "MODE",
	  .help = "mapped: read the rings in place; aio: copy them with AIO reads (mapped)" },
	{ .name = "read_buffer", .type = K_SIZE, FIELD(read_buffer),
	  .min = 2 * MAGNET_RECORD_MAX, .max = GIB,
	  .why = "a read must hold two of the largest records, 2 * MAGNET_RECORD_MAX",
	  .arg = "SIZE", .help = "read buffer of each CPU (256K)" },
	{ .name = "watermark", .type = K_SIZE, FIELD(watermark), .max = GIB,
	  .arg = "SIZE",
	  .help = "a read waits for this many bytes (64K; 0: off) ..." },
	{ .name = "latency", .type = K_MS, FIELD(latency_ms), .max = 60000,
	  .arg = "TIME",
	  .help = "... or this long (100ms; 0: off; bare number: ms)" },
	{ .name = "net_settle", .type = K_MS, FIELD(net_settle_ms), .max = 60000,
	  .arg = "TIME",
	  .help = "a TCP packet waits this long before it is counted, for the rings read after it (1s)" },
	{ .name = "queue", .type = K_SIZE, FIELD(queue), .min = MIB,
	  .max = 64 * GIB, .arg = "SIZE",
	  .help = "records queued from collection to the clients (64M)" },
	{ .name = "trace", .short_opt = 't', .type = K_PATH, .flags = F_EMPTY,
	  FIELD(trace_dir), .arg = "DIR",
	  .help = "also write trace files into DIR (none)" },
	{ .name = "trace_size", .type = K_SIZE, .flags = F_ZERO,
	  FIELD(trace_size), .min = MIB, .max = 1024 * GIB, .arg = "SIZE",
	  .help = "start a new trace file at this size (64M; 0: one file)" },
	{ .name = "trace_queue", .type = K_SIZE, FIELD(trace_queue), .min = MIB,
	  .max = 64 * GIB, .arg = "SIZE",
	  .help = "records queued for the trace writer (16M)" },
	{ .name = "probe", .short_opt = 'p', .type = K_PROBE, .flags = F_LIST,
	  .arg = "SPEC",
	  .help = "insert this probe at start, as magnet-ctl probe add SPEC (repeatable)" },
	{ .name = "agg_entries", .type = K_UINT, .flags = F_POW2,
	  FIELD(agg_entries), .min = 1, .max = MG_AGG_MAX_CAPACITY, .arg = "N",
	  .help = "entries of each AGG table (4096)" },
	{ .name = "agg_top", .type = K_UINT, .flags = F_LIVE, FIELD(agg_top),
	  .min = 1, .max = 65536, .arg = "N",
	  .help = "entries in each AGG report (50)" },
	{ .name = "prometheus", .type = K_LISTENER, .flags = F_EMPTY,
	  FIELD(prometheus), .arg = "ADDR:PORT",
	  .help = "serve Prometheus' /metrics here (off; e.g. 127.0.0.1:8653)" },
	{ .name = "supermon", .type = K_LISTENER, .flags = F_EMPTY,
	  FIELD(supermon), .arg = "ADDR:PORT",
	  .help = "speak Supermon's mon protocol here (off; e.g. 127.0.0.1:2709)" },
	{ .name = "export_jobs", .type = K_UINT, FIELD(export_jobs),
	  .max = 4096, .arg = "N",
	  .help = "jobs with their own series for the monitors, the rest as other (20)" },
	{ .name = "munge_socket", .type = K_PATH, .flags = F_EMPTY | F_LIVE,
	  FIELD(munge_socket), .arg = "PATH",
	  .help = "munged's socket, for AUTH MUNGE (libmunge's: /run/munge/munge.socket.2)" },
};

#define NKEYS	(sizeof(keys) / sizeof(keys[0]))

const char *mg_config_default_path = MG_CONFIG_DEFAULT_PATH;

static void *field(struct mg_config *c, const struct key *k)
{
	return (char *)c + k->off;
}

static const void *cfield(const struct mg_config *c, const struct key *k)
{
	return (const char *)c + k->off;
}

void mg_config_defaults(struct mg_config *c)
{
	memset(c, 0, sizeof(*c));
	c->log = MG_LOG_AUTO;
	strcpy(c->listen, "127.0.0.1:8650");
	strcpy(c->socket, MG_CONFIG_DEFAULT_SOCKET);
	/* About what loopback TCP's send buffer grows to. */
	c->unix_sndbuf = 1 << 20;
	strcpy(c->access_all, "@magnet");
	strcpy(c->access_totals, "ganglia prometheus");
	mg_parse_listen(c->listen, &c->listen_addr, &c->listen_len);
	c->max_clients = 64;
	c->client_queue = 4 * MIB;
	c->client_timeout_ms = 5000;
	c->idle_timeout_ms = 300000;
	c->max_clients_per_user = 16;
	c->root_reserve = 4;
	c->prometheus_clients = 8;
	c->supermon_clients = 8;
	c->request_timeout_ms = 10000;
	strcpy(c->dir, "/sys/kernel/debug/magnet");
	c->ring_size = 4 * MIB;
	c->read_buffer = 256 * KIB;
	c->watermark = 64 * KIB;
	c->latency_ms = 100;
	c->net_settle_ms = 1000;
	c->queue = 64 * MIB;
	c->trace_size = 64 * MIB;
	c->trace_queue = 16 * MIB;
	c->agg_entries = 4096;
	c->agg_top = 50;
	c->export_jobs = 20;
}

void mg_config_free(struct mg_config *c)
{
	unsigned int i;

	for (i = 0; i < c->nprobes; i++) {
		free(c->probes[i]);
		c->probes[i] = NULL;
	}
	c->nprobes = 0;
}

/* ---- messages ---- */

static void seterr(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* s as echoed in a message: cut, with "..." when it was. */
static const char *echo(const char *s, char buf[ECHO_MAX + 4])
{
	size_t n = strlen(s);

	if (n <= ECHO_MAX)
		return s;
	memcpy(buf, s, ECHO_MAX);
	strcpy(buf + ECHO_MAX, "...");
	return buf;
}

/* 65536 -> "64K": the way sizes are written in the file. */
static const char *fmt_size(unsigned long long v, char buf[32])
{
	if (v && v % GIB == 0)
		snprintf(buf, 32, "%lluG", v / GIB);
	else if (v && v % MIB == 0)
		snprintf(buf, 32, "%lluM", v / MIB);
	else if (v && v % KIB == 0)
		snprintf(buf, 32, "%lluK", v / KIB);
	else
		snprintf(buf, 32, "%llu", v);
	return buf;
}

static const char *fmt_ms(unsigned long long ms, char buf[32])
{
	if (ms && ms % 60000 == 0)
		snprintf(buf, 32, "%llum", ms / 60000);
	else if (ms && ms % 1000 == 0)
		snprintf(buf, 32, "%llus", ms / 1000);
	else
		snprintf(buf, 32, "%llums", ms);
	return buf;
}

/* ---- numbers ---- */

/*
 * The decimal number at the start of s, *end after it. Digits first:
 * strtoull() alone would take blanks, a sign and hex.
 */
static int parse_digits(const char *s, const char **end, unsigned long long *v)
{
	char *e;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &e, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*end = e;
	return 0;
}

static int parse_uint(const char *s, unsigned long long *v)
{
	const char *end;
	int ret = parse_digits(s, &end, v);

	if (ret)
		return ret;
	return *end ? -EINVAL : 0;
}

/* Bytes, or K, M, G (either case): powers of 1024. */
static int parse_size(const char *s, unsigned long long *v)
{
	unsigned long long x;
	unsigned int shift = 0;
	const char *end;
	int ret;

	ret = parse_digits(s, &end, &x);
	if (ret)
		return ret;
	switch (*end) {
	case 'K': case 'k':
		shift = 10;
		break;
	case 'M': case 'm':
		shift = 20;
		break;
	case 'G': case 'g':
		shift = 30;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift && end[1])
		return -EINVAL;
	if (x > (ULLONG_MAX >> shift))
		return -ERANGE;
	*v = x << shift;
	return 0;
}

/* ms, s or m; a bare number is in bare_ms units. */
static int parse_ms(const char *s, unsigned long long bare_ms,
		    unsigned long long *ms)
{
	unsigned long long x, unit;
	const char *end;
	int ret;

	ret = parse_digits(s, &end, &x);
	if (ret)
		return ret;
	if (!*end)
		unit = bare_ms;
	else if (!strcmp(end, "ms"))
		unit = 1;
	else if (!strcmp(end, "s"))
		unit = 1000;
	else if (!strcmp(end, "m"))
		unit = 60000;
	else
		return -EINVAL;
	if (x > ULLONG_MAX / unit)
		return -ERANGE;
	*ms = x * unit;
	return 0;
}

/* ---- addresses ---- */

static bool trim_copy(char *dst, size_t size, const char *s, size_t len)
{
	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (len >= size)
		return false;
	memmove(dst, s, len);	/* dst may be s trimmed in place */
	dst[len] = '\0';
	return true;
}

static int cidr_parse(const char *s, struct mg_cidr *out, const char **why)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long long prefix;
	unsigned int i, bits;
	struct mg_cidr c;

	memset(&c, 0, sizeof(c));
	*why = "not a numeric IPv4 or IPv6 address";
	if (alen >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, c.addr) == 1) {
		c.family = AF_INET;
		bits = 32;
	} else if (inet_pton(AF_INET6, buf, c.addr) == 1) {
		c.family = AF_INET6;
		bits = 128;
	} else {
		return -EINVAL;
	}
	c.prefix = bits;
	if (slash) {
		int ret = parse_uint(slash + 1, &prefix);

		*why = "the prefix after '/' must be a decimal number";
		if (ret == -EINVAL)
			return -EINVAL;
		if (ret || prefix > bits) {
			*why = c.family == AF_INET ? "an IPv4 prefix is at most 32" :
						     "an IPv6 prefix is at most 128";
			return -ERANGE;
		}
		c.prefix = prefix;
	}
	/* Clear the host bits, so comparing is a plain prefix compare. */
	for (i = 0; i < bits / 8; i++) {
		if (i * 8 >= c.prefix)
			c.addr[i] = 0;
		else if (i * 8 + 8 > c.prefix)
			c.addr[i] &= 0xff << (8 - (c.prefix - i * 8));
	}
	*out = c;
	*why = NULL;
	return 0;
}

int mg_cidr_parse(const char *s, struct mg_cidr *out)
{
	const char *why;

	return cidr_parse(s, out, &why);
}

void mg_cidr_format(const struct mg_cidr *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(c->family, c->addr, a, sizeof(a)))
		strcpy(a, "?");
	snprintf(buf, len, "%s/%u", a, c->prefix);
}

static const unsigned char v4mapped[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

/* sa as 16 bytes of IPv6, IPv4 mapped; false for other families. */
static bool sockaddr_v6(const struct sockaddr *sa, unsigned char out[16])
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		memcpy(out, v4mapped, 12);
		memcpy(out + 12, &in->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(out, &in6->sin6_addr, 16);
		return true;
	}
	return false;
}

bool mg_cidr_match(const struct mg_cidr *c, const struct sockaddr *sa)
{
	unsigned char peer[16], net[16];
	unsigned int prefix = c->prefix, full, rest;

	if (!sockaddr_v6(sa, peer))
		return false;
	if (c->family == AF_INET) {
		memcpy(net, v4mapped, 12);
		memcpy(net + 12, c->addr, 4);
		prefix += 96;
	} else if (c->family == AF_INET6) {
		memcpy(net, c->addr, 16);
	} else {
		return false;
	}
	if (prefix > 128)
		return false;
	full = prefix / 8;
	rest = prefix % 8;
	if (memcmp(peer, net, full))
		return false;
	return !rest || !((peer[full] ^ net[full]) & (0xff << (8 - rest)));
}

bool mg_sockaddr_is_loopback(const struct sockaddr *sa)
{
	static const unsigned char v6_loopback[16] = { [15] = 1 };
	unsigned char a[16];

	if (!sockaddr_v6(sa, a))
		return false;
	if (!memcmp(a, v4mapped, 12))
		return a[12] == 127;
	return !memcmp(a, v6_loopback, 16);
}

static int parse_listen(const char *s, struct sockaddr_storage *ss,
			socklen_t *len, const char **why)
{
	struct sockaddr_storage tmp;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&tmp;
	struct sockaddr_in *in = (struct sockaddr_in *)&tmp;
	char host[INET6_ADDRSTRLEN + 1];
	const char *port, *colon;
	unsigned long long p;
	size_t hlen;
	bool v6;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		*why = "expected [IPv6]:PORT";
		if (!close || close[1] != ':')
			return -EINVAL;
		hlen = close - (s + 1);
		port = close + 2;
		if (hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hlen);
		v6 = true;
	} else {
		colon = strrchr(s, ':');
		*why = "expected ADDR:PORT";
		if (!colon)
			return -EINVAL;
		hlen = colon - s;
		port = colon + 1;
		*why = "an IPv6 address goes in brackets: [::1]:8650";
		if (memchr(s, ':', hlen))
			return -EINVAL;
		*why = "not a numeric IPv4 address (names are not looked up)";
		if (hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hlen);
		v6 = false;
	}
	host[hlen] = '\0';
	*why = "missing address before the port (* or 0.0.0.0 for all)";
	if (!hlen)
		return -EINVAL;
	*why = "the port must be a number from 1 to 65535";
	if (parse_uint(port, &p) || strlen(port) > 5 || p < 1 || p > 65535)
		return -EINVAL;

	/* Into a copy: *ss is left alone on errors. */
	memset(&tmp, 0, sizeof(tmp));
	if (v6) {
		*why = "not a numeric IPv6 address";
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(p);
		*len = sizeof(*in6);
	} else {
		*why = "not a numeric IPv4 address (names are not looked up)";
		if (!strcmp(host, "*"))
			in->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		in->sin_family = AF_INET;
		in->sin_port = htons(p);
		*len = sizeof(*in);
	}
	*ss = tmp;
	*why = NULL;
	return 0;
}

int mg_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *why;

	return parse_listen(s, ss, len, &why);
}

/* ---- setting one key ---- */

struct load {
	struct mg_config *c;
	/* the first --allow / --probe replaces the file's list */
	bool cmd_allow, cmd_probe;
	const char *config;	/* -c */
	bool help;
};

static void clear_list(struct mg_config *c, const struct key *k)
{
	if (k->type == K_ALLOW)
		c->nallow = 0;
	else
		mg_config_free(c);
}

static int add_allow(struct mg_config *c, const char *val, char *why,
		     size_t wlen)
{
	char e[ECHO_MAX + 4], item[256];
	const char *p = val, *comma, *reason;
	struct mg_cidr cidr;

	for (;;) {
		comma = strchr(p, ',');
		if (!trim_copy(item, sizeof(item), p,
			       comma ? (size_t)(comma - p) : strlen(p))) {
			seterr(why, wlen, "bad CIDR '%s': too long", echo(p, e));
			return -EINVAL;
		}
		if (!*item) {
			seterr(why, wlen, "empty entry in '%s'", echo(val, e));
			return -EINVAL;
		}
		if (cidr_parse(item, &cidr, &reason)) {
			seterr(why, wlen, "bad CIDR '%s': %s", echo(item, e), reason);
			return -EINVAL;
		}
		if (c->nallow == MG_CONFIG_ALLOW_MAX) {
			seterr(why, wlen, "more than %u entries", MG_CONFIG_ALLOW_MAX);
			return -EINVAL;
		}
		c->allow[c->nallow++] = cidr;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static int range_err(const struct key *k, char *why, size_t wlen)
{
	char a[32], b[32];
	const char *lo, *hi;

	if (k->type == K_SIZE) {
		lo = fmt_size(k->min, a);
		hi = fmt_size(k->max, b);
	} else if (k->type == K_MS) {
		lo = fmt_ms(k->min, a);
		hi = fmt_ms(k->max, b);
	} else {
		snprintf(a, sizeof(a), "%llu", k->min);
		snprintf(b, sizeof(b), "%llu", k->max);
		lo = a;
		hi = b;
	}
	seterr(why, wlen, "must be %s%s%s to %s%s%s%s",
	       k->flags & F_POW2 ? "a power of two from " : "",
	       k->flags & F_ZERO ? "0 or " : "", lo, hi,
	       k->why ? " (" : "", k->why ? k->why : "", k->why ? ")" : "");
	return -EINVAL;
}

static int set_number(struct mg_config *c, const struct key *k, const char *val,
		      char *why, size_t wlen)
{
	char e[ECHO_MAX + 4];
	unsigned long long v;
	int ret;

	switch (k->type) {
	case K_UINT:
		ret = parse_uint(val, &v);
		if (ret == -EINVAL) {
			seterr(why, wlen, "bad number '%s'", echo(val, e));
			return ret;
		}
		break;
	case K_SIZE:
		ret = parse_size(val, &v);
		if (ret == -EINVAL) {
			seterr(why, wlen, "bad size '%s' (bytes, or a number with K, M or G)",
			       echo(val, e));
			return ret;
		}
		break;
	default:	/* K_MS */
		ret = parse_ms(val, k->flags & F_SECONDS ? 1000 : 1, &v);
		if (ret == -EINVAL) {
			seterr(why, wlen, "bad duration '%s' (%s, or a number with ms, s or m)",
			       echo(val, e), k->flags & F_SECONDS ?
			       "seconds" : "milliseconds");
			return ret;
		}
		break;
	}
	/* -ERANGE: too large for 64 bits, so out of any range. */
	if (ret || ((v < k->min || v > k->max) && !(v == 0 && k->flags & F_ZERO)) ||
	    (k->flags & F_POW2 && (v & (v - 1))) ||
	    (k->type == K_SIZE && v > SIZE_MAX))
		return range_err(k, why, wlen);
	if (k->type == K_SIZE)
		*(size_t *)field(c, k) = v;
	else
		*(unsigned int *)field(c, k) = v;
	return 0;
}

/*
 * Apply val (trimmed, NUL-terminated) to key k; cmdline: it came from
 * argv. 0, or -EINVAL with why (no location) filled.
 */
static int set_key(struct load *ld, const struct key *k, const char *val,
		   bool cmdline, char *why, size_t wlen)
{
	struct mg_config *c = ld->c;
	char e[ECHO_MAX + 4];
	const char *reason;
	char *dup;

	if (!*val && !(k->flags & (F_LIST | F_EMPTY | F_NOARG))) {
		seterr(why, wlen, "missing value");
		return -EINVAL;
	}
	if (k->flags & F_LIST) {
		bool *seen = k->type == K_ALLOW ? &ld->cmd_allow : &ld->cmd_probe;

		if (cmdline && !*seen) {
			clear_list(c, k);
			*seen = true;
		}
		if (!*val) {
			clear_list(c, k);
			return 0;
		}
	}

	switch (k->type) {
	case K_CONFIG:
		ld->config = val;
		return 0;
	case K_HELP:
		ld->help = true;
		return 0;
	case K_FOREGROUND:
		c->foreground = true;
		return 0;
	case K_READ:
		if (!strcmp(val, "mapped")) {
			c->read = MG_READ_MAPPED;
		} else if (!strcmp(val, "aio")) {
			c->read = MG_READ_AIO;
		} else {
			seterr(why, wlen, "bad read mode '%s' (mapped or aio)", echo(val, e));
			return -EINVAL;
		}
		return 0;
	case K_LOG:
		if (!strcmp(val, "auto")) {
			c->log = MG_LOG_AUTO;
		} else if (!strcmp(val, "stderr")) {
			c->log = MG_LOG_STDERR;
		} else if (!strcmp(val, "syslog")) {
			c->log = MG_LOG_SYSLOG;
		} else {
			seterr(why, wlen, "bad log target '%s' (auto, stderr or syslog)",
			       echo(val, e));
			return -EINVAL;
		}
		return 0;
	case K_LISTEN:
		if (strlen(val) >= sizeof(c->listen)) {
			seterr(why, wlen, "too long (max %zu bytes)",
			       sizeof(c->listen) - 1);
			return -EINVAL;
		}
		if (parse_listen(val, &c->listen_addr, &c->listen_len, &reason)) {
			seterr(why, wlen, "bad address '%s': %s", echo(val, e), reason);
			return -EINVAL;
		}
		strcpy(c->listen, val);
		return 0;
	case K_LISTENER: {
		struct mg_listener *l = field(c, k);

		if (!*val) {
			memset(l, 0, sizeof(*l));
			return 0;
		}
		if (strlen(val) >= sizeof(l->text)) {
			seterr(why, wlen, "too long (max %zu bytes)",
			       sizeof(l->text) - 1);
			return -EINVAL;
		}
		if (parse_listen(val, &l->addr, &l->len, &reason)) {
			seterr(why, wlen, "bad address '%s': %s", echo(val, e), reason);
			return -EINVAL;
		}
		strcpy(l->text, val);
		return 0;
	}
	case K_ALLOW:
		return add_allow(c, val, why, wlen);
	case K_UINT:
	case K_SIZE:
	case K_MS:
		return set_number(c, k, val, why, wlen);
	case K_WHO: {
		static struct mg_config def;
		struct mg_access_set set;
		char reason[256];

		if (strlen(val) >= k->size) {
			seterr(why, wlen, "too long (max %zu bytes)", k->size - 1);
			return -EINVAL;
		}
		/* The default, written out, is as lenient as the default. */
		mg_config_defaults(&def);
		if (mg_access_parse(val, !strcmp(val, cfield(&def, k)), &set, reason,
				    sizeof(reason))) {
			seterr(why, wlen, "%s", reason);
			return -EINVAL;
		}
		strcpy(field(c, k), val);
		return 0;
	}
	case K_PATH:
		/* The daemon may chdir: a relative path would move with it. */
		if (*val && *val != '/') {
			seterr(why, wlen, "'%s' is not an absolute path", echo(val, e));
			return -EINVAL;
		}
		if (strlen(val) >= k->size) {
			seterr(why, wlen, "too long (max %zu bytes)", k->size - 1);
			return -EINVAL;
		}
		strcpy(field(c, k), val);
		return 0;
	case K_PROBE:
		if (c->nprobes == MG_CONFIG_PROBES_MAX) {
			seterr(why, wlen, "more than %u probes", MG_CONFIG_PROBES_MAX);
			return -EINVAL;
		}
		dup = strdup(val);
		if (!dup) {
			seterr(why, wlen, "out of memory");
			return -EINVAL;
		}
		c->probes[c->nprobes++] = dup;
		return 0;
	}
	return -EINVAL;
}

/* ---- the file ---- */

static const struct key *key_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static int parse_line(struct load *ld, const char *path, unsigned int lineno,
		      const char *line, char *err, size_t errlen)
{
	char name[64], why[MG_CONFIG_ERR_MAX], e[ECHO_MAX + 4];
	const char *eq = strchr(line, '='), *p = line;
	const struct key *k;
	char *val;
	int ret;

	while (isspace((unsigned char)*p))
		p++;
	if (!*p || *p == '#')
		return 0;
	if (!eq) {
		seterr(err, errlen, "%s:%u: expected 'key = value', not '%s'",
		       path, lineno, echo(p, e));
		return -EINVAL;
	}
	if (!trim_copy(name, sizeof(name), p, eq - p)) {
		snprintf(name, sizeof(name), "%.*s", (int)(eq - p), p);
		seterr(err, errlen, "%s:%u: unknown key '%s'", path, lineno,
		       echo(name, e));
		return -EINVAL;
	}
	if (!*name) {
		seterr(err, errlen, "%s:%u: missing key before '='", path, lineno);
		return -EINVAL;
	}
	k = key_by_name(name);
	if (!k) {
		seterr(err, errlen, "%s:%u: unknown key '%s'", path, lineno,
		       echo(name, e));
		return -EINVAL;
	}
	if (k->flags & F_CMDLINE) {
		seterr(err, errlen, "%s:%u: '%s' is a command-line option only (-%c)",
		       path, lineno, name, k->short_opt);
		return -EINVAL;
	}
	val = strdup(eq + 1);
	if (!val) {
		seterr(err, errlen, "%s:%u: out of memory", path, lineno);
		return -EINVAL;
	}
	trim_copy(val, strlen(val) + 1, val, strlen(val));
	ret = set_key(ld, k, val, false, why, sizeof(why));
	free(val);
	if (ret)
		seterr(err, errlen, "%s:%u: %s: %s", path, lineno, name, why);
	return ret;
}

/*
 * Read path. must_exist: it was named with -c; else a missing file is
 * "no file" (config_path stays "").
 */
static int read_file(struct load *ld, const char *path, bool must_exist,
		     char *err, size_t errlen)
{
	unsigned int lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int ret = 0;

	if (strlen(path) >= sizeof(ld->c->config_path)) {
		seterr(err, errlen, "config file name too long");
		return -EINVAL;
	}
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT && !must_exist)
			return 0;
		seterr(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	strcpy(ld->c->config_path, path);
	while (!ret && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		/* The rest of the line would be silently ignored. */
		if (strlen(line) != (size_t)n) {
			seterr(err, errlen, "%s:%u: NUL byte in line", path, lineno);
			ret = -EINVAL;
			break;
		}
		ret = parse_line(ld, path, lineno, line, err, errlen);
	}
	if (!ret && ferror(f)) {
		seterr(err, errlen, "cannot read %s: %s", path, strerror(errno));
		ret = -EINVAL;
	}
	free(line);
	fclose(f);
	return ret;
}

/* ---- the command line ---- */

static const struct key *key_by_long(const char *name, size_t len)
{
	size_t i, j;

	for (i = 0; i < NKEYS; i++) {
		const char *kn = keys[i].name;

		if (strlen(kn) != len)
			continue;
		for (j = 0; j < len; j++)
			if (name[j] != (kn[j] == '_' ? '-' : kn[j]))
				break;
		if (j == len)
			return &keys[i];
	}
	return NULL;
}

static const struct key *key_by_short(char c)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (keys[i].short_opt && keys[i].short_opt == c)
			return &keys[i];
	return NULL;
}

static void long_name(const struct key *k, char buf[64])
{
	size_t i;

	strcpy(buf, "--");
	for (i = 0; k->name[i] && i < 60; i++)
		buf[i + 2] = k->name[i] == '_' ? '-' : k->name[i];
	buf[i + 2] = '\0';
}

/*
 * One option of argv, named name as the user wrote it. Pass 0 takes -c
 * and -h, which decide what else happens; pass 1, after the file, the
 * others. Its value: "" for a flag, else the one attached to it (NULL for
 * none) or the next word of argv, argv[++*i].
 */
static int take(struct load *ld, int pass, const struct key *k,
		const char *name, const char *attached, int argc, char **argv,
		int *i, char *err, size_t errlen)
{
	bool first = k->type == K_CONFIG || k->type == K_HELP;
	char why[MG_CONFIG_ERR_MAX];
	const char *val;
	int ret;

	if (k->flags & F_NOARG) {
		val = "";
	} else if (attached) {
		val = attached;
	} else if (*i + 1 < argc) {
		val = argv[++*i];
	} else {
		seterr(err, errlen, "%s: missing value", name);
		return -EINVAL;
	}
	if (first != (pass == 0))
		return 0;
	ret = set_key(ld, k, val, true, why, sizeof(why));
	if (ret)
		seterr(err, errlen, "%s: %s", name, why);
	return ret;
}

/*
 * Walk argv in one pass. Both passes find the same syntax errors (unknown
 * options, missing values, stray arguments), so pass 0 reports them
 * before any file is read and before --help prints anything.
 */
static int walk_args(struct load *ld, int pass, int argc, char **argv,
		     char *err, size_t errlen)
{
	char e[ECHO_MAX + 4], name[64];
	bool dashdash = false;
	const struct key *k;
	int i, ret;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || !a[1]) {
			seterr(err, errlen, "unexpected argument '%s' (magnetd takes options only)",
			       echo(a, e));
			return -EINVAL;
		}
		if (!strcmp(a, "--")) {
			dashdash = true;
			continue;
		}
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);

			k = key_by_long(a + 2, len);
			if (!k) {
				snprintf(name, sizeof(name), "%.*s",
					 (int)(len + 2 > 60 ? 60 : len + 2), a);
				seterr(err, errlen, "unknown option '%s'", echo(name, e));
				return -EINVAL;
			}
			long_name(k, name);
			if ((k->flags & F_NOARG) && eq) {
				seterr(err, errlen, "%s takes no value", name);
				return -EINVAL;
			}
			ret = take(ld, pass, k, name, eq ? eq + 1 : NULL,
				   argc, argv, &i, err, errlen);
			if (ret)
				return ret;
			continue;
		}
		/* A cluster of short options: -f -l ADDR, -fl ADDR, -flADDR. */
		for (a++; *a; a++) {
			k = key_by_short(*a);
			if (!k) {
				seterr(err, errlen, "unknown option '-%c'", *a);
				return -EINVAL;
			}
			snprintf(name, sizeof(name), "-%c", *a);
			ret = take(ld, pass, k, name, a[1] ? a + 1 : NULL,
				   argc, argv, &i, err, errlen);
			if (ret)
				return ret;
			if (!(k->flags & F_NOARG))
				break;	/* the rest of the word was its value */
		}
	}
	return 0;
}

/* Values that depend on each other, once every source is in. */
static int check_relations(const struct mg_config *c, char *err, size_t errlen)
{
	unsigned long long min;
	char a[32], b[32];

	if (c->watermark > c->read_buffer) {
		seterr(err, errlen, "watermark (%s) must be at most read_buffer (%s)",
		       fmt_size(c->watermark, a), fmt_size(c->read_buffer, b));
		return -EINVAL;
	}
	/*
	 * The collection queue (chunkq.h) takes a chunk, a read and its
	 * framing, of at most half its size. The trace writer's takes one
	 * up to its whole size, but only when it is empty and not wrapped:
	 * the same rule keeps it from dropping full reads while it drains.
	 */
	min = 2 * (c->read_buffer + MG_CHUNKQ_OVERHEAD);
	if (c->queue < min) {
		seterr(err, errlen, "queue (%s) must be at least twice read_buffer (%s) + %d bytes (%llu): a read must fit in half of it",
		       fmt_size(c->queue, a), fmt_size(c->read_buffer, b),
		       2 * MG_CHUNKQ_OVERHEAD, min);
		return -EINVAL;
	}
	min = 2 * (c->read_buffer + MG_TRACEWR_CHUNK_OVERHEAD);
	if (c->trace_dir[0] && c->trace_queue < min) {
		seterr(err, errlen, "trace_queue (%s) must be at least twice read_buffer (%s) + %d bytes (%llu): a read must fit in half of it",
		       fmt_size(c->trace_queue, a), fmt_size(c->read_buffer, b),
		       2 * MG_TRACEWR_CHUNK_OVERHEAD, min);
		return -EINVAL;
	}
	return 0;
}

int mg_config_load(struct mg_config *c, int argc, char **argv, char *err,
		   size_t errlen)
{
	struct load ld = { .c = c };
	int ret;

	mg_config_defaults(c);
	seterr(err, errlen, "%s", "");
	ret = walk_args(&ld, 0, argc, argv, err, errlen);
	if (ret)
		return ret;
	if (ld.help) {
		mg_config_usage(stdout);
		fflush(stdout);
		return 1;
	}
	ret = read_file(&ld, ld.config ? ld.config : mg_config_default_path,
			ld.config, err, errlen);
	if (!ret)
		ret = walk_args(&ld, 1, argc, argv, err, errlen);
	if (!ret)
		ret = check_relations(c, err, errlen);
	if (ret) {
		mg_config_free(c);
		return -EINVAL;
	}
	return 0;
}

int mg_config_check(const struct mg_config *c, char *err, size_t errlen)
{
	const struct {
		const char *key, *text;
		const struct sockaddr_storage *addr;
		socklen_t len;
	} l[] = {
		{ "listen", c->listen, &c->listen_addr, c->listen_len },
		{ "prometheus", c->prometheus.text, &c->prometheus.addr,
		  c->prometheus.len },
		{ "supermon", c->supermon.text, &c->supermon.addr,
		  c->supermon.len },
	};
	unsigned int i;

	for (i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		if (!l[i].len || c->nallow ||
		    mg_sockaddr_is_loopback((const struct sockaddr *)l[i].addr))
			continue;
		if (i == 0)
			seterr(err, errlen,
			       "listening on %s needs an allowlist: --allow CIDR (or allow = in magnetd.conf)",
			       l[i].text);
		else
			seterr(err, errlen,
			       "%s on %s needs an allowlist: --allow CIDR (or allow = in magnetd.conf)",
			       l[i].key, l[i].text);
		return -EINVAL;
	}
	return 0;
}

static bool key_changed(const struct mg_config *a, const struct mg_config *b,
			const struct key *k)
{
	unsigned int i;

	switch (k->type) {
	case K_LISTEN:
		return a->listen_len != b->listen_len ||
		       memcmp(&a->listen_addr, &b->listen_addr, a->listen_len);
	case K_LISTENER: {
		const struct mg_listener *x = cfield(a, k), *y = cfield(b, k);

		return x->len != y->len || memcmp(&x->addr, &y->addr, x->len);
	}
	case K_UINT:
	case K_MS:
		return *(const unsigned int *)cfield(a, k) !=
		       *(const unsigned int *)cfield(b, k);
	case K_SIZE:
		return *(const size_t *)cfield(a, k) != *(const size_t *)cfield(b, k);
	case K_PATH:
	case K_WHO:
		return strcmp(cfield(a, k), cfield(b, k));
	case K_PROBE:
		if (a->nprobes != b->nprobes)
			return true;
		for (i = 0; i < a->nprobes; i++)
			if (strcmp(a->probes[i], b->probes[i]))
				return true;
		return false;
	case K_LOG:
		return a->log != b->log;
	case K_READ:
		return a->read != b->read;
	case K_ALLOW:
		return a->nallow != b->nallow ||
		       memcmp(a->allow, b->allow, a->nallow * sizeof(a->allow[0]));
	default:
		return false;
	}
}

unsigned int mg_config_restart_keys(const struct mg_config *old,
				    const struct mg_config *cur, char *buf,
				    size_t len)
{
	unsigned int n = 0;
	size_t i, used = 0;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		int w;

		if (k->flags & (F_CMDLINE | F_LIVE) || !key_changed(old, cur, k))
			continue;
		if (used < len) {
			w = snprintf(buf + used, len - used, "%s%s", n ? ", " : "",
				     k->name);
			used += w > 0 ? (size_t)w : 0;
		}
		n++;
	}
	return n;
}

void mg_config_usage(FILE *f)
{
	char left[64];
	size_t i;

	fputs("Usage: magnetd [OPTIONS]\n"
	      "Serve magnet's kernel event records to TCP clients (docs/protocol.md).\n\n",
	      f);
	for (i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		char name[64];
		int n;

		long_name(k, name);
		if (k->short_opt)
			n = snprintf(left, sizeof(left), "-%c, %s", k->short_opt, name);
		else
			n = snprintf(left, sizeof(left), "    %s", name);
		if (k->arg)
			snprintf(left + n, sizeof(left) - n, " %s", k->arg);
		if (strlen(left) > 27)
			fprintf(f, "  %s\n  %-27s %s\n", left, "", k->help);
		else
			fprintf(f, "  %-27s %s\n", left, k->help);
	}
	fputs("\nEvery option but -c, -f and -h is also a key of the configuration file,\n"
	      "with '_' for '-' (client_queue = 8M); options override the file, and the\n"
	      "first --allow or --probe replaces the file's list. Sizes take K, M, G\n"
	      "(powers of 1024); times take ms, s, m. SIGHUP re-reads the file.\n",
	      f);
}
