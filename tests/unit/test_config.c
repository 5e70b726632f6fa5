// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's operations plumbing: daemon/config.c (defaults, the file, the
 * command line, every validation error, CIDRs, listen addresses, the
 * allowlist rule, reload), daemon/log.c (stderr format, one line per call
 * across threads) and daemon/notify.c (sd_notify to real AF_UNIX datagram
 * sockets, by path and abstract name). The shipped daemon/magnetd.conf
 * must load and give exactly the defaults, commented or not.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "notify.h"
#include "testutil.h"

#ifndef MG_TEST_CONF
#define MG_TEST_CONF "daemon/magnetd.conf"
#endif

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static char err[MG_CONFIG_ERR_MAX];
static struct mg_config cfg;
static char conf[64];	/* the test's config file, removed in teardown */

/* Every file key, in the table's order (the reload list follows it). */
static const char *const file_keys[] = {
	"log", "listen", "allow", "max_clients", "client_queue",
	"client_timeout", "idle_timeout", "max_clients_per_user",
	"root_reserve", "prometheus_clients", "supermon_clients",
	"request_timeout", "dir", "read_buffer", "watermark", "latency",
	"queue", "trace", "trace_size", "trace_queue", "probe", "agg_entries",
	"agg_top", "munge_socket",
};

static void setup(void)
{
	/* The machine's /etc must not matter. */
	mg_config_default_path = "/nonexistent-magnet-test/magnetd.conf";
	conf[0] = '\0';
	err[0] = '\0';
}

static void teardown(void)
{
	mg_config_free(&cfg);
	if (conf[0])
		unlink(conf);
}

static const char *write_conf_len(const char *text, size_t len)
{
	if (!conf[0])
		close(tu_tmpfile(conf));
	tu_write_file(conf, text, len);
	return conf;
}

static const char *write_conf(const char *text)
{
	return write_conf_len(text, strlen(text));
}

/* mg_config_load of "magnetd" and words (up to a NULL). */
static int load_args(struct mg_config *c, const char *const *words)
{
	char *argv[256], *copy[256];
	int argc = 1, i, ret;

	/* cfg is static, so always valid to free; a and b of reload are not. */
	if (c == &cfg)
		mg_config_free(c);
	argv[0] = "magnetd";
	while (*words) {
		ck_assert_int_lt(argc, 255);
		argv[argc++] = (char *)*words++;
	}
	argv[argc] = NULL;
	memcpy(copy, argv, sizeof(argv));
	ret = mg_config_load(c, argc, argv, err, sizeof(err));
	/* argv is the daemon's to reload from: never permuted or written. */
	for (i = 0; i <= argc; i++)
		ck_assert_ptr_eq(argv[i], copy[i]);
	return ret;
}

#define LOAD(c, ...)	load_args(c, (const char *[]){ __VA_ARGS__, NULL })

static void load_ok_args(const char *const *words)
{
	int ret = load_args(&cfg, words);

	ck_assert_msg(ret == 0, "load failed (%d): %s", ret, err);
}

#define LOAD_OK(...)	load_ok_args((const char *[]){ __VA_ARGS__, NULL })

static void load_err_args(const char *want, const char *const *words)
{
	int ret = load_args(&cfg, words);

	ck_assert_msg(ret == -EINVAL, "expected '%s', got %d", want, ret);
	ck_assert_str_eq(err, want);
	/* A failed load holds nothing. */
	ck_assert_uint_eq(cfg.nprobes, 0);
}

#define LOAD_ERR(want, ...)	load_err_args(want, (const char *[]){ __VA_ARGS__, NULL })

static void cfg_eq(const struct mg_config *a, const struct mg_config *b)
{
	unsigned int i;

	ck_assert_int_eq(a->foreground, b->foreground);
	ck_assert_int_eq(a->log, b->log);
	ck_assert_str_eq(a->listen, b->listen);
	ck_assert_uint_eq(a->listen_len, b->listen_len);
	ck_assert(!memcmp(&a->listen_addr, &b->listen_addr, a->listen_len));
	ck_assert_uint_eq(a->nallow, b->nallow);
	ck_assert(!memcmp(a->allow, b->allow, a->nallow * sizeof(a->allow[0])));
	ck_assert_uint_eq(a->max_clients, b->max_clients);
	ck_assert_uint_eq(a->client_queue, b->client_queue);
	ck_assert_uint_eq(a->client_timeout_ms, b->client_timeout_ms);
	ck_assert_uint_eq(a->idle_timeout_ms, b->idle_timeout_ms);
	ck_assert_uint_eq(a->max_clients_per_user, b->max_clients_per_user);
	ck_assert_uint_eq(a->root_reserve, b->root_reserve);
	ck_assert_uint_eq(a->prometheus_clients, b->prometheus_clients);
	ck_assert_uint_eq(a->supermon_clients, b->supermon_clients);
	ck_assert_uint_eq(a->request_timeout_ms, b->request_timeout_ms);
	ck_assert_str_eq(a->dir, b->dir);
	ck_assert_uint_eq(a->read_buffer, b->read_buffer);
	ck_assert_uint_eq(a->watermark, b->watermark);
	ck_assert_uint_eq(a->latency_ms, b->latency_ms);
	ck_assert_uint_eq(a->queue, b->queue);
	ck_assert_str_eq(a->trace_dir, b->trace_dir);
	ck_assert_uint_eq(a->trace_size, b->trace_size);
	ck_assert_uint_eq(a->trace_queue, b->trace_queue);
	ck_assert_uint_eq(a->nprobes, b->nprobes);
	for (i = 0; i < a->nprobes; i++)
		ck_assert_str_eq(a->probes[i], b->probes[i]);
	ck_assert_uint_eq(a->agg_entries, b->agg_entries);
	ck_assert_uint_eq(a->agg_top, b->agg_top);
	ck_assert_str_eq(a->munge_socket, b->munge_socket);
}

static struct sockaddr_storage addr(const char *ip, unsigned int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
	} else {
		ck_assert_msg(inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1, "%s", ip);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
	}
	return ss;
}

#define SA(ss)	((const struct sockaddr *)&(ss))

/* ---- defaults ---- */

START_TEST(defaults)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&cfg.listen_addr;
	struct mg_config d;

	mg_config_defaults(&d);
	ck_assert_str_eq(d.config_path, "");
	ck_assert(!d.foreground);
	ck_assert_int_eq(d.log, MG_LOG_AUTO);
	ck_assert_str_eq(d.listen, "127.0.0.1:8650");
	ck_assert_uint_eq(d.nallow, 0);
	ck_assert_uint_eq(d.max_clients, 64);
	ck_assert_uint_eq(d.client_queue, 4 << 20);
	ck_assert_uint_eq(d.client_timeout_ms, 5000);
	ck_assert_uint_eq(d.idle_timeout_ms, 300000);
	ck_assert_uint_eq(d.max_clients_per_user, 16);
	ck_assert_uint_eq(d.root_reserve, 4);
	ck_assert_uint_eq(d.prometheus_clients, 8);
	ck_assert_uint_eq(d.supermon_clients, 8);
	ck_assert_uint_eq(d.request_timeout_ms, 10000);
	ck_assert_str_eq(d.dir, "/sys/kernel/debug/magnet");
	ck_assert_uint_eq(d.read_buffer, 256 << 10);
	ck_assert_uint_eq(d.watermark, 64 << 10);
	ck_assert_uint_eq(d.latency_ms, 100);
	ck_assert_uint_eq(d.queue, 64 << 20);
	ck_assert_str_eq(d.trace_dir, "");
	ck_assert_uint_eq(d.trace_size, 64 << 20);
	ck_assert_uint_eq(d.trace_queue, 16 << 20);
	ck_assert_uint_eq(d.nprobes, 0);
	ck_assert_uint_eq(d.agg_entries, 4096);
	ck_assert_uint_eq(d.agg_top, 50);
	ck_assert_str_eq(d.munge_socket, "");
	ck_assert_uint_ge(d.read_buffer, 2 * MAGNET_RECORD_MAX);

	/* No file, no options: the defaults, and the default file absent. */
	LOAD_OK(NULL);
	ck_assert_str_eq(cfg.config_path, "");
	ck_assert_str_eq(err, "");
	cfg_eq(&cfg, &d);
	ck_assert_int_eq(in->sin_family, AF_INET);
	ck_assert_uint_eq(ntohs(in->sin_port), 8650);
	ck_assert_uint_eq(ntohl(in->sin_addr.s_addr), INADDR_LOOPBACK);
	ck_assert_uint_eq(cfg.listen_len, sizeof(struct sockaddr_in));
	ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), 0);
}
END_TEST

