// SPDX-License-Identifier: GPL-2.0
/*
 * The gmond module's AUTH MUNGE (monitors/ganglia/auth.c) through its one
 * fetch (mgg_fetch), against a scripted magnetd on loopback and a real
 * munged of the test's own: with munge = yes the first line is AUTH MUNGE
 * and a credential that munged decodes to our uid, for magnetd, then
 * TOTALS, parsed; refused, magnetd's reason and no TOTALS; a magnetd that
 * never answers AUTH, the timeout; munge = auto on loopback and munge =
 * no, no AUTH; munged down, said so; bad params refused.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <munge.h>

#include "auth.h"
#include "munged.h"
#include "testutil.h"
#include "totals.h"

static const char totals[] =
	"OK 1 totals node=n1 ts=1700000010000000000 uptime=10 module=up cpus=2 records=1300 bytes=52000 kernel_lost=4 daemon_dropped=1 probes=1 jobs=0\n"
	"probe 16 kprobe __x64_sys_getppid events=1000 sock_bytes=0 sock=0 loaded=1\n";

/* One connection: the lines it got, and its script's answers. */
struct magnetd {
	int lfd;
	char port[16];
	pthread_t thread;
	const char *auth_reply;	/* NULL: never answers AUTH */
	char lines[2][2048];	/* the first two lines received */
};

static void *serve(void *arg)
{
	struct magnetd *d = arg;
	char buf[4096];
	size_t len = 0;
	int fd = accept(d->lfd, NULL, NULL), n = 0;

	ck_assert_int_ge(fd, 0);
	while (n < 2) {
		ssize_t r = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		char *nl;

		if (r <= 0)
			break;
		len += r;
		while (n < 2 && (nl = memchr(buf, '\n', len))) {
			const char *out = NULL;

			*nl = '\0';
			snprintf(d->lines[n++], sizeof(d->lines[0]), "%.2000s", buf);
			if (!strncmp(buf, "AUTH ", 5))
				out = d->auth_reply;
			else if (!strcmp(buf, "TOTALS"))
				out = totals;
			if (out)
				ck_assert_int_eq(send(fd, out, strlen(out), MSG_NOSIGNAL),
						 (ssize_t)strlen(out));
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len);
		}
	}
	/* Until the client is done with us. */
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	close(fd);
	return NULL;
}

static void start(struct magnetd *d, const char *auth_reply)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);

	memset(d, 0, sizeof(*d));
	d->auth_reply = auth_reply;
	d->lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(d->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(d->lfd, (struct sockaddr *)&sin, &len), 0);
	ck_assert_int_eq(listen(d->lfd, 4), 0);
	snprintf(d->port, sizeof(d->port), "%u", ntohs(sin.sin_port));
	ck_assert_int_eq(pthread_create(&d->thread, NULL, serve, d), 0);
}

static void stop(struct magnetd *d)
{
	pthread_join(d->thread, NULL);
	close(d->lfd);
}

static void param(const char *k, const char *v)
{
	char why[256];

	ck_assert_msg(mgg_auth_param(k, v, why, sizeof(why)) == 1, "%s", why);
}

/* One fetch over a link of its own (no backoff from an earlier one). */
static int fetch_once(const char *port, int timeout_ms, struct mgg_snapshot *s,
		 char *why, size_t whylen)
{
	struct mgg_link l;
	int r;

	if (mgg_link_init(&l, "127.0.0.1", port, timeout_ms, why, whylen))
		return -EINVAL;
	r = mgg_link_fetch(&l, s, why, whylen);
	return r == 1 ? 0 : r;	/* 1: fetched */
}

