/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnet-ctl: the generic-netlink control tool. A command line is parsed
 * into a struct ctl_req (no kernel needed: tests/unit/test_ctl.c checks
 * every form), which ctl_req_msg() turns into the request message and the
 * command's run() sends. Grammar and output: docs/magnet-ctl.md.
 */
#ifndef MAGNET_CTL_H
#define MAGNET_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/magnet.h>

#define PROG			"magnet-ctl"

/* Exit status. */
#define CTL_EXIT_OK		0
#define CTL_EXIT_USAGE		1
#define CTL_EXIT_FAIL		2

/*
 * Highest CPU a cpu filter may name, plus one: x86_64's largest NR_CPUS.
 * Whether a CPU exists is the kernel's business.
 */
#define CTL_CPUS_MAX		8192
#define CTL_CPU_WORDS		(CTL_CPUS_MAX / 64)
/* PID_MAX_LIMIT on 64-bit kernels. */
#define CTL_TGID_MAX		4194304U

enum pr_mode {
	PR_TEXT,
	PR_JSON,
	PR_MACHINE,
};

struct ctl_cmd;
struct ctl_nl;
struct ctl_object;

/* Which attributes of a nest are set: bit n for attribute type n. */
#define CTL_BIT(attr)		(1U << (attr))

struct ctl_req {
	const struct ctl_cmd *cmd;	/* what runs it */
	enum pr_mode mode;		/* -j, -m */
	__u8 genl_cmd;			/* MAGNET_CMD_*, 0: none */
	bool dump;			/* NLM_F_DUMP */

	/* MAGNET_A_PROBE */
	__u32 probe_attrs;		/* CTL_BIT(MAGNET_PROBE_A_*) */
	__u16 id;
	const char *name;
	__u8 type;
	const char *symbol;		/* points into sym_buf */
	__u32 offset;
	__u8 nargs;
	__u16 capture_len;
	__u8 capture_arg;
	const char *handler;
	__u32 flags;
	__u32 sample_every;
	__u64 sample_interval_ns;
	char sym_buf[512];

	/* PROBE_SET is a read-modify-write of FLAGS: new = (old & ~clear) | set */
	__u32 flags_set, flags_clear;

	/* MAGNET_A_FILTER */
	__u32 filter_attrs;		/* CTL_BIT(MAGNET_FILTER_A_*) */
	__u32 filter_id;
	__u8 kind;
	__u8 action;
	__u64 value;
	unsigned int cpu_words;		/* words of cpus[] sent */
	__u64 cpus[CTL_CPU_WORDS];

	/* MAGNET_A_BUFFER */
	__u32 buffer_attrs;		/* CTL_BIT(MAGNET_BUFFER_A_*) */
	__u64 size;
	__u8 mode_buf;			/* 0 discard, 1 overwrite */
	__u8 fair_fill;			/* percent, 0: off */

	/* monitor */
	long long count;		/* -c COUNT; -1: until interrupted */

	const char *help_object;	/* help: for this object only, or NULL */

	const struct ctl_set *set;	/* probe add/del set NAME */
	bool offline;			/* runs without the module (nl NULL) */
};

/* Parsing state of one command line. */
struct ctl_args {
	int argc;
	char **argv;
	int i;				/* next word */
	struct ctl_req *req;
	const struct ctl_cmd *cmd;	/* for usage messages */
	const struct ctl_object *obj;
	const struct ctl_cmd *instead;	/* -h or -V among the words: run that */
};

struct ctl_cmd {
	const char *name;		/* NULL: the object's only command */
	const char *usage;		/* words after "magnet-ctl OBJECT [NAME]" */
	int (*parse)(struct ctl_args *a);	/* 0 or -1 (message printed) */
	int (*run)(struct ctl_nl *nl, struct ctl_req *r);	/* exit status */
};

