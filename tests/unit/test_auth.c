// SPDX-License-Identifier: GPL-2.0
/*
 * AUTH MUNGE, both halves, against a real munged started for the test
 * (tests/unit/munged.c): the client's credential (tools/client/mgauth.c)
 * decoded by magnetd's (daemon/auth.c) with the minter's uid and gid, also
 * for a minter that dropped to uid 65534; refused: a credential replayed,
 * expired, minted for another payload (another service on the same key),
 * minted with another key, junk (refused before munged is asked), and any
 * credential while munged is down, stopped or killed. The decode's latency
 * is printed.
 */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include <munge.h>

#include "auth.h"
#include "mgauth.h"
#include "mgmunge.h"
#include "munged.h"
#include "testutil.h"

static struct tu_munged md;
static char why[256];

static void setup(void)
{
	tu_munged_start(&md, NULL);
	mg_auth_munge_socket(md.socket);
}

static void teardown(void)
{
	tu_munged_stop(&md);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A credential from the client's code, without "AUTH MUNGE ". */
static char *mint(const char *socket)
{
	char *cmd, *cred;

	ck_assert_msg(!mga_munge_command(socket, &cmd, why, sizeof(why)), "%s", why);
	ck_assert_msg(!strncmp(cmd, "AUTH MUNGE MUNGE:", 17), "%s", cmd);
	cred = strdup(cmd + 11);
	free(cmd);
	return cred;
}

/* A credential of libmunge's, with any payload and time to live. */
static char *mint_raw(const char *socket, const void *payload, int len, int ttl)
{
	munge_ctx_t ctx = munge_ctx_create();
	char *cred = NULL;

	ck_assert_ptr_ne(ctx, NULL);
	ck_assert_int_eq(munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket), EMUNGE_SUCCESS);
	if (ttl)
		ck_assert_int_eq(munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl), EMUNGE_SUCCESS);
	ck_assert_int_eq(munge_encode(&cred, ctx, payload, len), EMUNGE_SUCCESS);
	munge_ctx_destroy(ctx);
	return cred;
}

static int decode(const char *cred, uid_t *uid, gid_t *gid)
{
	why[0] = '\0';
	return mg_auth_munge(cred, strlen(cred), uid, gid, why, sizeof(why));
}

#define assert_refused(cred, reason)					\
	do {								\
		uid_t _u;						\
		gid_t _g;						\
		ck_assert_int_eq(decode((cred), &_u, &_g), -1);		\
		ck_assert_msg(strstr(why, (reason)), "'%s', want '%s'",	\
			      why, (reason));				\
	} while (0)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

START_TEST(round_trip)
{
	enum { N = 200 };
	static double t[N];
	uid_t uid;
	gid_t gid;
	int i;

	for (i = 0; i < N; i++) {
		char *cred = mint(md.socket);
		double t0 = now_us();

		ck_assert_msg(!decode(cred, &uid, &gid), "%s", why);
		t[i] = now_us() - t0;
		ck_assert_uint_eq(uid, geteuid());
		ck_assert_uint_eq(gid, getegid());
		free(cred);
	}
	qsort(t, N, sizeof(t[0]), cmp_double);
	fprintf(stderr, "test_auth: mg_auth_munge of a fresh credential: median %.0f us, 90th %.0f us, max %.0f us (%d)\n",
		t[N / 2], t[N * 9 / 10], t[N - 1], N);
}
END_TEST

START_TEST(replayed)
{
	char *cred = mint(md.socket);
	uid_t uid;
	gid_t gid;

	ck_assert_msg(!decode(cred, &uid, &gid), "%s", why);
	assert_refused(cred, "replayed credential");
	assert_refused(cred, "replayed credential");
	free(cred);
}
END_TEST

/* Valid on the key, minted for something else: Slurm's, or near misses. */
START_TEST(wrong_payload)
{
	static const struct {
		const char *p;
		int len;
	} v[] = {
		{ "", 0 }, { "magnet", 6 }, { "magnetd\n", 8 }, { "magnetdX", 8 },
		{ "Magnetd", 7 }, { "magnetd\0", 8 }, { "slurm", 5 },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *cred = mint_raw(md.socket, v[i].p, v[i].len, 0);

		assert_refused(cred, "credential not minted for magnetd");
		free(cred);
	}
}
END_TEST

