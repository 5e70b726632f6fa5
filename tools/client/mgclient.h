/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mgclient: the client side of magnetd's protocol (docs/protocol.md), for
 * magnet-cat, magnet-top and magnet-jobs.
 *
 * Two layers:
 *
 *  - pure functions over bytes: address splitting, message framing (where
 *    one reply or piece of data ends), %XX unescaping and the parsers of
 *    the HELLO, PROBES, STATS, TOTALS and AGG texts. They do no I/O and keep no
 *    state, so the unit tests feed them every malformed input directly;
 *
 *  - a connection: a socket and a receive buffer that hands out whole
 *    messages, blocking with a timeout or, for programs that watch several
 *    connections, driven from their own poll loop (mgc_fill, mgc_next).
 *
 * Two files: mgclient.c is the transport (addresses, framing, text
 * helpers, the connection), mgreply.c the parsers of the replies' texts
 * (key=value words and below "replies"); mgc_int.h their shared helpers.
 *
 * Errors are negative errno values with a sentence for people in an error
 * buffer (the connection's err, or the parsers' why): -EPROTO for a server
 * that breaks the protocol, -EMSGSIZE for input over a limit below.
 */
#ifndef MAGNET_CLIENT_MGCLIENT_H
#define MAGNET_CLIENT_MGCLIENT_H

#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "mgauth.h"
#include "probes.h"

#define MGC_DEFAULT_HOST	"127.0.0.1"
#define MGC_DEFAULT_PORT	"8650"
/* magnetd's Unix socket: the kernel tells it who we are (SO_PEERCRED). */
#define MGC_DEFAULT_SERVER	"/run/magnet/magnetd.sock"
#define MGC_PROTO_VERSION	2

/* A command line the server accepts: 4096 bytes before the '\n'. */
#define MGC_CMD_MAX		4096
/*
 * Longest line taken from the server. Replies are short, but a JSON
 * record prints every byte of a 4 KiB capture as two hex digits.
 */
#define MGC_LINE_MAX		65536
/* Largest binary frame, and lines of one table or AGG report. */
#define MGC_FRAME_MAX		(64U << 20)
#define MGC_TABLE_MAX		(1U << 20)
/* An error sentence, its NUL included. */
#define MGC_ERR_MAX		512
/* "[host]:port" of any address, its NUL included. */
#define MGC_SERVER_MAX		300

/* ---- addresses ---- */

/*
 * Split "HOST:PORT", "[IPV6]:PORT", "HOST", "[IPV6]", a bare IPv6 address
 * ("::1", more than one ':') or ":PORT"; NULL or "" is the default. A
 * missing part is the default's. PORT is a decimal 1..65535. host and port
 * are NUL-terminated (host without brackets). 0, or -EINVAL with why.
 */
int mgc_split_addr(const char *spec, char *host, size_t hostlen,
		   char *port, size_t portlen, char *why, size_t whylen);

/* ---- messages ---- */

enum mgc_msg_kind {
	MGC_MSG_OK,	/* "OK ...", and n table lines if its 2nd word is a number */
	MGC_MSG_ERR,	/* "ERR <reason>" */
	MGC_MSG_FRAME,	/* "B <n>" and n bytes of binary records */
	MGC_MSG_DROP,	/* "D <n>": n records dropped for this client */
	MGC_MSG_AGG,	/* "A <key> <n> ..." and n entry lines */
	MGC_MSG_LINE,	/* any other data line: a JSON record */
};

/*
 * One message. text is its first line (line_len bytes, '\n' excluded);
 * body what follows it: a table's or report's n lines (each ending in
 * '\n', body_len bytes in all), or a frame's bytes. all/all_len is the
 * whole message, first line included: what the parsers below take.
 */
struct mgc_msg {
	enum mgc_msg_kind kind;
	const char *text;
	size_t line_len;
	const char *body;
	size_t body_len;
	const char *all;
	size_t all_len;
	__u64 n;		/* table lines, report entries, frame bytes, drops */
};

