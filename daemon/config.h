/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnetd's configuration: built-in defaults, then the config file, then
 * the command line (docs/magnetd.conf.md, daemon/magnetd.conf).
 *
 * The file is `key = value` lines. Blanks around keys and values are
 * trimmed; a line whose first non-blank character is '#' is a comment, and
 * blank lines are skipped. A '#' after a value is part of the value (paths
 * and probe specs may hold one), so comments go on lines of their own.
 * There is no quoting. A scalar key given twice takes the later value;
 * allow and probe accumulate, and an empty value (`allow =`) clears what
 * the lines above gave.
 *
 * Every key is also a long option, spelled with '-' for '_'
 * (`--client-queue 8M` or `--client-queue=8M`). Options override the
 * file; the first --allow or --probe on the command line replaces the
 * file's list (later ones add to it), and an empty one (`--allow ''`)
 * leaves it empty.
 *
 * Loading has no global state (no getopt): SIGHUP reloads by loading the
 * same argv into a second struct, and switching to it only if that
 * worked, so a bad edit leaves the running configuration in force.
 */
#ifndef MAGNET_DAEMON_CONFIG_H
#define MAGNET_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

#define MG_CONFIG_DEFAULT_PATH	"/etc/magnet/magnetd.conf"
#define MG_CONFIG_DEFAULT_SOCKET	"/run/magnet/magnetd.sock"
#define MG_CONFIG_ALLOW_MAX	64
#define MG_CONFIG_PROBES_MAX	64
/* Room for any error message mg_config_load or mg_config_check writes. */
#define MG_CONFIG_ERR_MAX	512

/* AUTO: stderr with -f, syslog otherwise. */
enum mg_log_target { MG_LOG_AUTO, MG_LOG_STDERR, MG_LOG_SYSLOG };
/* How the rings are read: in place (discard mode), or AIO copies. */
enum mg_read_mode { MG_READ_MAPPED, MG_READ_AIO };

/* An allow entry; addr holds 4 bytes for AF_INET, 16 for AF_INET6. */
struct mg_cidr {
	int family;		/* AF_INET or AF_INET6 */
	unsigned char addr[16];	/* host bits cleared */
	unsigned int prefix;	/* 0..32 or 0..128 */
};

/* An optional listener: text "" is off. */
struct mg_listener {
	char text[128];
	struct sockaddr_storage addr;
	socklen_t len;
};

struct mg_config {
	char config_path[4096];	/* the file read ("" if the default one does not exist) */
	bool foreground;	/* -f, --foreground (command line only) */
	enum mg_log_target log;	/* log = auto|stderr|syslog */
	char listen[128];	/* listen = ADDR:PORT, default "127.0.0.1:8650" */
	struct sockaddr_storage listen_addr;	/* parsed */
	socklen_t listen_len;
	char socket[108];	/* socket = PATH (sun_path), "" none */
	int unix_sndbuf;	/* its clients' send buffer (not a key: tests) */
	char access_all[512];	/* access_all = users, @groups: level ALL (access.h) */
	char access_totals[512];	/* access_totals = ...: level TOTALS */
	struct mg_cidr allow[MG_CONFIG_ALLOW_MAX];	/* allow = CIDR[,CIDR...], repeatable */
	unsigned int nallow;
	unsigned int max_clients;	/* 64, on the client port */
	size_t client_queue;		/* 4M */
	unsigned int client_timeout_ms;	/* 5s */
	unsigned int idle_timeout_ms;	/* 5m, 0: never */
	unsigned int max_clients_per_user;	/* 16, root exempt */
	unsigned int root_reserve;	/* 4: root's beyond each listener's */
	unsigned int prometheus_clients;	/* 8 */
	unsigned int supermon_clients;		/* 8 */
	unsigned int request_timeout_ms;	/* 10s, 0: never */
	char dir[4096];			/* /sys/kernel/debug/magnet */
	size_t ring_size;		/* 4M: grow each CPU's ring to it, 0: leave */
	size_t ring_memory;		/* all rings at most, 0: 1/32 of memory */
	enum mg_read_mode read;		/* mapped */
	size_t read_buffer;		/* 256K, per CPU, at least 2*MAGNET_RECORD_MAX */
	size_t watermark;		/* 64K, 0: off */
	unsigned int latency_ms;	/* 100 (read timeout), 0: off */
	unsigned int net_settle_ms;	/* 1000: TCP packets wait, in order */
	size_t queue;			/* 64M, collection -> server */
	char trace_dir[4096];		/* trace = DIR, "" none */
	size_t trace_size;		/* 64M, rotation, 0: one file */
	size_t trace_queue;		/* 16M */
	/* probe = <magnet-ctl "probe add" arguments>, repeatable, e.g.
	 * "kprobe tcp_sendmsg handler sock"; strings owned by the config */
	char *probes[MG_CONFIG_PROBES_MAX];
	unsigned int nprobes;
	unsigned int agg_entries;	/* 4096, power of two */
	unsigned int agg_top;		/* 50 */
	struct mg_listener prometheus;	/* prometheus = ADDR:PORT, off */
	struct mg_listener supermon;	/* supermon = ADDR:PORT, off */
	unsigned int export_jobs;	/* 20: jobs with their own series */
	char munge_socket[4096];	/* munged's, "": libmunge's default */
};