START_TEST(default_file_read)
{
	/* Without -c, the default file is read when it exists. */
	mg_config_default_path = write_conf("max_clients = 7\n");
	LOAD_OK(NULL);
	ck_assert_str_eq(cfg.config_path, conf);
	ck_assert_uint_eq(cfg.max_clients, 7);
	mg_config_free(&cfg);

	/* -c wins over it; an explicit missing file is an error. */
	LOAD_ERR("cannot open /nonexistent-magnet-test/x.conf: No such file or directory",
		 "-c", "/nonexistent-magnet-test/x.conf");
	LOAD_ERR("cannot open /nonexistent-magnet-test/x.conf: No such file or directory",
		 "--config=/nonexistent-magnet-test/x.conf");
	/* A directory opens, and fails at the read. */
	LOAD_ERR("cannot read /: Is a directory", "--config", "/");
	/* The default path being a directory is an error too, not "absent". */
	mg_config_default_path = "/";
	LOAD_ERR("cannot read /: Is a directory", NULL);
}
END_TEST

/* ---- the file ---- */

START_TEST(file_parsing)
{
	static const char text[] =
		"# magnetd.conf\n"
		"\n"
		"   # an indented comment\n"
		"\t\n"
		"log=syslog\n"
		"  listen   =\t[::1]:9000  \n"
		"max_clients = 10\r\n"
		"max_clients = 20\n"			/* the later one wins */
		"allow = 10.0.0.0/8 , 192.168.1.5\n"
		"allow = 2001:db8::/32\n"		/* accumulates */
		"client_queue = 8m\n"
		"client_timeout = 7\n"			/* seconds */
		"dir = /tmp/magnet dir\n"		/* inner blanks kept */
		"read_buffer = 1M\n"
		"watermark = 0\n"
		"latency = 250\n"			/* milliseconds */
		"queue = 1G\n"
		"trace = /var/tmp/a#b\n"		/* '#' in a value is the value */
		"trace_size = 0\n"
		"trace_queue = 3M\n"
		"probe = kprobe tcp_sendmsg handler sock\n"
		"probe =   kretprobe  vfs_read args 3   \n"
		"agg_entries = 16777216\n"
		"agg_top = 1\n"
		"munge_socket = /run/munge/other.socket\n"
		"# the last line has no newline\n"
		"client_timeout = 2m";

	LOAD_OK("-c", write_conf(text));
	ck_assert_str_eq(cfg.config_path, conf);
	ck_assert_int_eq(cfg.log, MG_LOG_SYSLOG);
	ck_assert_str_eq(cfg.listen, "[::1]:9000");
	ck_assert_int_eq(cfg.listen_addr.ss_family, AF_INET6);
	ck_assert_uint_eq(cfg.listen_len, sizeof(struct sockaddr_in6));
	ck_assert_uint_eq(cfg.max_clients, 20);
	ck_assert_uint_eq(cfg.nallow, 3);
	ck_assert_int_eq(cfg.allow[0].family, AF_INET);
	ck_assert_uint_eq(cfg.allow[0].prefix, 8);
	ck_assert_uint_eq(cfg.allow[1].prefix, 32);
	ck_assert_int_eq(cfg.allow[2].family, AF_INET6);
	ck_assert_uint_eq(cfg.client_queue, 8 << 20);
	ck_assert_uint_eq(cfg.client_timeout_ms, 120000);
	ck_assert_str_eq(cfg.dir, "/tmp/magnet dir");
	ck_assert_uint_eq(cfg.read_buffer, 1 << 20);
	ck_assert_uint_eq(cfg.watermark, 0);
	ck_assert_uint_eq(cfg.latency_ms, 250);
	ck_assert_uint_eq(cfg.queue, 1ULL << 30);
	ck_assert_str_eq(cfg.trace_dir, "/var/tmp/a#b");
	ck_assert_str_eq(cfg.munge_socket, "/run/munge/other.socket");
	ck_assert_uint_eq(cfg.trace_size, 0);
	ck_assert_uint_eq(cfg.trace_queue, 3 << 20);
	ck_assert_uint_eq(cfg.nprobes, 2);
	ck_assert_str_eq(cfg.probes[0], "kprobe tcp_sendmsg handler sock");
	ck_assert_str_eq(cfg.probes[1], "kretprobe  vfs_read args 3");
	ck_assert_uint_eq(cfg.agg_entries, 1 << 24);
	ck_assert_uint_eq(cfg.agg_top, 1);
	ck_assert(!cfg.foreground);
}
END_TEST

START_TEST(file_units)
{
	static const struct {
		const char *line;
		size_t off;	/* of the field in struct mg_config */
		int is_size;
		unsigned long long want;
	} t[] = {
		{ "client_queue = 65536", offsetof(struct mg_config, client_queue), 1, 65536 },
		{ "client_queue = 64K", offsetof(struct mg_config, client_queue), 1, 65536 },
		{ "client_queue = 64k", offsetof(struct mg_config, client_queue), 1, 65536 },
		{ "client_queue = 1G", offsetof(struct mg_config, client_queue), 1, 1ULL << 30 },
		{ "client_queue = 1g", offsetof(struct mg_config, client_queue), 1, 1ULL << 30 },
		{ "client_queue = 0064K", offsetof(struct mg_config, client_queue), 1, 65536 },
		{ "client_timeout = 100ms", offsetof(struct mg_config, client_timeout_ms), 0, 100 },
		{ "client_timeout = 1500ms", offsetof(struct mg_config, client_timeout_ms), 0, 1500 },
		{ "client_timeout = 3s", offsetof(struct mg_config, client_timeout_ms), 0, 3000 },
		{ "client_timeout = 3", offsetof(struct mg_config, client_timeout_ms), 0, 3000 },
		{ "client_timeout = 60m", offsetof(struct mg_config, client_timeout_ms), 0, 3600000 },
		{ "idle_timeout = 0", offsetof(struct mg_config, idle_timeout_ms), 0, 0 },
		{ "idle_timeout = 1s", offsetof(struct mg_config, idle_timeout_ms), 0, 1000 },
		{ "idle_timeout = 90", offsetof(struct mg_config, idle_timeout_ms), 0, 90000 },
		{ "idle_timeout = 1440m", offsetof(struct mg_config, idle_timeout_ms), 0, 86400000 },
		{ "max_clients_per_user = 1", offsetof(struct mg_config, max_clients_per_user), 0, 1 },
		{ "max_clients_per_user = 65536", offsetof(struct mg_config, max_clients_per_user), 0, 65536 },
		{ "root_reserve = 0", offsetof(struct mg_config, root_reserve), 0, 0 },
		{ "root_reserve = 65536", offsetof(struct mg_config, root_reserve), 0, 65536 },
		{ "latency = 3", offsetof(struct mg_config, latency_ms), 0, 3 },
		{ "latency = 3ms", offsetof(struct mg_config, latency_ms), 0, 3 },
		{ "latency = 3s", offsetof(struct mg_config, latency_ms), 0, 3000 },
		{ "latency = 1m", offsetof(struct mg_config, latency_ms), 0, 60000 },
		{ "latency = 0", offsetof(struct mg_config, latency_ms), 0, 0 },
		{ "read_buffer = 8272", offsetof(struct mg_config, read_buffer), 1, 8272 },
		{ "trace_size = 1M", offsetof(struct mg_config, trace_size), 1, 1 << 20 },
		{ "trace_size = 1024G", offsetof(struct mg_config, trace_size), 1, 1ULL << 40 },
		{ "max_clients = 1", offsetof(struct mg_config, max_clients), 0, 1 },
		{ "max_clients = 65536", offsetof(struct mg_config, max_clients), 0, 65536 },
		{ "agg_entries = 1", offsetof(struct mg_config, agg_entries), 0, 1 },
		{ "agg_top = 65536", offsetof(struct mg_config, agg_top), 0, 65536 },
	};
	char text[128];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		unsigned long long got;

		/* read_buffer 8272 needs a watermark below it. */
		snprintf(text, sizeof(text), "watermark = 0\n%s\n", t[i].line);
		LOAD_OK("-c", write_conf(text));
		if (t[i].is_size)
			got = *(size_t *)((char *)&cfg + t[i].off);
		else
			got = *(unsigned int *)((char *)&cfg + t[i].off);
		ck_assert_msg(got == t[i].want, "'%s': %llu, not %llu", t[i].line,
			      got, t[i].want);
		mg_config_free(&cfg);
	}
}
END_TEST