/*
 * Frame the message at the start of buf. Returns the bytes it spans (> 0)
 * with *m pointing into buf; 0 when buf holds only part of it; -EPROTO or
 * -EMSGSIZE with why. Which lines follow the first is decided by the first
 * alone (the protocol's rule), so a reply need not be matched to its
 * command to be framed.
 */
ssize_t mgc_frame(const char *buf, size_t len, struct mgc_msg *m,
		  char *why, size_t whylen);

/* ---- text helpers ---- */

/*
 * Decode len bytes of a %XX-escaped word into out (outlen bytes, NUL
 * added). Returns the decoded length, or -EINVAL for a '%' not followed by
 * two hex digits or encoding a NUL, -ENOSPC when out is too small.
 */
ssize_t mgc_unescape(const char *in, size_t len, char *out, size_t outlen);

/*
 * Escape s for a terminal or a tab-separated field into buf: '\' as "\\",
 * spaces, control bytes and bytes that are not printable UTF-8 as "\xNN"
 * (lib/escape.h's mg_escape() with MG_ESC_SPACE, as magnet-ctl's text and
 * -m output). Cut to fit buf. Returns buf.
 */
const char *mgc_escape(char *buf, size_t len, const char *s);

/*
 * A server's bytes (len, NULs included) quoted in a sentence for a
 * terminal, into buf: as mgc_escape() but for the spaces, which stay;
 * "..." after them if they did not all fit, or if cut (the caller took
 * only the first len). Nothing a server sends reaches a terminal but
 * through this, mgc_escape() or lib/escape.h. Returns buf.
 */
const char *mgc_quote(char *buf, size_t size, const char *s, size_t len,
		      bool cut);

/* A buffer for mgc_quote() that holds a command's length of a line. */
#define MGC_QUOTE_MAX		(4 * MGC_CMD_MAX + 8)

/* Strict decimal: digits only, no sign, no overflow. 0 or -EINVAL. */
int mgc_parse_u64(const char *s, size_t len, __u64 *v);

/*
 * Seconds for a command line option, "10", "0.5", "1.25" (at most 3
 * decimals, at most 10^9 s), into *ms. 0 or -EINVAL.
 */
int mgc_parse_ms(const char *s, long long *ms);

/*
 * The COUNT of a program's option -opt: a decimal from 1. 0, or -EINVAL
 * after "prog: -opt needs a count from 1, not 'arg'" on stderr.
 */
int mgc_opt_count(const char *prog, char opt, const char *arg, __u64 *v);

/* ---- for the programs ---- */

/* CLOCK_MONOTONIC in ms. */
long long mgc_mono_ms(void);

/*
 * Catch sigs (a list ending in 0) with handler, and block them: *waitmask
 * is the mask from before, for ppoll to let them through only while it
 * waits, so that one coming between a check and the wait is not lost.
 */
void mgc_catch_signals(const int *sigs, void (*handler)(int),
		       sigset_t *waitmask);

/* ---- key=value words ---- */

struct mgc_kv {
	char *key;
	char *value;
};

/* Words "k=v k=v ..." split into a private copy. */
struct mgc_kvs {
	size_t n;
	struct mgc_kv *v;
	char *text;
};

/*
 * Parse blank-separated key=value words (len bytes). A word without '=',
 * or with an empty key, is an error. 0, -EPROTO with why, or -ENOMEM.
 */
int mgc_kvs_parse(struct mgc_kvs *kv, const char *s, size_t len,
		  char *why, size_t whylen);
/* The first value of key, or NULL. */
const char *mgc_kvs_get(const struct mgc_kvs *kv, const char *key);
void mgc_kvs_free(struct mgc_kvs *kv);

/* ---- replies ---- */

/*
 * "OK magnet 2 node=... cpus=... clock=... order=... format=... module=... access=..."
 * Every documented key is required; unknown keys are kept in kv only.
 */
struct mgc_hello {
	unsigned int version;
	const char *node;	/* these point into kv */
	const char *clock;	/* "mono" or "tsc" */
	unsigned int cpus;
	unsigned int format;	/* record format version */
	bool big_endian;	/* order=be */
	bool module_up;
	struct mgc_kvs kv;
};