START_TEST(expired)
{
	char *cred = mint_raw(md.socket, MG_MUNGE_PAYLOAD, MG_MUNGE_PAYLOAD_LEN, 1);

	sleep(2);
	assert_refused(cred, "expired credential");
	free(cred);
}
END_TEST

/* Another cluster's munged (another key): its credentials mean nothing. */
START_TEST(other_key)
{
	struct tu_munged other;
	char *cred;

	tu_munged_start(&other, NULL);
	cred = mint(other.socket);
	tu_munged_stop(&other);
	assert_refused(cred, "invalid credential (minted with another MUNGE key?)");
	free(cred);
}
END_TEST

/* The same key in two munged (two nodes): accepted. */
START_TEST(same_key)
{
	struct tu_munged other;
	uid_t uid;
	gid_t gid;
	char *cred;

	tu_munged_start(&other, md.key);
	cred = mint(other.socket);
	tu_munged_stop(&other);
	ck_assert_msg(!decode(cred, &uid, &gid), "%s", why);
	ck_assert_uint_eq(uid, geteuid());
	free(cred);
}
END_TEST

/* Junk is refused before munged is asked: here munged is not even there. */
START_TEST(junk)
{
	static const char *const v[] = {
		"", "MUNGE:", "MUNGE::", "MUNGE:abc", "munge:abc:", "MUNGE:ab c:",
		"MUNGE:ab\tc:", "MUNGE:ab%c:", "MUNGE:ab\xc3\xa9:", "xMUNGE:ab:",
		"MUNGE:ab:\n",
	};
	char big[MG_MUNGE_CRED_MAX + 2];
	uid_t uid;
	gid_t gid;
	size_t i;

	mg_auth_munge_socket("/nonexistent/munge.socket");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_refused(v[i], "not a MUNGE credential");
	/* A NUL inside: the length given counts, not strlen. */
	ck_assert_int_eq(mg_auth_munge("MUNGE:ab\0cd:", 12, &uid, &gid, why,
				       sizeof(why)), -1);
	ck_assert_msg(strstr(why, "not a MUNGE credential"), "%s", why);
	memset(big, 'A', sizeof(big));
	memcpy(big, "MUNGE:", 6);
	big[MG_MUNGE_CRED_MAX] = ':';
	ck_assert_int_eq(mg_auth_munge(big, MG_MUNGE_CRED_MAX + 1, &uid, &gid,
				       why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "credential longer than 1024 bytes"), "%s", why);
	/* Armored, but no credential: munged says so. */
	mg_auth_munge_socket(md.socket);
	assert_refused("MUNGE:AAAAAAAAAAAAAAAA:", "invalid credential");
	big[MG_MUNGE_CRED_MAX - 1] = ':';	/* the longest taken */
	big[MG_MUNGE_CRED_MAX] = '\0';
	assert_refused(big, "invalid credential");
}
END_TEST

/* munged never there, stopped, killed (its socket left): a clear reason. */
START_TEST(munged_down)
{
	struct tu_munged down;
	char *cred, *cmd;
	double t0;

	tu_munged_start(&down, md.key);
	cred = mint(down.socket);

	mg_auth_munge_socket("/nonexistent/munge.socket");
	assert_refused(cred, "munged unreachable: Failed to access \"/nonexistent/munge.socket\"");
	ck_assert_int_eq(mga_munge_command("/nonexistent/munge.socket", &cmd, why,
					   sizeof(why)), -1);
	ck_assert_ptr_eq(cmd, NULL);
	ck_assert_msg(strstr(why, "cannot mint a MUNGE credential: munged unreachable: "),
		      "%s", why);

	mg_auth_munge_socket(down.socket);
	tu_munged_kill(&down);
	t0 = now_us();
	assert_refused(cred, "munged unreachable: Failed to connect to");
	fprintf(stderr, "test_auth: munged killed, its socket left: refused after %.2f s\n",
		(now_us() - t0) / 1e6);
	tu_munged_stop(&down);
	t0 = now_us();
	assert_refused(cred, "munged unreachable: Failed to access");
	fprintf(stderr, "test_auth: munged stopped: refused after %.0f us\n",
		now_us() - t0);
	mg_auth_munge_socket(md.socket);
	free(cred);
}
END_TEST