struct ctl_object {
	const char *name;
	const char *summary;
	const struct ctl_cmd *cmds;	/* ends with an entry whose usage is NULL */
	const char *dflt;		/* command when none is given, or NULL */
	const char *notes;		/* extra help text, or NULL */
};

extern const struct ctl_object ctl_probe_object, ctl_filter_object,
	ctl_sample_object, ctl_buffer_object, ctl_stats_object,
	ctl_monitor_object;

/* Where messages and output go (the unit test redirects them). */
extern FILE *ctl_errf;
extern FILE *ctl_outf;

/* ---- exec.c: the command line ---- */

/*
 * Run one magnet-ctl command line in-process, exactly as the program would
 * (main() is this and nothing else): argv[0..argc-1] are the words after
 * the program's name, i.e. argv[0] is the object word or a global option
 * ({"probe", "add", "kprobe", "tcp_sendmsg", "handler", "sock"}, {"-j",
 * "stats"}). argv is not modified; words may be referred to only while
 * the call runs.
 *
 * Results go to out, messages (usage errors with their usage lines, the
 * kernel's refusals) to err: byte for byte what magnet-ctl prints on
 * stdout and stderr. NULL means stdout or stderr. Both are flushed before
 * it returns.
 *
 * Returns the exit status magnet-ctl would have: CTL_EXIT_OK,
 * CTL_EXIT_USAGE (bad words: nothing was sent), CTL_EXIT_FAIL (no module,
 * no permission, the kernel refused, out of memory). It never exits, and
 * leaves nothing behind: its netlink socket is closed and its memory freed
 * on every path, so a daemon may call it any number of times.
 *
 * Not reentrant: it points the ctl_outf/ctl_errf globals (and the printer's
 * state) at this call for its duration, then restores them; call it from
 * one thread at a time. "monitor" blocks until COUNT alarms or a SIGINT,
 * SIGTERM or SIGHUP, with its own handlers installed meanwhile (the
 * caller's are restored); a daemon has no business running it.
 */
int ctl_exec(int argc, char **argv, FILE *out, FILE *err);

/*
 * Parse a whole command line (argv[0] is the program) into r. Returns 0,
 * or CTL_EXIT_USAGE after printing the message and usage lines.
 */
int ctl_parse(int argc, char **argv, struct ctl_req *r);
void ctl_help(const struct ctl_object *obj);

/* ---- args.c: words and values ---- */

/*
 * Match word against the NULL-terminated words[] by exact name or unique
 * prefix. Returns the index, -ENOENT (no match) or -EAMBIGUOUS: then
 * *cands (if not NULL) gets the candidates, ", "-separated.
 */
#define EAMBIGUOUS	1000
int ctl_match(const char *word, const char *const *words, char *cands,
	      size_t len);

/* Decimal or 0x-hex, no sign, no spaces. 0, -EINVAL or -ERANGE (> max). */
int ctl_parse_u64(const char *s, __u64 max, __u64 *v);
/* Bytes with an optional K, M or G (also KiB, MiB, GiB): powers of 1024. */
int ctl_parse_size(const char *s, __u64 *v);
/* Duration with a unit ns, us, ms or s (decimals allowed: 1.5ms); a bare 0. */
int ctl_parse_duration(const char *s, __u64 *ns);
/* CPU list "0-3,5" into a bitmap of CTL_CPU_WORDS words; *words: used. */
int ctl_parse_cpus(const char *s, __u64 *mask, unsigned int *words);
/* SYMBOL[+OFFSET] */
int ctl_parse_target(const char *s, char *sym, size_t len, __u32 *offset,
		     bool *has_offset);
/* LEN[@ARG] */
int ctl_parse_capture(const char *s, __u16 *len, __u8 *arg);
/* All decimal digits (an id rather than a name). */
bool ctl_is_number(const char *s);

/* Inverses, for printing. */
void ctl_format_cpus(char *buf, size_t len, const __u64 *mask,
		     unsigned int words);