START_TEST(file_lists)
{
	/* An empty value clears what the lines above gave. */
	LOAD_OK("-c", write_conf("allow = 10.0.0.0/8\n"
				 "probe = kprobe a\n"
				 "allow =\n"
				 "probe =\n"
				 "allow = 192.168.0.0/16\n"
				 "probe = kprobe b\n"));
	ck_assert_uint_eq(cfg.nallow, 1);
	ck_assert_uint_eq(cfg.allow[0].addr[0], 192);
	ck_assert_uint_eq(cfg.nprobes, 1);
	ck_assert_str_eq(cfg.probes[0], "kprobe b");
	mg_config_free(&cfg);

	/* 64 is the limit, over lines or commas. */
	{
		char text[8192];
		size_t n = 0;
		unsigned int i;

		for (i = 0; i < MG_CONFIG_ALLOW_MAX; i++)
			n += snprintf(text + n, sizeof(text) - n, "%s10.0.0.%u",
				      i % 2 ? "," : "\nallow = ", i);
		for (i = 0; i < MG_CONFIG_PROBES_MAX; i++)
			n += snprintf(text + n, sizeof(text) - n,
				      "\nprobe = kprobe f%u", i);
		LOAD_OK("-c", write_conf(text));
		ck_assert_uint_eq(cfg.nallow, MG_CONFIG_ALLOW_MAX);
		ck_assert_uint_eq(cfg.allow[63].addr[3], 63);
		ck_assert_uint_eq(cfg.nprobes, MG_CONFIG_PROBES_MAX);
		ck_assert_str_eq(cfg.probes[63], "kprobe f63");
		mg_config_free(&cfg);

		/* One more of each: line 1 is empty, allow lines 2..33. */
		snprintf(text + n, sizeof(text) - n, "\nprobe = kprobe x\n");
		write_conf(text);
		{
			char want[256];

			snprintf(want, sizeof(want), "%s:%u: probe: more than 64 probes",
				 conf, 1 + 32 + 64 + 1);
			LOAD_ERR(want, "-c", conf);
		}
		snprintf(text, sizeof(text), "allow = 10.0.0.0/8");
		for (i = 1; i < MG_CONFIG_ALLOW_MAX; i++)
			strcat(text, ",1.2.3.4");
		strcat(text, "\nallow = ::1\n");
		write_conf(text);
		{
			char want[256];

			snprintf(want, sizeof(want), "%s:2: allow: more than 64 entries", conf);
			LOAD_ERR(want, "-c", conf);
		}
	}
}
END_TEST

START_TEST(file_errors)
{
	static const struct {
		const char *text;
		const char *error;	/* after "FILE:" */
	} t[] = {
		{ "\n# c\nbogus = 1\n", "3: unknown key 'bogus'" },
		{ "client-queue = 8M\n", "1: unknown key 'client-queue'" },
		{ "Listen = 1.2.3.4:5\n", "1: unknown key 'Listen'" },
		{ "max_clients = 5\nlisten\n", "2: expected 'key = value', not 'listen'" },
		{ "  = 5\n", "1: missing key before '='" },
		{ "# x\nmax_clients = 0\n", "2: max_clients: must be 1 to 65536" },
		{ "max_clients =\n", "1: max_clients: missing value" },
		{ "idle_timeout = 500ms\n", "1: idle_timeout: must be 0 or 1s to 1440m" },
		{ "max_clients_per_user = 0\n", "1: max_clients_per_user: must be 1 to 65536" },
		{ "root_reserve = 65537\n", "1: root_reserve: must be 0 to 65536" },
		{ "listen =   \n", "1: listen: missing value" },
		{ "dir = relative\n", "1: dir: 'relative' is not an absolute path" },
		{ "foreground = yes\n", "1: 'foreground' is a command-line option only (-f)" },
		{ "config = /etc/x\n", "1: 'config' is a command-line option only (-c)" },
		{ "help = 1\n", "1: 'help' is a command-line option only (-h)" },
		{ "max_clients = 5 # five\n", "1: max_clients: bad number '5 # five'" },
		{ "a b c d e f g h i j k l m n o p q r s t u v w x y z = 1\n",
		  "1: unknown key 'a b c d e f g h i j k l m n o p q r s t ...'" },
		/* Five good lines, the sixth bad: the count is right. */
		{ "log = stderr\n\n# c\nagg_top = 3\nprobe = kprobe x\nagg_top = x\n",
		  "6: agg_top: bad number 'x'" },
		{ "probe = kprobe x\r\nprobe = kprobe y\r\nlog = xml\r\n",
		  "3: log: bad log target 'xml' (auto, stderr or syslog)" },
	};
	char want[256];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		write_conf(t[i].text);
		snprintf(want, sizeof(want), "%s:%s", conf, t[i].error);
		LOAD_ERR(want, "-c", conf);
	}

	/* A NUL byte cannot be told from the end of the line: refused. */
	write_conf_len("log = stderr\nmax_clients = 1\0 2\n", 32);
	snprintf(want, sizeof(want), "%s:2: NUL byte in line", conf);
	LOAD_ERR(want, "-c", conf);
}
END_TEST

/* ---- the command line ---- */

START_TEST(flags_override)
{
	write_conf("listen = 10.0.0.1:9000\n"
		   "allow = 10.0.0.0/8\n"
		   "max_clients = 10\n"
		   "client_queue = 1M\n"
		   "probe = kprobe a\n"
		   "probe = kprobe b\n"
		   "trace = /var/tmp/t\n"
		   "log = syslog\n");

	/* The file alone. */
	LOAD_OK("-c", conf);
	ck_assert_str_eq(cfg.listen, "10.0.0.1:9000");
	ck_assert_uint_eq(cfg.nallow, 1);
	ck_assert_uint_eq(cfg.max_clients, 10);
	ck_assert_uint_eq(cfg.nprobes, 2);
	mg_config_free(&cfg);

	/* Options win, wherever -c is; the first -a replaces the file's list. */
	LOAD_OK("--max-clients", "20", "-l", "127.0.0.1:7000", "-c", conf,
		"--client-queue=8M", "-a", "192.168.0.0/16", "--allow=::1",
		"--trace=", "--log", "stderr", "-f");
	ck_assert_str_eq(cfg.config_path, conf);
	ck_assert_uint_eq(cfg.max_clients, 20);
	ck_assert_str_eq(cfg.listen, "127.0.0.1:7000");
	ck_assert_uint_eq(cfg.client_queue, 8 << 20);
	ck_assert_uint_eq(cfg.nallow, 2);
	ck_assert_uint_eq(cfg.allow[0].addr[0], 192);
	ck_assert_int_eq(cfg.allow[1].family, AF_INET6);
	ck_assert_str_eq(cfg.trace_dir, "");
	ck_assert_int_eq(cfg.log, MG_LOG_STDERR);
	ck_assert(cfg.foreground);
	/* No --probe: the file's stay. */
	ck_assert_uint_eq(cfg.nprobes, 2);
	ck_assert_str_eq(cfg.probes[1], "kprobe b");
	mg_config_free(&cfg);

	/* --probe replaces the file's, '' leaves none. */
	LOAD_OK("-c", conf, "-p", "kprobe x", "--probe", "kprobe y");
	ck_assert_uint_eq(cfg.nprobes, 2);
	ck_assert_str_eq(cfg.probes[0], "kprobe x");
	ck_assert_str_eq(cfg.probes[1], "kprobe y");
	mg_config_free(&cfg);
	LOAD_OK("-c", conf, "--probe", "", "--allow=");
	ck_assert_uint_eq(cfg.nprobes, 0);
	ck_assert_uint_eq(cfg.nallow, 0);
	mg_config_free(&cfg);

	/* Short clusters and attached values; the last -c counts. */
	LOAD_OK("-c", "/nonexistent-magnet-test/y", "-fc", conf,
		"-l127.0.0.2:1", "-d/x", "-t", "/y", "-fa10.1.0.0/16");
	ck_assert(cfg.foreground);
	ck_assert_str_eq(cfg.listen, "127.0.0.2:1");
	ck_assert_str_eq(cfg.dir, "/x");
	ck_assert_str_eq(cfg.trace_dir, "/y");
	ck_assert_uint_eq(cfg.nallow, 1);
	ck_assert_uint_eq(cfg.allow[0].addr[1], 1);
	ck_assert_uint_eq(cfg.max_clients, 10);
	mg_config_free(&cfg);

	/* Every key has its long option. */
	LOAD_OK("--log", "auto", "--listen", "127.0.0.1:1", "--allow", "::1",
		"--max-clients", "2", "--client-queue", "64K",
		"--client-timeout", "1", "--dir", "/d", "--read-buffer", "16K",
		"--watermark", "1K", "--latency", "5", "--queue", "1M",
		"--trace", "/t", "--trace-size", "2M", "--trace-queue", "1M",
		"--probe", "kprobe p", "--agg-entries", "2", "--agg-top", "3",
		"--foreground");
	ck_assert_int_eq(cfg.log, MG_LOG_AUTO);
	ck_assert_uint_eq(cfg.nallow, 1);
	ck_assert_uint_eq(cfg.max_clients, 2);
	ck_assert_uint_eq(cfg.client_queue, 65536);
	ck_assert_uint_eq(cfg.client_timeout_ms, 1000);
	ck_assert_str_eq(cfg.dir, "/d");
	ck_assert_uint_eq(cfg.read_buffer, 16384);
	ck_assert_uint_eq(cfg.watermark, 1024);
	ck_assert_uint_eq(cfg.latency_ms, 5);
	ck_assert_uint_eq(cfg.queue, 1 << 20);
	ck_assert_str_eq(cfg.trace_dir, "/t");
	ck_assert_uint_eq(cfg.trace_size, 2 << 20);
	ck_assert_uint_eq(cfg.trace_queue, 1 << 20);
	ck_assert_uint_eq(cfg.nprobes, 1);
	ck_assert_uint_eq(cfg.agg_entries, 2);
	ck_assert_uint_eq(cfg.agg_top, 3);
	ck_assert(cfg.foreground);
}
END_TEST