/* A minter that dropped to uid 65534 (as root only): 65534 is decoded. */
START_TEST(other_uid)
{
	int fds[2], st;
	char cred[MG_MUNGE_CRED_MAX + 1];
	uid_t uid;
	gid_t gid;
	ssize_t n;
	pid_t pid;

	if (geteuid())
		return;		/* no other uid to become */
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		char *c;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		c = mint(md.socket);
		_exit(write(fds[1], c, strlen(c)) == (ssize_t)strlen(c) ? 0 : 3);
	}
	close(fds[1]);
	n = read(fds[0], cred, sizeof(cred) - 1);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st), "child: %d", st);
	ck_assert_int_gt(n, 0);
	cred[n] = '\0';
	ck_assert_msg(!decode(cred, &uid, &gid), "%s", why);
	ck_assert_uint_eq(uid, 65534);
	ck_assert_uint_eq(gid, 65534);
}
END_TEST

/* The client's checks of the reply, and of the peer's address. */
START_TEST(client_reply)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	struct sockaddr un = { .sa_family = AF_UNIX };

	ck_assert_int_eq(mga_reply("OK AUTH uid=0 access=all", 24, why, sizeof(why)), 0);
	ck_assert_int_eq(mga_reply("OK AUTH", 7, why, sizeof(why)), 0);
	ck_assert_int_eq(mga_reply("OK AUTHX", 8, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "unexpected reply to AUTH: 'OK AUTHX'");
	ck_assert_int_eq(mga_reply("ERR auth: replayed credential", 29, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "auth: replayed credential");
	ck_assert_int_eq(mga_reply("ERR \x1b[2J\\", 9, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "\\x1b[2J\\x5c");

	in.sin_addr.s_addr = htonl(0x7f000001);
	ck_assert(mga_loopback((struct sockaddr *)&in));
	ck_assert(!mga_wanted(MGA_MUNGE_AUTO, (struct sockaddr *)&in));
	ck_assert(mga_wanted(MGA_MUNGE_ALWAYS, (struct sockaddr *)&in));
	in.sin_addr.s_addr = htonl(0x7f0a0b0c);
	ck_assert(mga_loopback((struct sockaddr *)&in));
	in.sin_addr.s_addr = htonl(0x0a00020f);
	ck_assert(!mga_loopback((struct sockaddr *)&in));
	ck_assert(mga_wanted(MGA_MUNGE_AUTO, (struct sockaddr *)&in));
	ck_assert(!mga_wanted(MGA_MUNGE_NEVER, (struct sockaddr *)&in));
	in6.sin6_addr = in6addr_loopback;
	ck_assert(mga_loopback((struct sockaddr *)&in6));
	ck_assert(inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr) == 1);
	ck_assert(mga_loopback((struct sockaddr *)&in6));
	ck_assert(inet_pton(AF_INET6, "::ffff:10.0.2.2", &in6.sin6_addr) == 1);
	ck_assert(!mga_loopback((struct sockaddr *)&in6));
	ck_assert(inet_pton(AF_INET6, "2001:db8::1", &in6.sin6_addr) == 1);
	ck_assert(mga_wanted(MGA_MUNGE_AUTO, (struct sockaddr *)&in6));
	/* A Unix socket: the kernel tells magnetd who we are. */
	ck_assert(!mga_wanted(MGA_MUNGE_ALWAYS, &un));
}
END_TEST

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("munge");

	/* One munged, started and stopped here (in the parent, with CK_FORK). */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	/*
	 * A test that starts and stops a munged of its own waits up to 30 s
	 * for it to stop (munged.c): under load that is most of it.
	 */
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, replayed);
	tcase_add_test(tc, wrong_payload);
	tcase_add_test(tc, expired);
	tcase_add_test(tc, other_key);
	tcase_add_test(tc, same_key);
	tcase_add_test(tc, junk);
	tcase_add_test(tc, munged_down);
	tcase_add_test(tc, other_uid);
	tcase_add_test(tc, client_reply);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(auth_suite());
}
