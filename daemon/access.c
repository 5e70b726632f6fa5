// SPDX-License-Identifier: GPL-2.0
/* Who may see what: see access.h and docs/security.md. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "access.h"

const char *mg_access_passwd_path = "/etc/passwd";
const char *mg_access_group_path = "/etc/group";

const char *mg_access_name(enum mg_access a)
{
	static const char *const names[] = {
		[MG_ACCESS_NONE] = "none", [MG_ACCESS_OWN] = "own",
		[MG_ACCESS_TOTALS] = "totals", [MG_ACCESS_ALL] = "all",
	};

	return (unsigned int)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

/*
 * Field 3 (the id) of the line of /etc/passwd or /etc/group whose first
 * field is name; -1 if none. A static binary cannot use NSS: the files
 * are what a cluster node's local accounts (and sssd's or nslcd's
 * enumeration, if it is configured to fill them) give.
 */
static long long id_of(const char *path, const char *name)
{
	char line[4096];
	size_t n = strlen(name);
	long long id = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p, *end;

		if (strncmp(line, name, n) || line[n] != ':')
			continue;
		p = strchr(line + n + 1, ':');	/* past the password */
		if (!p)
			continue;
		errno = 0;
		id = strtoll(p + 1, &end, 10);
		if (errno || end == p + 1 || *end != ':' || id < 0 || id > UINT32_MAX - 1)
			id = -1;
		break;
	}
	fclose(f);
	return id;
}

static int add_id(struct mg_access_set *set, bool group, long long id,
		  const char *word, char *err, size_t errlen)
{
	if (group ? set->ngids : set->nuids) {
		unsigned int i, n = group ? set->ngids : set->nuids;

		for (i = 0; i < n; i++)
			if (group ? set->gids[i] == (gid_t)id : set->uids[i] == (uid_t)id)
				return 0;
	}
	if ((group ? set->ngids : set->nuids) == MG_ACCESS_SET_MAX) {
		snprintf(err, errlen, "'%s': more than %d %s", word,
			 MG_ACCESS_SET_MAX, group ? "groups" : "users");
		return -EINVAL;
	}
	if (group)
		set->gids[set->ngids++] = id;
	else
		set->uids[set->nuids++] = id;
	return 0;
}

int mg_access_parse(const char *text, bool lenient, struct mg_access_set *set,
		    char *err, size_t errlen)
{
	const char *p = text;

	memset(set, 0, sizeof(*set));
	for (;;) {
		char word[256], *end;
		bool group;
		size_t n;
		long long id;

		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		if (!*p)
			return 0;
		n = strcspn(p, ", \t");
		if (n >= sizeof(word)) {
			snprintf(err, errlen, "a name of %zu bytes", n);
			return -EINVAL;
		}
		memcpy(word, p, n);
		word[n] = 0;
		p += n;
		group = word[0] == '@';
		if (!word[group]) {
			snprintf(err, errlen, "'@' without a group");
			return -EINVAL;
		}
		errno = 0;
		id = strtoll(word + group, &end, 10);
		if (!*end && !errno && end != word + group) {
			if (id < 0 || id > UINT32_MAX - 1) {
				snprintf(err, errlen, "'%s': not a %s id", word,
					 group ? "group" : "user");
				return -EINVAL;
			}
		} else {
			id = id_of(group ? mg_access_group_path : mg_access_passwd_path,
				   word + group);
			if (id < 0) {
				if (lenient)
					continue;
				snprintf(err, errlen, "no %s '%s' in %s",
					 group ? "group" : "user", word + group,
					 group ? mg_access_group_path : mg_access_passwd_path);
				return -EINVAL;
			}
		}
		if (add_id(set, group, id, word, err, errlen))
			return -EINVAL;
	}
}

static bool in_set(const struct mg_access_set *set, uid_t uid, gid_t gid,
		   const gid_t *groups, size_t ngroups)
{
	unsigned int i;
	size_t k;

	for (i = 0; i < set->nuids; i++)
		if (set->uids[i] == uid)
			return true;
	for (i = 0; i < set->ngids; i++) {
		if (set->gids[i] == gid)
			return true;
		for (k = 0; k < ngroups; k++)
			if (set->gids[i] == groups[k])
				return true;
	}
	return false;
}

enum mg_access mg_access_level(const struct mg_access_rules *r, uid_t uid,
			       gid_t gid, const gid_t *groups, size_t ngroups)
{
	if (uid == 0 || in_set(&r->all, uid, gid, groups, ngroups))
		return MG_ACCESS_ALL;
	if (in_set(&r->totals, uid, gid, groups, ngroups))
		return MG_ACCESS_TOTALS;
	return MG_ACCESS_OWN;
}

/* Is name in the comma-separated member list of a group line? */
static bool member(const char *list, const char *name)
{
	size_t n = strlen(name);

	while (*list) {
		size_t k = strcspn(list, ",\n");

		if (k == n && !strncmp(list, name, n))
			return true;
		list += k;
		if (*list)
			list++;
	}
	return false;
}

size_t mg_access_groups_of(uid_t uid, gid_t *groups, size_t max)
{
	char line[4096], name[256] = "";
	size_t n = 0;
	FILE *f = fopen(mg_access_passwd_path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (c2 && strtoull(c2 + 1, NULL, 10) == uid &&
		    (size_t)(c1 - line) < sizeof(name)) {
			memcpy(name, line, c1 - line);
			name[c1 - line] = 0;
			break;
		}
	}
	fclose(f);
	if (!name[0])
		return 0;
	f = fopen(mg_access_group_path, "re");
	if (!f)
		return 0;
	/* name:password:gid:member,member */
	while (n < max && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		char *c3 = c2 ? strchr(c2 + 1, ':') : NULL;

		if (c3 && member(c3 + 1, name))
			groups[n++] = strtoul(c2 + 1, NULL, 10);
	}
	fclose(f);
	return n;
}

/* SipHash-2-4 (Aumasson, Bernstein), of one 64-bit word. */
static uint64_t key[2];

#define ROTL(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND							\
	do {								\
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;			\
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;			\
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

static uint64_t siphash_u64(uint64_t m)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ key[0];
	uint64_t v1 = 0x646f72616e646f6dULL ^ key[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ key[0];
	uint64_t v3 = 0x7465646279746573ULL ^ key[1];
	uint64_t b = 8ULL << 56;

	v3 ^= m;
	SIPROUND;
	SIPROUND;
	v0 ^= m;
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

void mg_access_key_init(void)
{
	/* A fresh key per run: hashes are not comparable across restarts. */
	if (getrandom(key, sizeof(key), 0) != sizeof(key)) {
		FILE *f = fopen("/dev/urandom", "re");

		if (!f || fread(key, sizeof(key), 1, f) != 1)
			abort();	/* no randomness: hashes would be reversible */
		fclose(f);
	}
}

/*
 * Kernel addresses: the upper half of the address space, as x86-64 (4-
 * and 5-level paging) and arm64 lay it out; the last page is errno values
 * (a kretprobe's -EAGAIN stays readable).
 */
#define KERNEL_HALF	0xff00000000000000ULL
#define ERR_PTR_FIRST	0xfffffffffffff001ULL

unsigned long long mg_access_scrub(unsigned long long v)
{
	if (v < KERNEL_HALF || v >= ERR_PTR_FIRST)
		return v;
	return siphash_u64(v) & ((1ULL << 47) - 1);
}