START_TEST(option_errors)
{
	/* Syntax errors are found before the file is read. */
	LOAD_ERR("unknown option '--bogus'", "--bogus");
	LOAD_ERR("unknown option '--bogus'", "--bogus=1");
	LOAD_ERR("unknown option '--client_queue'", "--client_queue", "1M");
	LOAD_ERR("unknown option '--'", "--=x");
	LOAD_ERR("unknown option '-x'", "-x");
	LOAD_ERR("unknown option '-x'", "-fx");
	LOAD_ERR("unexpected argument 'extra' (magnetd takes options only)", "extra");
	LOAD_ERR("unexpected argument '-' (magnetd takes options only)", "-");
	LOAD_ERR("unexpected argument '-f' (magnetd takes options only)", "--", "-f");
	LOAD_ERR("-l: missing value", "-l");
	LOAD_ERR("-l: missing value", "-fl");
	LOAD_ERR("--listen: missing value", "--listen");
	LOAD_ERR("--foreground takes no value", "--foreground=1");
	LOAD_ERR("--help takes no value", "--help=yes");
	LOAD_ERR("-c: missing value", "-c", "");
	LOAD_ERR("--listen: missing value", "--listen", "");
	LOAD_ERR("--max-clients: missing value", "--max-clients=");
	/* ...and before --help would print anything. */
	LOAD_ERR("unknown option '--bogus'", "--help", "--bogus");
}
END_TEST

START_TEST(validation)
{
	static const struct {
		const char *args[6];
		const char *error;
	} t[] = {
		{ { "--log", "xml" }, "--log: bad log target 'xml' (auto, stderr or syslog)" },
		{ { "--log", "SYSLOG" }, "--log: bad log target 'SYSLOG' (auto, stderr or syslog)" },
		{ { "--allow", "10.0.0.0/33" }, "--allow: bad CIDR '10.0.0.0/33': an IPv4 prefix is at most 32" },
		{ { "--allow", "::/129" }, "--allow: bad CIDR '::/129': an IPv6 prefix is at most 128" },
		{ { "-a", "foo" }, "-a: bad CIDR 'foo': not a numeric IPv4 or IPv6 address" },
		{ { "-a", "10.0.0.0/x" }, "-a: bad CIDR '10.0.0.0/x': the prefix after '/' must be a decimal number" },
		{ { "-a", "10.0.0.0/8,,1.2.3.4" }, "-a: empty entry in '10.0.0.0/8,,1.2.3.4'" },
		{ { "-a", "10.0.0.0/8," }, "-a: empty entry in '10.0.0.0/8,'" },
		{ { "--max-clients", "0" }, "--max-clients: must be 1 to 65536" },
		{ { "--max-clients", "65537" }, "--max-clients: must be 1 to 65536" },
		{ { "--max-clients", "99999999999999999999999" }, "--max-clients: must be 1 to 65536" },
		{ { "--max-clients", "x" }, "--max-clients: bad number 'x'" },
		{ { "--max-clients", "-1" }, "--max-clients: bad number '-1'" },
		{ { "--max-clients", " 5" }, "--max-clients: bad number ' 5'" },
		{ { "--max-clients", "0x10" }, "--max-clients: bad number '0x10'" },
		{ { "--client-queue", "x" }, "--client-queue: bad size 'x' (bytes, or a number with K, M or G)" },
		{ { "--client-queue", "8MB" }, "--client-queue: bad size '8MB' (bytes, or a number with K, M or G)" },
		{ { "--client-queue", "8T" }, "--client-queue: bad size '8T' (bytes, or a number with K, M or G)" },
		{ { "--client-queue", "1.5M" }, "--client-queue: bad size '1.5M' (bytes, or a number with K, M or G)" },
		{ { "--client-queue", "63K" }, "--client-queue: must be 64K to 1G" },
		{ { "--client-queue", "1025M" }, "--client-queue: must be 64K to 1G" },
		{ { "--client-queue", "99999999999999999999G" }, "--client-queue: must be 64K to 1G" },
		{ { "--client-queue", "17179869184G" }, "--client-queue: must be 64K to 1G" },
		{ { "--client-timeout", "5h" }, "--client-timeout: bad duration '5h' (seconds, or a number with ms, s or m)" },
		{ { "--client-timeout", "1.5s" }, "--client-timeout: bad duration '1.5s' (seconds, or a number with ms, s or m)" },
		{ { "--client-timeout", "99ms" }, "--client-timeout: must be 100ms to 60m" },
		{ { "--client-timeout", "0" }, "--client-timeout: must be 100ms to 60m" },
		{ { "--client-timeout", "3601" }, "--client-timeout: must be 100ms to 60m" },
		{ { "--latency", "x" }, "--latency: bad duration 'x' (milliseconds, or a number with ms, s or m)" },
		{ { "--latency", "61s" }, "--latency: must be 0ms to 1m" },
		{ { "--latency", "60001" }, "--latency: must be 0ms to 1m" },
		{ { "-d", "relative/x" }, "-d: 'relative/x' is not an absolute path" },
		{ { "--dir", "" }, "--dir: missing value" },
		{ { "--trace", "t" }, "--trace: 't' is not an absolute path" },
		{ { "--munge-socket", "sock" }, "--munge-socket: 'sock' is not an absolute path" },
		{ { "--read-buffer", "8271" }, "--read-buffer: must be 8272 to 1G (a read must hold two of the largest records, 2 * MAGNET_RECORD_MAX)" },
		{ { "--read-buffer", "2G" }, "--read-buffer: must be 8272 to 1G (a read must hold two of the largest records, 2 * MAGNET_RECORD_MAX)" },
		{ { "--watermark", "2G" }, "--watermark: must be 0 to 1G" },
		{ { "--watermark", "257K" }, "watermark (257K) must be at most read_buffer (256K)" },
		{ { "--read-buffer", "32K" }, "watermark (64K) must be at most read_buffer (32K)" },
		{ { "--queue", "1023K" }, "--queue: must be 1M to 64G" },
		{ { "--queue", "65G" }, "--queue: must be 1M to 64G" },
		{ { "--read-buffer", "1G", "--queue", "2G" }, "queue (2G) must be at least twice read_buffer (1G) + 16 bytes (2147483664): a read must fit in half of it" },
		{ { "--trace-size", "1023K" }, "--trace-size: must be 0 or 1M to 1024G" },
		{ { "--trace-size", "1025G" }, "--trace-size: must be 0 or 1M to 1024G" },
		{ { "--trace-queue", "0" }, "--trace-queue: must be 1M to 64G" },
		{ { "-t", "/t", "--read-buffer", "1M" , "--trace-queue=2M" }, "trace_queue (2M) must be at least twice read_buffer (1M) + 16 bytes (2097168): a read must fit in half of it" },
		{ { "--agg-entries", "3" }, "--agg-entries: must be a power of two from 1 to 16777216" },
		{ { "--agg-entries", "0" }, "--agg-entries: must be a power of two from 1 to 16777216" },
		{ { "--agg-entries", "33554432" }, "--agg-entries: must be a power of two from 1 to 16777216" },
		{ { "--agg-entries", "4097" }, "--agg-entries: must be a power of two from 1 to 16777216" },
		{ { "--agg-top", "0" }, "--agg-top: must be 1 to 65536" },
		{ { "--agg-top", "65537" }, "--agg-top: must be 1 to 65536" },
	};
	const char *words[6];
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		for (j = 0; j < 5 && t[i].args[j]; j++)
			words[j] = t[i].args[j];
		words[j] = NULL;
		load_err_args(t[i].error, words);
	}

	/* The edges that are allowed. */
	LOAD_OK("--read-buffer", "8272", "--watermark", "8272", "--queue", "1M");
	ck_assert_uint_eq(cfg.read_buffer, 8272);
	ck_assert_uint_eq(cfg.watermark, 8272);
	LOAD_OK("--read-buffer", "1G", "--queue", "3G", "--watermark", "1G");
	LOAD_OK("--read-buffer", "1M", "--trace-queue", "2M");	/* no trace */
	LOAD_OK("-t", "/t", "--read-buffer", "1M", "--trace-queue=2097168");
	LOAD_OK("--agg-entries", "16777216", "--client-timeout", "100ms",
		"--latency", "60s", "--trace-size", "1024G");

	/* Paths up to the field's size. */
	{
		char path[4097];

		memset(path, 'a', sizeof(path) - 1);
		path[0] = '/';
		path[4095] = '\0';
		LOAD_OK("-d", path, "--trace", path);
		ck_assert_uint_eq(strlen(cfg.dir), 4095);
		ck_assert_uint_eq(strlen(cfg.trace_dir), 4095);
		path[4095] = 'a';
		path[4096] = '\0';
		LOAD_ERR("-d: too long (max 4095 bytes)", "-d", path);
		LOAD_ERR("--trace: too long (max 4095 bytes)", "--trace", path);
	}

	/* 64 probes on the command line, not 65. */
	{
		const char *w[2 * MG_CONFIG_PROBES_MAX + 3];
		char names[MG_CONFIG_PROBES_MAX + 1][16];

		for (i = 0; i <= MG_CONFIG_PROBES_MAX; i++) {
			snprintf(names[i], sizeof(names[i]), "kprobe f%u", i);
			w[2 * i] = "-p";
			w[2 * i + 1] = names[i];
		}
		w[2 * MG_CONFIG_PROBES_MAX] = NULL;
		load_ok_args(w);
		ck_assert_uint_eq(cfg.nprobes, MG_CONFIG_PROBES_MAX);
		mg_config_free(&cfg);
		w[2 * MG_CONFIG_PROBES_MAX] = "-p";
		w[2 * MG_CONFIG_PROBES_MAX + 2] = NULL;
		load_err_args("-p: more than 64 probes", w);
	}
}
END_TEST