void ctl_format_size(char *buf, size_t len, __u64 v);
void ctl_format_duration(char *buf, size_t len, __u64 ns);

/*
 * Largest capture length that still fits one record with nargs arguments
 * (PAYLOADS in the UAPI header).
 */
unsigned int ctl_capture_max(__u8 type, unsigned int nargs);

/* ---- sets.c: named probe sets (probe add set NAME) ---- */
struct ctl_set;
const struct ctl_set *ctl_set_find(const char *name);
const char *ctl_set_names(void);	/* "a b c", for messages */
int ctl_set_add(struct ctl_nl *nl, struct ctl_req *r);
int ctl_set_del(struct ctl_nl *nl, struct ctl_req *r);
int ctl_set_list(struct ctl_nl *nl, struct ctl_req *r);

/* Shared parsing helpers for the objects. */
__attribute__((format(printf, 2, 3)))
int ctl_usage_error(struct ctl_args *a, const char *fmt, ...);
const char *ctl_next(struct ctl_args *a, const char *what);
/*
 * The number (0..max) after keyword key: what names it when it is missing;
 * "KEY N: out of range (0..MAX)" or "KEY N: not a number". 0 or -1.
 */
int ctl_next_u64(struct ctl_args *a, const char *what, const char *key,
		 __u64 max, __u64 *v);
bool ctl_more(struct ctl_args *a);
/*
 * Consume an option that may follow the words at the current word: -j,
 * -m; -h and -V too, which make the line the object's help (or the
 * version) whatever comes after. True if so.
 */
bool ctl_output_option(struct ctl_args *a);
/* Only output options may follow. */
int ctl_parse_end(struct ctl_args *a);
/* A probe by id (decimal) or name, into r's probe attributes. */
int ctl_parse_probe_ref(struct ctl_args *a, const char *what);
/* Prefix-match a keyword; message and -1 on failure. */
int ctl_keyword(struct ctl_args *a, const char *word,
		const char *const *words, const char *what);

/* ---- nl.c ---- */

/* Build the request message for r (family id fam). NULL on ENOMEM. */
struct nl_msg *ctl_req_msg(const struct ctl_req *r, int fam);

struct nlattr;
struct nlmsghdr;
struct nl_msg;

/* Called for each data message of a reply; attrs indexed by MAGNET_A_*. */
typedef int (*ctl_reply_fn)(struct nlattr **attrs, void *arg);

/* Connect and resolve the family; prints the reason and returns NULL. */
struct ctl_nl *ctl_nl_open(void);
/*
 * For the unit test: requests go to fd, replies (and alarms) come from it,
 * as if it were a netlink socket of family fam. Sequence numbers start at 1.
 */
struct ctl_nl *ctl_nl_wrap(int fd, int fam, int alarm_grp);
void ctl_nl_close(struct ctl_nl *nl);
/*
 * Print an NLMSG_ERROR or NLMSG_DONE's error (with the extended ACK: the
 * kernel's message, the offending or missing attribute of req) as
 * "magnet-ctl: OP: MESSAGE [attribute NAME] (strerror)", or a warning for
 * an ACK that carries a message. Returns the positive errno, 0 for an ACK.
 */
int ctl_nl_report(const char *op, struct nlmsghdr *nlh, struct nl_msg *req);
/*
 * Send r and hand each reply to fn. A dump interrupted by a change of the
 * probe set is started again (reset(arg) first) up to a few times.
 * Returns 0, or prints "magnet-ctl: OP: MESSAGE (strerror)" and returns
 * CTL_EXIT_FAIL.
 */
int ctl_nl_request(struct ctl_nl *nl, const struct ctl_req *r,
		   const char *op, ctl_reply_fn fn, void (*reset)(void *),
		   void *arg);
/* Join the alarm group; hand each alarm's attributes to fn until it
 * returns non-zero, or a signal; returns the exit status. */
int ctl_nl_monitor(struct ctl_nl *nl, ctl_reply_fn fn, void *arg,
		   volatile int *stop);
