// SPDX-License-Identifier: GPL-2.0
/* daemon/access.c: lists of users and groups, levels, the address hash. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "owners.h"
#include "testutil.h"

static char passwd[64], group[64];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	strcpy(passwd, "/tmp/mg-access-passwd.XXXXXX");
	strcpy(group, "/tmp/mg-access-group.XXXXXX");
	close(mkstemp(passwd));
	close(mkstemp(group));
	write_file(passwd, "root:x:0:0:root:/root:/bin/sh\n"
		   "ganglia:x:990:990::/var/lib/ganglia:/usr/sbin/nologin\n"
		   "alice:x:1000:1000::/home/alice:/bin/sh\n"
		   "bob:x:1001:1001::/home/bob:/bin/sh\n");
	write_file(group, "root:x:0:\nmagnet:x:995:alice,carol\n"
		   "ganglia:x:990:\nstaff:x:50:bob\nalice:x:1000:\n");
	mg_access_passwd_path = passwd;
	mg_access_group_path = group;
}

static void teardown(void)
{
	unlink(passwd);
	unlink(group);
}

START_TEST(parse_lists)
{
	struct mg_access_set set;
	char err[256];

	ck_assert_int_eq(mg_access_parse("ganglia, 4242 @magnet,@7", false, &set,
					 err, sizeof(err)), 0);
	ck_assert_uint_eq(set.nuids, 2);
	ck_assert_uint_eq(set.uids[0], 990);
	ck_assert_uint_eq(set.uids[1], 4242);
	ck_assert_uint_eq(set.ngids, 2);
	ck_assert_uint_eq(set.gids[0], 995);
	ck_assert_uint_eq(set.gids[1], 7);
	ck_assert_int_eq(mg_access_parse("", false, &set, err, sizeof(err)), 0);
	ck_assert_uint_eq(set.nuids + set.ngids, 0);
	/* A name the files do not have: an error, unless lenient. */
	ck_assert_int_eq(mg_access_parse("ganglia, nobody", false, &set, err,
					 sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "no user 'nobody' in "), "%s", err);
	ck_assert_int_eq(mg_access_parse("@wheel", false, &set, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "no group 'wheel'"), "%s", err);
	ck_assert_int_eq(mg_access_parse("ganglia nobody @wheel", true, &set, err,
					 sizeof(err)), 0);
	ck_assert_uint_eq(set.nuids, 1);
	ck_assert_uint_eq(set.ngids, 0);
	/* "mag" is not "magnet", "ganglia:x" not a name. */
	ck_assert_int_eq(mg_access_parse("@mag", false, &set, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mg_access_parse("@", false, &set, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mg_access_parse("-1", false, &set, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mg_access_parse("4294967295", false, &set, err, sizeof(err)),
			 -EINVAL);
}
END_TEST

START_TEST(levels)
{
	struct mg_access_rules r;
	gid_t staff = 50, g[8];
	char err[256];

	ck_assert_int_eq(mg_access_parse("@magnet", false, &r.all, err, sizeof(err)), 0);
	ck_assert_int_eq(mg_access_parse("ganglia @staff", false, &r.totals, err,
					 sizeof(err)), 0);
	ck_assert_int_eq(mg_access_level(&r, 0, 0, NULL, 0), MG_ACCESS_ALL);
	ck_assert_int_eq(mg_access_level(&r, 990, 990, NULL, 0), MG_ACCESS_TOTALS);
	ck_assert_int_eq(mg_access_level(&r, 1001, 1001, &staff, 1), MG_ACCESS_TOTALS);
	ck_assert_int_eq(mg_access_level(&r, 1001, 1001, NULL, 0), MG_ACCESS_OWN);
	ck_assert_int_eq(mg_access_level(&r, 1002, 995, NULL, 0), MG_ACCESS_ALL);
	ck_assert_int_eq(mg_access_level(&r, 65534, 65534, NULL, 0), MG_ACCESS_OWN);
	/* A MUNGE client's groups come from /etc/group's member lists. */
	ck_assert_uint_eq(mg_access_groups_of(1000, g, 8), 1);
	ck_assert_uint_eq(g[0], 995);
	ck_assert_int_eq(mg_access_level(&r, 1000, 1000, g, 1), MG_ACCESS_ALL);
	ck_assert_uint_eq(mg_access_groups_of(1001, g, 8), 1);
	ck_assert_uint_eq(g[0], 50);
	ck_assert_uint_eq(mg_access_groups_of(4242, g, 8), 0);
	ck_assert_str_eq(mg_access_name(MG_ACCESS_TOTALS), "totals");
}
END_TEST

START_TEST(scrub)
{
	unsigned long long a = 0xffff888012345678ULL, h;

	mg_access_key_init();
	h = mg_access_scrub(a);
	ck_assert_uint_lt(h, 1ULL << 47);
	ck_assert_uint_eq(h, mg_access_scrub(a));
	ck_assert_uint_ne(h, mg_access_scrub(a + 8));
	ck_assert_uint_ne(mg_access_scrub(0xffffffff81000000ULL),
			  mg_access_scrub(0xffffffff81000008ULL));
	/* User addresses, small numbers and errno values pass. */
	ck_assert_uint_eq(mg_access_scrub(42), 42);
	ck_assert_uint_eq(mg_access_scrub(0x7ffd12345678ULL), 0x7ffd12345678ULL);
	ck_assert_uint_eq(mg_access_scrub((unsigned long long)-11), (unsigned long long)-11);
	ck_assert_uint_eq(mg_access_scrub((unsigned long long)-4095),
			  (unsigned long long)-4095);
	ck_assert_uint_lt(mg_access_scrub((unsigned long long)-4096), 1ULL << 47);
	/* A new key (a restart): other hashes. */
	mg_access_key_init();
	ck_assert_uint_ne(h, mg_access_scrub(a));
}
END_TEST

/*
 * Whose job: one user's; root's helpers do not change it; two users':
 * nobody's; a cgroup gone: forgotten.
 */
START_TEST(owners)
{
	struct mg_owners *o = mg_owners_new();
	unsigned int i;

	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(mg_owners_of(o, 7), MG_OWNER_NONE);
	mg_owners_note(o, 7, 1000);
	mg_owners_note(o, 7, 0);
	ck_assert_uint_eq(mg_owners_of(o, 7), 1000);
	mg_owners_note(o, 8, 0);
	ck_assert_uint_eq(mg_owners_of(o, 8), 0);
	mg_owners_note(o, 8, 1001);
	ck_assert_uint_eq(mg_owners_of(o, 8), 1001);
	mg_owners_note(o, 8, 1000);
	ck_assert_uint_eq(mg_owners_of(o, 8), MG_OWNER_MIXED);
	mg_owners_note(o, 8, 1001);
	ck_assert_uint_eq(mg_owners_of(o, 8), MG_OWNER_MIXED);
	mg_owners_note(o, 9, MG_OWNER_NONE);	/* a format 4 TASK record */
	ck_assert_uint_eq(mg_owners_of(o, 9), MG_OWNER_NONE);
	/* Several users' (another cgroup's, folded): as a second user. */
	mg_owners_note(o, 10, 0);
	mg_owners_note(o, 10, MG_OWNER_MIXED);
	ck_assert_uint_eq(mg_owners_of(o, 10), MG_OWNER_MIXED);
	mg_owners_note(o, 11, 1000);
	mg_owners_note(o, 11, MG_OWNER_MIXED);
	ck_assert_uint_eq(mg_owners_of(o, 11), MG_OWNER_MIXED);
	mg_owners_note(o, 12, MG_OWNER_MIXED);
	mg_owners_note(o, 12, 1000);
	ck_assert_uint_eq(mg_owners_of(o, 12), MG_OWNER_MIXED);
	/* A cgroup gone is forgotten: an id met again starts afresh. */
	mg_owners_forget(o, 7);
	mg_owners_forget(o, 4242);		/* never seen: nothing */
	ck_assert_uint_eq(mg_owners_of(o, 7), MG_OWNER_NONE);
	ck_assert_uint_eq(mg_owners_of(o, 8), MG_OWNER_MIXED);
	mg_owners_note(o, 7, 1002);
	ck_assert_uint_eq(mg_owners_of(o, 7), 1002);
	/* Bounded: past the bound it starts again, and keeps working. */
	for (i = 1; i <= 3 * MG_OWNERS_MAX; i++)
		mg_owners_note(o, 100 + i, i);
	ck_assert_uint_ge(mg_owners_resets(o), 1);
	ck_assert_uint_eq(mg_owners_of(o, 100 + 3 * MG_OWNERS_MAX), 3 * MG_OWNERS_MAX);
	mg_owners_free(o);
}
END_TEST

/*
 * The i-th id: runs of close ones, as cgroups' inode numbers are, each
 * sharing its slot with 63 others whatever the table's size: long probes.
 */
static __u32 owner_id(unsigned int i)
{
	return 1 + i % 64 + (i / 64) * 2 * MG_OWNERS_MAX;
}

/*
 * Cgroups seen and forgotten at random against a reference: every lookup
 * right after removals (the backward shift strands no entry).
 */
START_TEST(owners_forget)
{
	enum { IDS = 4096 };
	static __u32 ref[IDS];
	struct mg_owners *o = mg_owners_new();
	unsigned int i, k;

	ck_assert_ptr_nonnull(o);
	tu_seed(0xf0e7 + _i);
	for (i = 0; i < IDS; i++)
		ref[i] = MG_OWNER_NONE;
	for (k = 0; k < 200000; k++) {
		__u32 id = tu_rand() % IDS;

		if (tu_rand() % 3) {
			__u32 uid = 1000 + tu_rand() % 2000;

			mg_owners_note(o, owner_id(id), uid);
			ref[id] = ref[id] == MG_OWNER_NONE || ref[id] == uid ?
				  uid : MG_OWNER_MIXED;
		} else {
			mg_owners_forget(o, owner_id(id));
			ref[id] = MG_OWNER_NONE;
		}
		if (k % 1000 == 0)
			for (i = 0; i < IDS; i++)
				tu_assert_op(mg_owners_of(o, owner_id(i)), ==, ref[i]);
	}
	for (i = 0; i < IDS; i++)
		tu_assert_op(mg_owners_of(o, owner_id(i)), ==, ref[i]);
	ck_assert_uint_eq(mg_owners_resets(o), 0);
	mg_owners_free(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("access");
	TCase *tc = tcase_create("access");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, parse_lists);
	tcase_add_test(tc, levels);
	tcase_add_test(tc, scrub);
	tcase_add_test(tc, owners);
	tcase_add_loop_test(tc, owners_forget, 0, 3);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