START_TEST(help)
{
	static const char *const flags[] = {
		"-c, --config FILE", "-f, --foreground", "-h, --help",
		"-l, --listen ADDR:PORT", "-a, --allow CIDR", "-d, --dir DIR",
		"-t, --trace DIR", "-p, --probe SPEC",
	};
	char path[64], *out, want[64];
	int fd = tu_tmpfile(path), saved;
	unsigned int i, j;
	size_t len;

	/* --help prints to stdout and reads no file. */
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fd, STDOUT_FILENO);
	ck_assert_int_eq(LOAD(&cfg, "-c", "/nonexistent-magnet-test/z", "-h"), 1);
	ck_assert_int_eq(LOAD(&cfg, "--help"), 1);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	ck_assert_str_eq(err, "");
	out = tu_read_file(path, &len);
	out[len] = '\0';
	unlink(path);
	ck_assert(!strncmp(out, "Usage: magnetd [OPTIONS]\n", 25));
	/* Printed whole, twice. */
	ck_assert_ptr_ne(strstr(out + 1, "Usage: magnetd"), NULL);
	for (i = 0; i < ARRAY_SIZE(flags); i++)
		ck_assert_msg(strstr(out, flags[i]), "no '%s' in --help", flags[i]);
	for (i = 0; i < ARRAY_SIZE(file_keys); i++) {
		strcpy(want, "--");
		for (j = 0; file_keys[i][j]; j++)
			want[j + 2] = file_keys[i][j] == '_' ? '-' : file_keys[i][j];
		want[j + 2] = '\0';
		ck_assert_msg(strstr(out, want), "no '%s' in --help", want);
	}
	free(out);
}
END_TEST

/* The shipped example: commented, it is the defaults; uncommented, too. */
START_TEST(shipped_conf)
{
	unsigned int seen[ARRAY_SIZE(file_keys)] = { 0 }, i;
	struct mg_config d;
	char *text, *line, *save, *out;
	size_t len, n = 0;

	mg_config_defaults(&d);
	LOAD_OK("-c", MG_TEST_CONF);
	ck_assert_str_eq(cfg.config_path, MG_TEST_CONF);
	cfg_eq(&cfg, &d);
	mg_config_free(&cfg);

	text = tu_read_file(MG_TEST_CONF, &len);
	text[len] = '\0';
	out = malloc(len + 2);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t k = strspn(line + 1, "abcdefghijklmnopqrstuvwxyz_");

		/* "#key = default" lines; "#   key = example" are not. */
		if (line[0] == '#' && k && !strncmp(line + 1 + k, " =", 2)) {
			for (i = 0; i < ARRAY_SIZE(file_keys); i++)
				if (strlen(file_keys[i]) == k &&
				    !strncmp(line + 1, file_keys[i], k))
					seen[i]++;
			line++;
		}
		n += sprintf(out + n, "%s\n", line);
	}
	for (i = 0; i < ARRAY_SIZE(file_keys); i++)
		ck_assert_msg(seen[i] == 1, "magnetd.conf shows '#%s = ' %u times",
			      file_keys[i], seen[i]);
	write_conf_len(out, n);
	LOAD_OK("-c", conf);
	cfg_eq(&cfg, &d);
	ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), 0);
	free(text);
	free(out);
}
END_TEST

/* ---- reload ---- */

START_TEST(reload)
{
	struct mg_config a, b;
	char keys[256];

	write_conf("allow = 10.0.0.0/8\nprobe = kprobe a\nprobe = kprobe b\n");
	ck_assert_int_eq(LOAD(&a, "-c", conf, "-f"), 0);
	ck_assert_int_eq(LOAD(&b, "-c", conf, "-f"), 0);
	cfg_eq(&a, &b);
	ck_assert_ptr_ne(a.probes[0], b.probes[0]);	/* each owns its own */
	ck_assert_uint_eq(mg_config_restart_keys(&a, &b, keys, sizeof(keys)), 0);
	ck_assert_str_eq(keys, "");
	mg_config_free(&b);
	mg_config_free(&b);	/* twice is fine */
	ck_assert_uint_eq(b.nprobes, 0);

	/* What applies at once is never listed. */
	write_conf("allow = 192.168.0.0/16\nprobe = kprobe a\nprobe = kprobe b\n"
		   "max_clients = 3\nclient_queue = 1M\nclient_timeout = 1\n"
		   "agg_top = 5\nlog = stderr\nidle_timeout = 0\n"
		   "max_clients_per_user = 2\nroot_reserve = 0\n");
	ck_assert_int_eq(LOAD(&b, "-c", conf, "-f"), 0);
	ck_assert_uint_eq(mg_config_restart_keys(&a, &b, keys, sizeof(keys)), 0);
	ck_assert_str_eq(keys, "");
	mg_config_free(&b);

	/* The rest is, in the table's order. */
	write_conf("allow = 10.0.0.0/8\nprobe = kprobe a\nprobe = kprobe c\n"
		   "read_buffer = 128K\nlisten = 127.0.0.1:1\n");
	ck_assert_int_eq(LOAD(&b, "-c", conf, "-f"), 0);
	ck_assert_uint_eq(mg_config_restart_keys(&a, &b, keys, sizeof(keys)), 3);
	ck_assert_str_eq(keys, "listen, read_buffer, probe");
	/* Cut to the buffer, still counted. */
	ck_assert_uint_eq(mg_config_restart_keys(&a, &b, keys, 10), 3);
	ck_assert_str_eq(keys, "listen, r");
	mg_config_free(&b);

	/* Same address, written differently: not a change. */
	write_conf("allow = 10.0.0.0/8\nprobe = kprobe a\nprobe = kprobe b\n"
		   "listen = 127.0.0.1:08650\n");
	ck_assert_int_eq(LOAD(&b, "-c", conf, "-f"), 0);
	ck_assert_str_eq(b.listen, "127.0.0.1:08650");
	ck_assert_uint_eq(mg_config_restart_keys(&a, &b, keys, sizeof(keys)), 0);
	mg_config_free(&b);
	write_conf("allow = 10.0.0.0/8\nprobe = kprobe a\nprobe = kprobe b\n"
		   "dir = /x\ntrace = /t\ntrace_size = 0\ntrace_queue = 2M\n"
		   "queue = 2M\nwatermark = 1K\nlatency = 1\nagg_entries = 8\n");
	ck_assert_int_eq(LOAD(&b, "-c", conf, "-f"), 0);
	ck_assert_uint_eq(mg_config_restart_keys(&a, &b, keys, sizeof(keys)), 8);
	ck_assert_str_eq(keys, "dir, watermark, latency, queue, trace, trace_size, trace_queue, agg_entries");
	mg_config_free(&b);

	/* A bad edit fails alone: the running config is another struct. */
	write_conf("probe = kprobe z\nmax_clients = many\n");
	ck_assert_int_eq(LOAD(&b, "-c", conf, "-f"), -EINVAL);
	ck_assert_uint_eq(b.nprobes, 0);
	ck_assert_uint_eq(a.nprobes, 2);
	ck_assert_str_eq(a.probes[1], "kprobe b");
	mg_config_free(&a);
}
END_TEST