/* Integer of any width 1, 2, 4 or 8 (lenient about the kernel's choice). */
__u64 ctl_nla_uint(const struct nlattr *nla);
/* Nested attributes of nla into tb[0..max]; 0 or -1. */
int ctl_nla_nested(struct nlattr **tb, int max, const struct nlattr *nla);

/* ---- probe.c: the probe table as the kernel reports it ---- */

struct ctl_filter {
	__u32 id;
	__u8 kind;
	__u8 action;
	__u64 value;
	unsigned int cpu_words;
	__u64 cpus[CTL_CPU_WORDS];
};

struct ctl_pstats {
	__u64 hits, filtered, sampled, recorded, lost, missed, alarms,
	      alarms_dropped;
};
#define CTL_PSTATS		8	/* counters in struct ctl_pstats */

struct ctl_probe {
	__u16 id;
	char name[528];		/* KSYM_NAME_LEN + 16 */
	__u8 type;
	char symbol[512];
	__u32 offset;
	__u8 nargs;
	__u16 capture_len;
	__u8 capture_arg;
	char handler[32];
	__u32 flags;
	__u32 sample_every;
	__u64 sample_interval_ns;
	struct ctl_pstats stats;
	unsigned int nfilters;
	struct ctl_filter *filters;
};

struct ctl_probes {
	size_t n, cap;
	struct ctl_probe *v;
};

/* Decode one MAGNET_A_PROBE nest. 0 or -1. */
int ctl_probe_decode(const struct nlattr *nest, struct ctl_probe *p);
void ctl_probes_free(struct ctl_probes *ps);
/* All probes (PROBE_GET dump), sorted by id. Exit status. */
int ctl_probes_get(struct ctl_nl *nl, struct ctl_probes *ps, const char *op);
/* One probe by r's id or name (PROBE_GET doit). Exit status. */
int ctl_probe_get_one(struct ctl_nl *nl, const struct ctl_req *r,
		      struct ctl_probe *p, const char *op);
const char *ctl_probe_type_name(__u8 type);
const char *ctl_filter_kind_name(__u8 kind);
const char *ctl_filter_action_name(__u8 action);

/* ---- print.c: the one output path (text, JSON, tab-separated) ---- */

void pr_start(enum pr_mode mode);
/* Finish the document (closes JSON, newline). */
void pr_end(void);
/* A record: a JSON object in an array (or alone), a line in machine mode. */
void pr_record_open(const char *tag);
void pr_record_close(void);
/* Nested JSON containers; nothing in text and machine mode. */
void pr_array_open(const char *key);
void pr_array_close(void);
void pr_object_open(const char *key);
void pr_object_close(void);
/*
 * One field: "key":value in JSON, a tab-separated column in machine mode,
 * and in text mode printed with text (a printf format taking the value),
 * or not at all when text is NULL.
 */
void pr_u64(const char *key, const char *text, __u64 v);
void pr_str(const char *key, const char *text, const char *s);
void pr_hex(const char *key, const char *text, __u64 v);	/* "0x..." */
void pr_bool(const char *key, const char *text, bool v);
/* Text mode only. */
__attribute__((format(printf, 1, 2)))
void pr_text(const char *fmt, ...);
enum pr_mode pr_mode(void);
/* Escape s for text and machine output into buf: mg_escape(), one word. */
const char *pr_escape(char *buf, size_t len, const char *s);

/* Objects' printers, shared by list, show, stats and monitor. */
void ctl_print_probe(const struct ctl_probe *p);
/*
 * A probe's counters under their documented keys, in the order of struct
 * ctl_pstats (the -m columns); text[k] is counter k's text format.
 */
void ctl_print_pstats(const struct ctl_pstats *s,
		      const char *const text[CTL_PSTATS]);
void ctl_print_filter(__u16 probe, const struct ctl_filter *f);

#endif /* MAGNET_CTL_H */