/*
 * Parse a HELLO reply line (len bytes, no '\n'). A version other than
 * MGC_PROTO_VERSION parses, with the version set and nothing else: the
 * caller decides what to say. 0, -EPROTO with why, -ENOMEM.
 */
int mgc_parse_hello(const char *line, size_t len, struct mgc_hello *h,
		    char *why, size_t whylen);
void mgc_hello_free(struct mgc_hello *h);

/*
 * A PROBES reply, "OK <n> probes" and n lines "<id> <type> <name> nargs=
 * hits= missed= symbol=", into a probe table of lib/probes.h (name and
 * target unescaped; target the name where symbol= is missing; no capture
 * columns). The line count must be n.
 * 0, -EPROTO with why, -ENOMEM.
 */
int mgc_parse_probes(const char *text, size_t len, struct mg_probe_table *t,
		     char *why, size_t whylen);

struct mgc_stats_cpu {
	__u32 cpu;
	__u64 written, bytes, lost_full, lost_too_big, lost_nesting;
	__u64 overwritten, read, read_lost;
};

/* A STATS reply: the daemon's counters and the per-CPU lines. */
struct mgc_stats {
	bool module_up;
	__u64 uptime, reloads, clients, subscribers, aggregators;
	__u64 read, read_bytes, read_lost, queue_dropped, sent;
	__u64 client_dropped, cut_off, refused;
	__u64 trace_files, trace_bytes, trace_dropped, trace_errors;
	size_t ncpus;
	struct mgc_stats_cpu *cpu;
	struct mgc_kvs kv;	/* the OK line's words, known or not */
};

/* "OK <n> cpus k=v ..." and n lines. 0, -EPROTO with why, -ENOMEM. */
int mgc_parse_stats(const char *text, size_t len, struct mgc_stats *s,
		    char *why, size_t whylen);
void mgc_stats_free(struct mgc_stats *s);

/*
 * A Slurm job's series, from the words after a job's label (AGG cgroup's
 * E lines, AGG net's J lines, TOTALS' job lines; docs/slurm.md).
 */
struct mgc_slurm {
	bool is;		/* the job is a Slurm job's series */
	__u32 job;		/* slurm_job_id */
	char step[24];		/* slurm_step: "0", "batch", "3+1"; "" none */
	bool stepd;		/* slurm_stepd=1: its slurmstepd's */
	char node[64];		/* slurm_node, "" none */
	bool has_uid;
	__u32 uid;
};

/* One word for people: "slurm=42.0,uid=1000" ("42.0/slurmstepd", ",node=N"). */
const char *mgc_slurm_name(const struct mgc_slurm *s, char *buf, size_t size);

struct mgc_agg_entry {
	char *value;		/* unescaped key value */
	__u64 id;		/* value as a number, keys other than comm */
	__u64 events;
	__u64 bytes;
	double rate;		/* events per second */
	char *label;		/* unescaped; "-" for none */
	struct mgc_slurm slurm;	/* cgroup's: a Slurm job's series */
};

/* An AGG report. */
struct mgc_agg {
	char key[16];		/* probe, pid, tgid, comm, cgroup */
	bool numeric;		/* values are numbers: every key but comm */
	__u64 ts, interval, events, bytes, keys, lost;
	__u64 evicted, evicted_events, unkeyed, dropped;
	size_t n;
	struct mgc_agg_entry *v;
	struct mgc_kvs kv;	/* the header's words, known or not */
	char *strings;		/* storage of values and labels */
};

/*
 * Parse "A <key> <n> ts=... dropped=..." and its n entry lines
 * "E <value> <events> <bytes> <rate> <label>", for every key but net
 * (mgc_parse_net). 0, -EPROTO with why, -ENOMEM.
 */
int mgc_parse_agg(const char *text, size_t len, struct mgc_agg *a,
		  char *why, size_t whylen);
void mgc_agg_free(struct mgc_agg *a);