/* ---- addresses ---- */

START_TEST(cidr_parse)
{
	static const struct {
		const char *in;
		const char *out;	/* mg_cidr_format */
		int family;
	} ok[] = {
		{ "10.0.0.0/8", "10.0.0.0/8", AF_INET },
		{ "10.1.2.3/8", "10.0.0.0/8", AF_INET },	/* host bits cleared */
		{ "10.255.255.255/9", "10.128.0.0/9", AF_INET },
		{ "192.168.1.5", "192.168.1.5/32", AF_INET },
		{ "192.168.1.5/32", "192.168.1.5/32", AF_INET },
		{ "0.0.0.0/0", "0.0.0.0/0", AF_INET },
		{ "1.2.3.4/0", "0.0.0.0/0", AF_INET },
		{ "10.0.0.0/008", "10.0.0.0/8", AF_INET },
		{ "2001:db8::/32", "2001:db8::/32", AF_INET6 },
		{ "2001:db8:ffff::1/33", "2001:db8:8000::/33", AF_INET6 },
		{ "::1", "::1/128", AF_INET6 },
		{ "::/0", "::/0", AF_INET6 },
		{ "::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104", AF_INET6 },
		{ "fe80::1/64", "fe80::/64", AF_INET6 },
	};
	static const struct {
		const char *in;
		int ret;
	} bad[] = {
		{ "", -EINVAL }, { "/8", -EINVAL }, { "10.0.0.0/", -EINVAL },
		{ "10.0.0.0/33", -ERANGE }, { "::/129", -ERANGE },
		{ "10.0.0.0/99999999999999999999999", -ERANGE },
		{ "10.0.0.0/-1", -EINVAL }, { "10.0.0.0/+8", -EINVAL },
		{ "10.0.0.0/8x", -EINVAL }, { "10.0.0.0/ 8", -EINVAL },
		{ "10.0.0.0/8/8", -EINVAL }, { "10.0.0/8", -EINVAL },
		{ "1.2.3.4.5", -EINVAL }, { "256.0.0.0/8", -EINVAL },
		{ " 10.0.0.0/8", -EINVAL }, { "localhost", -EINVAL },
		{ "fe80::1%eth0", -EINVAL }, { "2001:db8:::/32", -EINVAL },
		{ "10.0.0.0/0x8", -EINVAL },
	};
	struct mg_cidr c;
	char buf[64];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		ck_assert_msg(mg_cidr_parse(ok[i].in, &c) == 0, "%s", ok[i].in);
		ck_assert_int_eq(c.family, ok[i].family);
		mg_cidr_format(&c, buf, sizeof(buf));
		ck_assert_str_eq(buf, ok[i].out);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&c, 0xaa, sizeof(c));
		ck_assert_msg(mg_cidr_parse(bad[i].in, &c) == bad[i].ret,
			      "'%s' not refused with %d", bad[i].in, bad[i].ret);
		ck_assert_int_eq(c.family, (int)0xaaaaaaaa);	/* untouched */
	}
}
END_TEST

START_TEST(cidr_match)
{
	static const struct {
		const char *cidr;
		const char *peer;
		bool match;
	} t[] = {
		{ "10.0.0.0/8", "10.1.2.3", true },
		{ "10.0.0.0/8", "10.255.255.255", true },
		{ "10.0.0.0/8", "10.0.0.0", true },
		{ "10.0.0.0/8", "11.0.0.0", false },
		{ "10.0.0.0/8", "9.255.255.255", false },
		/* what a dual-stack socket reports for IPv4 peers */
		{ "10.0.0.0/8", "::ffff:10.1.2.3", true },
		{ "10.0.0.0/8", "::ffff:11.1.2.3", false },
		{ "10.0.0.0/8", "::a01:203", false },	/* IPv4-compatible: not mapped */
		{ "10.0.0.0/8", "2001:db8::1", false },
		{ "10.128.0.0/9", "10.200.0.1", true },
		{ "10.128.0.0/9", "10.127.255.255", false },
		{ "192.168.1.5", "192.168.1.5", true },
		{ "192.168.1.5", "192.168.1.4", false },
		{ "192.168.1.5", "192.168.1.6", false },
		{ "192.168.1.5", "::ffff:192.168.1.5", true },
		{ "0.0.0.0/0", "1.2.3.4", true },
		{ "0.0.0.0/0", "255.255.255.255", true },
		{ "0.0.0.0/0", "::ffff:1.2.3.4", true },
		{ "0.0.0.0/0", "2001:db8::1", false },
		{ "0.0.0.0/0", "::1", false },
		{ "::/0", "2001:db8::1", true },
		{ "::/0", "::1", true },
		{ "::/0", "10.1.2.3", true },
		{ "2001:db8::/32", "2001:db8:ffff::1", true },
		{ "2001:db8::/32", "2001:db9::1", false },
		{ "2001:db8::/32", "10.1.2.3", false },
		{ "2001:db8:8000::/33", "2001:db8:8000::1", true },
		{ "2001:db8:8000::/33", "2001:db8:7fff::1", false },
		{ "::1", "::1", true },
		{ "::1", "::2", false },
		{ "::1", "127.0.0.1", false },
		{ "::ffff:10.0.0.0/104", "10.9.9.9", true },
		{ "::ffff:10.0.0.0/104", "::ffff:10.9.9.9", true },
		{ "::ffff:10.0.0.0/104", "11.0.0.1", false },
	};
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_storage ss;
	struct mg_cidr c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		ck_assert_int_eq(mg_cidr_parse(t[i].cidr, &c), 0);
		ss = addr(t[i].peer, 1234);
		ck_assert_msg(mg_cidr_match(&c, SA(ss)) == t[i].match,
			      "%s in %s: %d expected", t[i].peer, t[i].cidr,
			      t[i].match);
	}
	ck_assert_int_eq(mg_cidr_parse("::/0", &c), 0);
	ck_assert(!mg_cidr_match(&c, (const struct sockaddr *)&un));
}
END_TEST

START_TEST(loopback)
{
	static const struct {
		const char *ip;
		bool lo;
	} t[] = {
		{ "127.0.0.1", true }, { "127.255.0.1", true }, { "127.0.0.0", true },
		{ "128.0.0.1", false }, { "126.255.255.255", false },
		{ "10.0.0.1", false }, { "0.0.0.0", false },
		{ "::1", true }, { "::", false }, { "::2", false },
		{ "::ffff:127.0.0.1", true }, { "::ffff:127.1.2.3", true },
		{ "::ffff:10.0.0.1", false }, { "::7f00:1", false },
		{ "fe80::1", false }, { "2001:db8::1", false },
	};
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_storage ss;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		ss = addr(t[i].ip, 1);
		ck_assert_msg(mg_sockaddr_is_loopback(SA(ss)) == t[i].lo, "%s",
			      t[i].ip);
	}
	ck_assert(!mg_sockaddr_is_loopback((const struct sockaddr *)&un));
}
END_TEST

