// SPDX-License-Identifier: GPL-2.0
/*
 * supermon-client: a Supermon client built on sfsexp (Debian's libsexp,
 * the s-expression library that came out of Supermon), for the tests and
 * for operators trying magnetd's mon listener (docs/supermon.md).
 *
 *   supermon-client [-s HOST:PORT]... REQUEST...
 *
 * Sends each REQUEST line ("#", "S", "M 5", ...) to the first server,
 * parses each reply with sfsexp and prints it flattened, one value a line:
 *
 *   category node 1                    var node.records u64 counter
 *   host node-1                        time 1700000000.123456789
 *   node.records 1300                  probes.tcp_sendmsg.sock_bytes 4096
 *   jobs./a.events 1000                mask 5
 *   net./a.tcp.tx_bytes 65536          peers./a.10.0.0.2.tx_bytes 65536
 *   error unknown request ...          bye
 *
 * With several -s, each REQUEST is sent to every server and the replies
 * are composed as Supermon's concentrator composes nodes, one list
 * (concentrator (sample "n1" ...) (sample "n2" ...)), which is parsed
 * whole; each line is then prefixed with the sample's node ("n1: ...").
 *
 * Exit status: 0; 1 usage or connection; 2 a reply sfsexp cannot parse or
 * of an unexpected shape; 3 the server answered an error.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sfsexp/sexp.h>

#define MAX_SERVERS	8
#define LINE_MAX	(1 << 22)

static int status;

__attribute__((noreturn))
static void die(int code, const char *fmt, const char *arg)
{
	fprintf(stderr, "supermon-client: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(code);
}

static FILE *connect_to(const char *spec)
{
	char host[256], *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	FILE *f;
	int fd;

	snprintf(host, sizeof(host), "%s", spec);
	port = strrchr(host, ':');
	if (!port)
		die(1, "%s: want HOST:PORT", spec);
	*port++ = '\0';
	if (getaddrinfo(host, port, &hints, &ai))
		die(1, "%s: cannot resolve", spec);
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
		die(1, "%s: cannot connect", spec);
	freeaddrinfo(ai);
	f = fdopen(fd, "r+");
	if (!f)
		die(1, "%s: fdopen", spec);
	return f;
}

/* One reply: one line. */
static char *ask(FILE *f, const char *req)
{
	static char line[LINE_MAX];

	fprintf(f, "%s\n", req);
	fflush(f);
	if (!fgets(line, sizeof(line), f))
		die(1, "no reply to '%s'", req);
	if (!strchr(line, '\n'))
		die(2, "reply to '%s' too long or cut", req);
	return line;
}

static const char *head(const sexp_t *e)
{
	return e && e->ty == SEXP_LIST && e->list && e->list->ty == SEXP_VALUE ?
	       e->list->val : "";
}

static const sexp_t *field(const sexp_t *e, const char *name)
{
	const sexp_t *x;

	for (x = e->list; x; x = x->next)
		if (!strcmp(head(x), name) && x->list->next &&
		    x->list->next->ty == SEXP_VALUE)
			return x->list->next;
	return NULL;
}

__attribute__((noreturn))
static void bad(const char *what)
{
	fprintf(stderr, "supermon-client: unexpected reply: %s\n", what);
	exit(2);
}

/* The value after e's head, e.g. the host of (description host ...). */
static const char *arg1(const sexp_t *e)
{
	if (!e->list->next || e->list->next->ty != SEXP_VALUE)
		bad(head(e));
	return e->list->next->val;
}

/* (name value) pairs of e (from its second element) as PREFIX.name value. */
static void pairs(const char *pfx, const char *prefix, const sexp_t *x)
{
	for (; x; x = x->next) {
		if (x->ty != SEXP_LIST || !x->list->next ||
		    x->list->next->ty != SEXP_VALUE)
			bad("not a (name value) pair");
		printf("%s%s.%s %s\n", pfx, prefix, x->list->val,
		       x->list->next->val);
	}
}

/*
 * An entry list (probe ...), (job ...), (net ...) or (peer ...): keyed by
 * its name or path, and by a second key if given (a job's protocol or
 * peer: net./a.tcp.tx_bytes).
 */
static void entries(const char *pfx, const char *cat, const char *key,
		    const char *key2, const sexp_t *x)
{
	char prefix[1024];

	for (; x; x = x->next) {
		const sexp_t *k = field(x, key), *k2 = key2 ? field(x, key2) : NULL;

		if (!k || (key2 && !k2))
			bad(key);
		snprintf(prefix, sizeof(prefix), "%s.%s%s%s", cat, k->val,
			 k2 ? "." : "", k2 ? k2->val : "");
		pairs(pfx, prefix, x->list->next);
	}
}