/* A job's traffic over one protocol in an AGG net report ("J" line). */
struct mgc_net_job {
	__u32 job;		/* low 32 bits of the socket's cgroup id; 0: none */
	char *proto;		/* unescaped: "tcp", "udp", "ipprotoN" */
	__u64 tx_packets, tx_bytes, rx_packets, rx_bytes;
	char *label;		/* unescaped cgroup path; "-" for job 0 */
	struct mgc_slurm slurm;	/* a Slurm job's series */
};

/* A job's traffic of one flow: a peer and a local end ("P" line). */
struct mgc_net_peer {
	__u32 job;
	char *proto;
	char *peer;		/* unescaped "ADDRESS:PORT", "[ADDRESS]:PORT" */
	__u64 tx_packets, tx_bytes, rx_packets, rx_bytes;
	char *local;		/* this host's end, as peer; NULL: not sent */
};

/* An AGG net report: the header's counters and its two tables. */
struct mgc_net {
	__u64 ts, interval, packets, bytes, jobs, peers, lost;
	__u64 evicted_jobs, evicted_job_bytes, evicted_peers;
	__u64 evicted_peer_bytes, unkeyed, dropped, skipped;
	size_t njobs, npeers;
	struct mgc_net_job *job;	/* the J lines, in the report's order */
	struct mgc_net_peer *peer;	/* the P lines, in the report's order */
	struct mgc_kvs kv;		/* the header's words, known or not */
	char *strings;			/* storage of protos, labels, peers */
};

/*
 * Parse "A net <n> ts=... skipped=..." (every documented key required)
 * and its n lines: "J <job> <proto> <tx_packets> <tx_bytes> <rx_packets>
 * <rx_bytes> <label>" lines, then "P <job> <proto> <peer> <tx_packets>
 * <tx_bytes> <rx_packets> <rx_bytes> [<local>]" lines (a server before
 * the local end sends none). Either kind may be absent;
 * a J line after a P line is an error (the protocol sends all J lines
 * first), as are another tag, a count other than n, a number that is not
 * one (a job over 32 bits), and a bad %XX escape in a proto, label or
 * peer. Words after the last one a line defines are ignored (a later
 * server may add some). 0, -EPROTO with why, -ENOMEM. mgc_parse_agg takes
 * no "A net" report: the key decides the parser.
 */
int mgc_parse_net(const char *text, size_t len, struct mgc_net *a,
		  char *why, size_t whylen);
void mgc_net_free(struct mgc_net *a);

/* Packets and bytes sent (tx) and received (rx). */
struct mgc_counts {
	__u64 tx_packets, tx_bytes, rx_packets, rx_bytes;
};

/* A job's traffic over one protocol since magnetd met it ("net" line). */
struct mgc_totals_net {
	char *proto;		/* "tcp", "udp", "icmp", "icmpv6", "other" */
	struct mgc_counts c;
};

/* ... with one peer host ("peer" line; "other": the peers not listed). */
struct mgc_totals_peer {
	char *peer;		/* "10.0.0.2", "fe80::1", "other" */
	bool other;
	struct mgc_counts c;
	__u64 evictions;	/* other's */
};

/* A TOTALS job line and the net and peer lines after it. */
struct mgc_totals_job {
	__u64 cgroup;		/* 0: "other" */
	char *path;		/* unescaped */
	__u64 events, sock_bytes;
	bool exported;
	struct mgc_slurm slurm;
	size_t nnet, npeers;
	struct mgc_totals_net *net;	/* into the reply's arrays */
	struct mgc_totals_peer *peer;
};

/* A TOTALS reply: the node's counters, its jobs and their traffic. */
struct mgc_totals {
	__u64 ts, uptime, records, bytes, kernel_lost, daemon_dropped;
	__u64 net_packets, net_bytes, net_unkeyed;	/* 0 from an older magnetd */
	const char *node;	/* into kv */
	size_t njobs;
	struct mgc_totals_job *job;	/* in the reply's order, busiest first */
	struct mgc_totals_net *nets;
	struct mgc_totals_peer *peers;
	struct mgc_kvs kv;	/* the OK line's words, known or not */
	char *strings;
};