START_TEST(fetch)
{
	struct tu_munged md;
	struct mgg_snapshot s;
	struct magnetd d;
	char why[512];
	munge_ctx_t ctx;
	void *payload;
	int len;
	uid_t uid;
	gid_t gid;

	tu_munged_start(&md, NULL);
	param("munge", "yes");
	param("munge_socket", md.socket);

	/* Accepted: AUTH MUNGE, then TOTALS, parsed. */
	start(&d, "OK AUTH uid=0 access=all\n");
	ck_assert_msg(!fetch_once(d.port, 5000, &s, why, sizeof(why)),
		      "%s", why);
	stop(&d);
	ck_assert(s.records == 1300 && s.nprobes == 1);
	mgg_free(&s);
	ck_assert_msg(!strncmp(d.lines[0], "AUTH MUNGE MUNGE:", 17), "%s", d.lines[0]);
	ck_assert_str_eq(d.lines[1], "TOTALS");
	ctx = munge_ctx_create();
	ck_assert_int_eq(munge_ctx_set(ctx, MUNGE_OPT_SOCKET, md.socket), EMUNGE_SUCCESS);
	ck_assert_int_eq(munge_decode(d.lines[0] + 11, ctx, &payload, &len, &uid, &gid),
			 EMUNGE_SUCCESS);
	ck_assert(len == 7 && !memcmp(payload, "magnetd", 7));
	ck_assert_uint_eq(uid, geteuid());
	free(payload);
	munge_ctx_destroy(ctx);

	/* Refused: magnetd's reason, and TOTALS never asked. */
	start(&d, "ERR auth: replayed credential (each is taken once)\n");
	ck_assert_int_eq(fetch_once(d.port, 5000, &s, why, sizeof(why)),
			 -EINVAL);
	stop(&d);
	ck_assert_msg(strstr(why, "authenticate to 127.0.0.1:") == why &&
		      strstr(why, ": MUNGE authentication refused: auth: replayed credential (each is taken once)"),
		      "%s", why);
	ck_assert_str_eq(d.lines[1], "");

	/* No answer to AUTH: the fetch's timeout, said so. */
	start(&d, NULL);
	ck_assert_int_eq(fetch_once(d.port, 300, &s, why, sizeof(why)),
			 -ETIMEDOUT);
	stop(&d);
	ck_assert_msg(strstr(why, "authenticate to 127.0.0.1:") &&
		      strstr(why, "no answer in time"), "%s", why);

	/* auto, and magnetd on loopback: no credential. */
	param("munge", "auto");
	start(&d, "ERR auth: not expected\n");
	ck_assert_msg(!fetch_once(d.port, 5000, &s, why, sizeof(why)),
		      "%s", why);
	stop(&d);
	mgg_free(&s);
	ck_assert_str_eq(d.lines[0], "TOTALS");

	/* munged down: said so, nothing sent. */
	tu_munged_stop(&md);
	param("munge", "YES");
	start(&d, "OK AUTH uid=0 access=all\n");
	ck_assert_int_eq(fetch_once(d.port, 5000, &s, why, sizeof(why)),
			 -EINVAL);
	stop(&d);
	ck_assert_msg(strstr(why, "cannot mint a MUNGE credential: munged unreachable: Failed to access"),
		      "%s", why);
	ck_assert_str_eq(d.lines[0], "");

	/* no: never a credential, munged or not. */
	param("munge", "no");
	start(&d, "ERR auth: not expected\n");
	ck_assert_msg(!fetch_once(d.port, 5000, &s, why, sizeof(why)),
		      "%s", why);
	stop(&d);
	mgg_free(&s);
	ck_assert_str_eq(d.lines[0], "TOTALS");
}
END_TEST

START_TEST(params)
{
	char why[256];

	ck_assert_int_eq(mgg_auth_param("host", "x", why, sizeof(why)), 0);
	ck_assert_int_eq(mgg_auth_param("munge", "maybe", why, sizeof(why)), -1);
	ck_assert_str_eq(why, "param munge: 'maybe' is not auto, yes or no");
	ck_assert_int_eq(mgg_auth_param("munge_socket", "run/x", why, sizeof(why)), -1);
	ck_assert_str_eq(why, "param munge_socket: 'run/x' is not an absolute path");
	ck_assert_int_eq(mgg_auth_param("MUNGE_SOCKET", "", why, sizeof(why)), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ganglia_auth");
	TCase *tc = tcase_create("ganglia_auth");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, fetch);
	tcase_add_test(tc, params);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