START_TEST(listen_parse)
{
	static const struct {
		const char *s;
		const char *ip;
		unsigned int port;
	} ok[] = {
		{ "127.0.0.1:8650", "127.0.0.1", 8650 },
		{ "0.0.0.0:1", "0.0.0.0", 1 },
		{ "*:8650", "0.0.0.0", 8650 },
		{ "10.1.2.3:65535", "10.1.2.3", 65535 },
		{ "10.1.2.3:0080", "10.1.2.3", 80 },
		{ "[::1]:8650", "::1", 8650 },
		{ "[::]:8650", "::", 8650 },
		{ "[2001:db8::5]:9", "2001:db8::5", 9 },
		{ "[::ffff:10.0.0.1]:9", "::ffff:10.0.0.1", 9 },
	};
	static const struct {
		const char *s;
		const char *why;
	} bad[] = {
		{ "localhost:8650", "not a numeric IPv4 address (names are not looked up)" },
		{ "127.0.0.1", "expected ADDR:PORT" },
		{ "8650", "expected ADDR:PORT" },
		{ "127.0.0.1:0", "the port must be a number from 1 to 65535" },
		{ "127.0.0.1:65536", "the port must be a number from 1 to 65535" },
		{ "127.0.0.1:", "the port must be a number from 1 to 65535" },
		{ "127.0.0.1:http", "the port must be a number from 1 to 65535" },
		{ "127.0.0.1:+80", "the port must be a number from 1 to 65535" },
		{ "127.0.0.1:000080", "the port must be a number from 1 to 65535" },
		{ "127.0.0.1:80 ", "the port must be a number from 1 to 65535" },
		{ ":8650", "missing address before the port (* or 0.0.0.0 for all)" },
		{ "::1:8650", "an IPv6 address goes in brackets: [::1]:8650" },
		{ "[::1]", "expected [IPv6]:PORT" },
		{ "[::1]8650", "expected [IPv6]:PORT" },
		{ "[::1:8650", "expected [IPv6]:PORT" },
		{ "[]:8650", "missing address before the port (* or 0.0.0.0 for all)" },
		{ "[127.0.0.1]:8650", "not a numeric IPv6 address" },
		{ "[fe80::1%eth0]:8650", "not a numeric IPv6 address" },
		{ "1.2.3:80", "not a numeric IPv4 address (names are not looked up)" },
		{ "**:80", "not a numeric IPv4 address (names are not looked up)" },
	};
	struct sockaddr_storage ss, want, before;
	char e[MG_CONFIG_ERR_MAX];
	socklen_t len;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		ck_assert_msg(mg_parse_listen(ok[i].s, &ss, &len) == 0, "%s", ok[i].s);
		want = addr(ok[i].ip, ok[i].port);
		ck_assert_uint_eq(len, want.ss_family == AF_INET ?
				  sizeof(struct sockaddr_in) :
				  sizeof(struct sockaddr_in6));
		ck_assert_msg(!memcmp(&ss, &want, len), "%s", ok[i].s);
		/* and through the config */
		LOAD_OK("-l", ok[i].s);
		ck_assert_str_eq(cfg.listen, ok[i].s);
		ck_assert(!memcmp(&cfg.listen_addr, &want, len));
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&ss, 0xaa, sizeof(ss));
		before = ss;
		len = 77;
		ck_assert_msg(mg_parse_listen(bad[i].s, &ss, &len) == -EINVAL, "%s",
			      bad[i].s);
		ck_assert(!memcmp(&ss, &before, sizeof(ss)));	/* untouched */
		ck_assert_uint_eq(len, 77);
		snprintf(e, sizeof(e), "--listen: bad address '%s': %s", bad[i].s,
			 bad[i].why);
		LOAD_ERR(e, "--listen", bad[i].s);
	}
	/* Too long for the field. */
	{
		char s[200];

		memset(s, '1', sizeof(s));
		s[sizeof(s) - 1] = '\0';
		LOAD_ERR("--listen: too long (max 127 bytes)", "--listen", s);
	}
}
END_TEST

START_TEST(allowlist_rule)
{
	static const struct {
		const char *listen;
		bool needs_allow;
	} t[] = {
		{ "127.0.0.1:8650", false }, { "127.0.0.2:1", false },
		{ "[::1]:8650", false }, { "[::ffff:127.0.0.1]:8650", false },
		{ "0.0.0.0:8650", true }, { "*:8650", true }, { "[::]:8650", true },
		{ "10.0.0.1:8650", true }, { "[2001:db8::1]:8650", true },
	};
	char want[256];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		/* Loading accepts it: the rule is mg_config_check's. */
		LOAD_OK("-l", t[i].listen);
		err[0] = '\0';
		if (!t[i].needs_allow) {
			ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), 0);
			ck_assert_str_eq(err, "");
		} else {
			ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), -EINVAL);
			snprintf(want, sizeof(want),
				 "listening on %s needs an allowlist: --allow CIDR (or allow = in magnetd.conf)",
				 t[i].listen);
			ck_assert_str_eq(err, want);
		}
		LOAD_OK("-l", t[i].listen, "-a", "10.0.0.0/8");
		ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), 0);
	}
	ck_assert_int_eq(LOAD(&cfg, "-l", "0.0.0.0:8650"), 0);
	ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "listening on 0.0.0.0:8650 needs an allowlist: --allow CIDR (or allow = in magnetd.conf)");
	/* From the file, too. */
	LOAD_OK("-c", write_conf("listen = 0.0.0.0:8650\nallow = 192.168.0.0/16\n"));
	ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), 0);

	/* The monitors' listeners: off by default, the same rule. */
	LOAD_OK("-l", "127.0.0.1:8650");
	ck_assert_uint_eq(cfg.prometheus.len, 0);
	ck_assert_uint_eq(cfg.supermon.len, 0);
	ck_assert_uint_eq(cfg.export_jobs, 20);
	LOAD_OK("--prometheus", "127.0.0.1:8653", "--supermon", "[::1]:2709",
		"--export-jobs", "5");
	ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.prometheus.text, "127.0.0.1:8653");
	ck_assert_uint_eq(cfg.export_jobs, 5);
	LOAD_OK("--supermon", "0.0.0.0:2709");
	ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "supermon on 0.0.0.0:2709 needs an allowlist: --allow CIDR (or allow = in magnetd.conf)");
	LOAD_OK("-c", write_conf("prometheus = *:8653\nallow = 10.0.0.0/8\n"));
	ck_assert_int_eq(mg_config_check(&cfg, err, sizeof(err)), 0);
	LOAD_ERR("--prometheus: bad address 'localhost:8653': not a numeric IPv4 address (names are not looked up)",
		 "--prometheus", "localhost:8653");
	ck_assert_int_eq(LOAD(&cfg, "--export-jobs", "5000"), -EINVAL);
}
END_TEST

/* ---- notify ---- */

static int notify_sock(struct sockaddr_un *sun, socklen_t len)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(bind(fd, (struct sockaddr *)sun, len) == 0, "bind: %s",
		      strerror(errno));
	return fd;
}

static void recv_is(int fd, const char *want)
{
	char buf[8192];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	ck_assert_int_eq(n, strlen(want));
	buf[n] = '\0';
	ck_assert_str_eq(buf, want);
}

START_TEST(notify_path)
{
	char dir[64], path[128], big[4000];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timespec ts;
	unsigned long long usec, now;
	char buf[256];
	ssize_t n;
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/magnet-notify-XXXXXX");
	ck_assert_ptr_ne(mkdtemp(dir), NULL);
	snprintf(path, sizeof(path), "%s/notify", dir);
	strcpy(sun.sun_path, path);
	fd = notify_sock(&sun, sizeof(sun));
	setenv("NOTIFY_SOCKET", path, 1);

	ck_assert_int_eq(mg_notify("READY=1"), 0);
	recv_is(fd, "READY=1");
	ck_assert_int_eq(mg_notify("STATUS=serving\nREADY=1"), 0);
	recv_is(fd, "STATUS=serving\nREADY=1");
	ck_assert_int_eq(mg_notifyf("STATUS=%u clients", 3), 0);
	recv_is(fd, "STATUS=3 clients");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "STATUS=", 7);
	ck_assert_int_eq(mg_notify(big), 0);
	recv_is(fd, big);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
	ck_assert_int_eq(mg_notify_reloading(), 0);
	n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_int_eq(sscanf(buf, "RELOADING=1\nMONOTONIC_USEC=%llu", &usec), 1);
	ck_assert_uint_ge(usec, now);
	ck_assert_uint_lt(usec, now + 10000000ULL);

	/* Errors: an empty state, nobody listening, no such socket. */
	ck_assert_int_eq(mg_notify(""), -EINVAL);
	ck_assert_int_eq(mg_notify(NULL), -EINVAL);
	close(fd);
	ck_assert_int_eq(mg_notify("READY=1"), -ECONNREFUSED);
	unlink(path);
	ck_assert_int_eq(mg_notify("READY=1"), -ENOENT);
	rmdir(dir);
}
END_TEST