/*
 * The file read without -c: MG_CONFIG_DEFAULT_PATH. A test hook: the unit
 * tests point it elsewhere, so they do not depend on the machine's /etc.
 */
extern const char *mg_config_default_path;

/* Zeroes *c and fills in the defaults (no allocation). */
void mg_config_defaults(struct mg_config *c);

/*
 * -c FILE / --config FILE names the file (an explicit file that is missing
 * is an error; the default one may be absent), then the file is read, then
 * the other options override it, then values that depend on each other
 * are checked (watermark <= read_buffer, ...).
 *
 * *c is initialised here (mg_config_defaults): it must not hold probes of
 * an earlier load (mg_config_free it first, or load into another struct).
 * Returns 0; 1 when --help was asked (usage already printed to stdout,
 * nothing else done); -EINVAL with err filled ("FILE:12: unknown key 'x'",
 * "--client-queue: bad size 'x'", ...; no newline), *c then holding no
 * allocation. Never exits, never prints except --help. Touches no global
 * state, so it may be called again (SIGHUP) with the same argv. A relative
 * -c path is relative to the working directory of each call.
 *
 * Does not apply mg_config_check (the daemon does, after loading).
 */
int mg_config_load(struct mg_config *c, int argc, char **argv, char *err,
		   size_t errlen);

/* Frees the probe strings (nprobes becomes 0); safe to call twice. */
void mg_config_free(struct mg_config *c);

/* The --help text. */
void mg_config_usage(FILE *f);

/*
 * The rules the daemon enforces on a loaded configuration: a listen
 * address other than loopback needs an allowlist. 0, or -EINVAL with err
 * filled ("listening on 0.0.0.0:8650 needs an allowlist: --allow CIDR (or
 * allow = in magnetd.conf)").
 */
int mg_config_check(const struct mg_config *c, char *err, size_t errlen);

/*
 * After a SIGHUP reload: the keys whose change between old and cur the
 * running daemon does not apply (listen, dir, the buffers, trace, probes,
 * ...: see docs/magnetd.md, "Signals"). Returns how many changed, and
 * writes their names, ", "-separated, to keys (cut to len; "" for none).
 * allow, max_clients, max_clients_per_user, root_reserve,
 * prometheus_clients, supermon_clients, client_queue, client_timeout,
 * idle_timeout, request_timeout, agg_top, log, munge_socket, access_all
 * and access_totals apply at once and are never listed.
 */
unsigned int mg_config_restart_keys(const struct mg_config *old,
				    const struct mg_config *cur, char *keys,
				    size_t len);

/*
 * "10.0.0.0/8", "192.168.1.5" (/32), "2001:db8::/32", "::1" (/128).
 * Numeric addresses only; host bits below the prefix are cleared. 0,
 * -EINVAL for a bad address or prefix syntax, -ERANGE for a prefix over
 * 32 (IPv4) or 128 (IPv6).
 */
int mg_cidr_parse(const char *s, struct mg_cidr *out);

/*
 * Whether the peer address sa (AF_INET or AF_INET6; anything else never
 * matches) is in c. IPv4 addresses are compared in their IPv4-mapped IPv6
 * form (::ffff:a.b.c.d), as a dual-stack socket reports IPv4 peers: so
 * 10.0.0.0/8 matches ::ffff:10.1.2.3, and ::/0 matches every peer.
 */
bool mg_cidr_match(const struct mg_cidr *c, const struct sockaddr *sa);

/* "10.0.0.0/8", "2001:db8::/32": c in text, into buf (at least 64 bytes). */
void mg_cidr_format(const struct mg_cidr *c, char *buf, size_t len);

/* 127.0.0.0/8, ::1, and ::ffff:127.0.0.0/104. */
bool mg_sockaddr_is_loopback(const struct sockaddr *sa);

/*
 * "127.0.0.1:8650", "[::1]:8650", "0.0.0.0:8650", "[::]:8650", and
 * "*:8650" for 0.0.0.0 (IPv4 only: use [::] for both families where the
 * system allows dual-stack sockets). Numeric addresses only, port 1 to
 * 65535. 0 with *ss (zeroed first) and *len set, or -EINVAL.
 */
int mg_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len);

#endif /* MAGNET_DAEMON_CONFIG_H */