static void print_sample(const char *pfx, const sexp_t *e)
{
	const sexp_t *x;

	if (!e->list->next || e->list->next->aty != SEXP_DQUOTE)
		bad("a sample must name its node first");
	printf("%shost %s\n", pfx, e->list->next->val);
	for (x = e->list->next->next; x; x = x->next) {
		const char *h = head(x);

		if (!strcmp(h, "time"))
			printf("%stime %s\n", pfx, x->list->next->val);
		else if (!strcmp(h, "node"))
			pairs(pfx, "node", x->list->next);
		else if (!strcmp(h, "probes"))
			entries(pfx, "probes", "name", NULL, x->list->next);
		else if (!strcmp(h, "jobs"))
			entries(pfx, "jobs", "path", NULL, x->list->next);
		else if (!strcmp(h, "net"))
			entries(pfx, "net", "path", "proto", x->list->next);
		else if (!strcmp(h, "peers"))
			entries(pfx, "peers", "path", "peer", x->list->next);
		else
			bad(h);
	}
}

static void print_description(const sexp_t *e)
{
	const sexp_t *x, *v;

	printf("host %s\n", arg1(e));
	for (x = e->list->next->next; x; x = x->next) {
		const char *cat;

		if (strcmp(head(x), "category"))
			continue;
		cat = x->list->next->val;
		printf("category %s %s\n", cat, x->list->next->next->val);
		v = x->list->next->next->next;
		if (v && v->ty == SEXP_LIST && strcmp(cat, "node"))
			v = v->list->next;	/* (probe vars...) */
		for (; v; v = v->next)
			printf("var %s.%s %s %s\n", cat, v->list->val,
			       v->list->next->val, v->list->next->next->val);
	}
}

static void print_reply(const char *pfx, const sexp_t *e)
{
	const char *h = head(e);

	if (!strcmp(h, "sample")) {
		print_sample(pfx, e);
	} else if (!strcmp(h, "description")) {
		print_description(e);
	} else if (!strcmp(h, "mask")) {
		printf("%smask %s\n", pfx, arg1(e));
	} else if (!strcmp(h, "bye")) {
		printf("%sbye\n", pfx);
	} else if (!strcmp(h, "error")) {
		printf("%serror %s\n", pfx, arg1(e));
		status = 3;
	} else {
		bad(h);
	}
}

static sexp_t *parse(char *text)
{
	sexp_t *e = parse_sexp(text, strlen(text));

	if (!e || e->ty != SEXP_LIST)
		die(2, "sfsexp cannot parse the reply: %s", text);
	return e;
}

int main(int argc, char **argv)
{
	const char *servers[MAX_SERVERS];
	FILE *conn[MAX_SERVERS];
	int n = 0, i, opt;

	while ((opt = getopt(argc, argv, "s:")) != -1) {
		if (opt != 's' || n == MAX_SERVERS)
			die(1, "%s", "usage: supermon-client [-s HOST:PORT]... REQUEST...");
		servers[n++] = optarg;
	}
	if (optind == argc)
		die(1, "%s", "usage: supermon-client [-s HOST:PORT]... REQUEST...");
	if (!n)
		servers[n++] = "127.0.0.1:2709";
	for (i = 0; i < n; i++)
		conn[i] = connect_to(servers[i]);
	for (; optind < argc; optind++) {
		const char *req = argv[optind];

		if (n == 1) {
			sexp_t *e = parse(ask(conn[0], req));

			print_reply("", e);
			destroy_sexp(e);
			continue;
		}
		{
			/* The concentrator's composition: one list of samples. */
			size_t cap = 64, len = 0;
			char *all = malloc(cap);
			const sexp_t *x;
			sexp_t *e;

			if (!all)
				die(1, "%s", "out of memory");
			len = snprintf(all, cap, "(concentrator");
			for (i = 0; i < n; i++) {
				char *r = ask(conn[i], req);
				size_t rl = strcspn(r, "\n");

				while (len + rl + 3 > cap)
					cap *= 2;
				all = realloc(all, cap);
				if (!all)
					die(1, "%s", "out of memory");
				all[len++] = ' ';
				memcpy(all + len, r, rl);
				len += rl;
			}
			all[len++] = ')';
			all[len] = '\0';
			e = parse(all);
			for (x = e->list->next; x; x = x->next) {
				char pfx[300];
				const sexp_t *node = x->list ? x->list->next : NULL;

				snprintf(pfx, sizeof(pfx), "%s: ",
					 node && node->ty == SEXP_VALUE ? node->val : "?");
				print_reply(pfx, x);
			}
			destroy_sexp(e);
			free(all);
		}
	}
	sexp_cleanup();
	return status;
}