START_TEST(notify_abstract)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char name[64], env[72];
	socklen_t len;
	int fd;

	snprintf(name, sizeof(name), "magnet-test-%d-%ld", (int)getpid(),
		 (long)time(NULL));
	/* An abstract address is exactly its bytes: no NUL counted. */
	memcpy(sun.sun_path + 1, name, strlen(name));
	len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
	fd = notify_sock(&sun, len);
	snprintf(env, sizeof(env), "@%s", name);
	setenv("NOTIFY_SOCKET", env, 1);

	ck_assert_int_eq(mg_notify("READY=1"), 0);
	recv_is(fd, "READY=1");
	ck_assert_int_eq(mg_notify("STOPPING=1"), 0);
	recv_is(fd, "STOPPING=1");
	close(fd);
	/* The name is gone with the socket. */
	ck_assert_int_eq(mg_notify("READY=1"), -ECONNREFUSED);
}
END_TEST

START_TEST(notify_env)
{
	char longpath[200];

	/* Not run by systemd: nothing to do, and not an error. */
	unsetenv("NOTIFY_SOCKET");
	ck_assert_int_eq(mg_notify("READY=1"), 0);
	ck_assert_int_eq(mg_notifyf("STATUS=%d", 1), 0);
	ck_assert_int_eq(mg_notify_reloading(), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	ck_assert_int_eq(mg_notify("READY=1"), 0);

	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	ck_assert_int_eq(mg_notify("READY=1"), -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	ck_assert_int_eq(mg_notify("READY=1"), -EAFNOSUPPORT);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longpath, 1);
	ck_assert_int_eq(mg_notify("READY=1"), -ENAMETOOLONG);
	longpath[0] = '@';
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", longpath, 1), 0);
	ck_assert_int_eq(mg_notify("READY=1"), -ENAMETOOLONG);
	/* 107 bytes and its NUL fill sun_path exactly: allowed. */
	longpath[0] = '/';
	longpath[107] = '\0';
	setenv("NOTIFY_SOCKET", longpath, 1);
	ck_assert_int_eq(mg_notify("READY=1"), -ENOENT);
}
END_TEST

/* ---- log ---- */

static char logpath[64];
static int saved_stderr = -1;

/* stderr into a fresh file, for the rest of the (forked) test. */
static void capture_stderr(void)
{
	int fd = tu_tmpfile(logpath);

	saved_stderr = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

static char *captured(void)
{
	size_t len;
	char *s = tu_read_file(logpath, &len);

	s[len] = '\0';
	return s;
}

static void log_teardown(void)
{
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
		unlink(logpath);
	}
}

START_TEST(log_stderr)
{
	char *out, want[MG_LOG_LINE_MAX + 64], big[5000];

	unsetenv("JOURNAL_STREAM");
	capture_stderr();
	mg_log_open(MG_LOG_STDERR, false);
	mg_log(LOG_ERR, "e %d", 1);
	mg_log(LOG_WARNING, "w %s", "x");
	mg_log(LOG_NOTICE, "n");
	mg_log(LOG_INFO, "i");
	mg_log(LOG_DEBUG, "d hidden");
	mg_log_set_max(LOG_DEBUG);
	mg_log(LOG_DEBUG, "d shown");
	mg_log_set_max(LOG_WARNING);
	mg_log(LOG_INFO, "i hidden");
	mg_log(LOG_CRIT, "c");
	mg_log_set_max(LOG_INFO);
	/* Nothing in a message starts a new line. */
	mg_log(LOG_INFO, "a\nb\rc\td\x7f" "e\x01");
	/* %m and errno */
	errno = ENOENT;
	mg_log(LOG_INFO, "m: %m");
	ck_assert_int_eq(errno, ENOENT);
	/* AUTO with -f is stderr. */
	mg_log_open(MG_LOG_AUTO, true);
	mg_log(LOG_INFO, "auto");
	out = captured();
	ck_assert_str_eq(out,
			 "magnetd: error: e 1\n"
			 "magnetd: warning: w x\n"
			 "magnetd: n\n"
			 "magnetd: i\n"
			 "magnetd: d shown\n"
			 "magnetd: error: c\n"
			 "magnetd: a?b?c\td?e?\n"
			 "magnetd: m: No such file or directory\n"
			 "magnetd: auto\n");
	free(out);

	/* A long one is cut, marked, and still one line. */
	ck_assert_int_eq(ftruncate(STDERR_FILENO, 0), 0);
	ck_assert_int_eq(lseek(STDERR_FILENO, 0, SEEK_SET), 0);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mg_log(LOG_WARNING, "%s", big);
	out = captured();
	snprintf(want, sizeof(want), "magnetd: warning: %.*s...\n",
		 MG_LOG_LINE_MAX, big);
	ck_assert_str_eq(out, want);
	free(out);
}
END_TEST

START_TEST(log_journal)
{
	struct stat st;
	char env[64], *out;

	capture_stderr();
	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	mg_log_open(MG_LOG_AUTO, true);
	mg_log(LOG_ERR, "e");
	mg_log(LOG_WARNING, "w");
	mg_log(LOG_INFO, "i");
	/* Another stream's numbers: plain lines. */
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", env, 1);
	mg_log_open(MG_LOG_STDERR, true);
	mg_log(LOG_ERR, "e");
	out = captured();
	ck_assert_str_eq(out, "<3>e\n<4>w\n<6>i\nmagnetd: error: e\n");
	free(out);
}
END_TEST

#define LOG_THREADS	8
#define LOG_LINES	2000

static void *log_thread(void *arg)
{
	unsigned int t = (unsigned long)arg, i;
	char payload[301];

	memset(payload, 'a' + t, 300);
	payload[300] = '\0';
	for (i = 0; i < LOG_LINES; i++)
		mg_log(LOG_INFO, "t%u %u %s", t, i, payload);
	return NULL;
}

START_TEST(log_threads)
{
	unsigned int next[LOG_THREADS] = { 0 }, t, i, lines = 0;
	pthread_t th[LOG_THREADS];
	char *out, *line, *save;

	unsetenv("JOURNAL_STREAM");
	capture_stderr();
	mg_log_open(MG_LOG_STDERR, true);
	for (t = 0; t < LOG_THREADS; t++)
		pthread_create(&th[t], NULL, log_thread, (void *)(unsigned long)t);
	for (t = 0; t < LOG_THREADS; t++)
		pthread_join(th[t], NULL);
	out = captured();
	/* Every line whole, and each thread's in its order. */
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), lines++) {
		int off = 0;

		tu_assert(sscanf(line, "magnetd: t%u %u %n", &t, &i, &off) == 2);
		tu_assert(t < LOG_THREADS);
		tu_assert_op(i, ==, next[t]);
		next[t]++;
		tu_assert_op(strlen(line + off), ==, 300);
		tu_assert_op(strspn(line + off, (char[]){ 'a' + t, 0 }), ==, 300);
	}
	ck_assert_uint_eq(lines, LOG_THREADS * LOG_LINES);
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, default_file_read);
	tcase_add_test(tc, file_parsing);
	tcase_add_test(tc, file_units);
	tcase_add_test(tc, file_lists);
	tcase_add_test(tc, file_errors);
	tcase_add_test(tc, flags_override);
	tcase_add_test(tc, option_errors);
	tcase_add_test(tc, validation);
	tcase_add_test(tc, help);
	tcase_add_test(tc, shipped_conf);
	tcase_add_test(tc, reload);
	suite_add_tcase(s, tc);

	tc = tcase_create("addresses");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cidr_parse);
	tcase_add_test(tc, cidr_match);
	tcase_add_test(tc, loopback);
	tcase_add_test(tc, listen_parse);
	tcase_add_test(tc, allowlist_rule);
	suite_add_tcase(s, tc);

	tc = tcase_create("notify");
	tcase_add_test(tc, notify_path);
	tcase_add_test(tc, notify_abstract);
	tcase_add_test(tc, notify_env);
	suite_add_tcase(s, tc);

	tc = tcase_create("log");
	tcase_add_checked_fixture(tc, NULL, log_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, log_stderr);
	tcase_add_test(tc, log_journal);
	tcase_add_test(tc, log_threads);
	suite_add_tcase(s, tc);

	return tu_run(s);
}