/*
 * Parse "OK <n> totals node=... probes=... jobs=..." and its n lines:
 * "job" lines (cgroup, path, events=, sock_bytes=, exported=, Slurm
 * words), each followed by its "net" and "peer" lines (of its cgroup:
 * another is an error), "probe" lines and lines of kinds added later
 * (ignored). 0, -EPROTO with why, -ENOMEM.
 */
int mgc_parse_totals(const char *text, size_t len, struct mgc_totals *t,
		     char *why, size_t whylen);
void mgc_totals_free(struct mgc_totals *t);

/*
 * A JSON record line of SUBSCRIBE ... FORMAT json: is it a LOST record?
 * If so, returns true with *lost the records it reports lost (the sum of
 * its reasons). The schema is magnet-dump -j's: fixed key order, no blanks.
 */
bool mgc_json_lost(const char *line, size_t len, __u64 *lost);

/* ---- a connection ---- */

struct mgc_conn {
	int fd;
	char server[MGC_SERVER_MAX];	/* "host:port", for messages */
	char err[MGC_ERR_MAX];		/* why the last call failed */
	bool eof;			/* the server closed its side */
	char *buf;			/* received, not yet handed out: */
	size_t cap, off, len;		/* buf[off, off + len) */
	__u64 *frame;			/* 8-aligned copy of the last frame */
	size_t frame_cap;
};

/*
 * How the connections mgc_connect makes authenticate, for the whole
 * process (set once, from the options): mode MGA_MUNGE_AUTO (the default:
 * a TCP server not on loopback), ALWAYS (every TCP server) or NEVER; munged
 * at socket (NULL: libmunge's default). Not copied: socket must live on.
 */
void mgc_set_munge(enum mga_munge mode, const char *socket);

/*
 * Connect to spec: an absolute path is magnetd's Unix socket; else
 * (mgc_split_addr's forms) TCP, with getaddrinfo, trying every
 * address it gives, each for up to timeout_ms (-1: the system's). The
 * socket is non-blocking. Then, where mgc_set_munge says so, `AUTH MUNGE`
 * with a fresh credential, its reply awaited as long. 0, or a negative
 * errno with err set, e.g. "cannot connect to 127.0.0.1:8650: Connection
 * refused (is magnetd running?)", or -EACCES with "10.0.0.7:8650 refused
 * MUNGE authentication: auth: replayed credential ...". mgc_close is
 * needed either way.
 */
int mgc_connect(struct mgc_conn *c, const char *spec, int timeout_ms);
void mgc_close(struct mgc_conn *c);

/*
 * Send lines (each ending in '\n'; several pipeline commands), waiting
 * while the socket is full. 0 or a negative errno with err set.
 */
int mgc_send(struct mgc_conn *c, const char *lines);

/*
 * One read of what the socket has, never blocking: > 0 bytes taken, 0 when
 * the server has closed (eof set), -EAGAIN when nothing is there, other
 * negative errno values with err set.
 */
ssize_t mgc_fill(struct mgc_conn *c);

/*
 * The next whole message already received: 1 with *m; 0 when none is
 * complete yet (or, with eof set, none will be); negative with err set for
 * a protocol error, or a connection closed inside a message. *m is valid
 * until the next mgc_fill or mgc_recv; a frame's body is 8-byte aligned.
 */
int mgc_next(struct mgc_conn *c, struct mgc_msg *m);

/*
 * Wait up to timeout_ms (-1: forever) for the next message: 1 with *m, 0
 * when the server closed the connection between messages (err says so),
 * -ETIMEDOUT, -EINTR when a signal interrupted the wait, other negative
 * errno values with err set.
 */
int mgc_recv(struct mgc_conn *c, struct mgc_msg *m, int timeout_ms);

/*
 * Send one command and wait for its reply, an OK or ERR message: 1 with
 * *m; data arriving first is a protocol error (use it before SUBSCRIBE and
 * AGG, or on a connection without them). 0 or negative as mgc_recv.
 */
int mgc_command(struct mgc_conn *c, const char *cmd, struct mgc_msg *m,
		int timeout_ms);

#endif /* MAGNET_CLIENT_MGCLIENT_H */
