// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup id -> path; see cgmap.h.
 *
 * Two small open-addressing tables keyed by a u32 (linear probing, load at
 * most 1/2, backward-shift deletion so no tombstones pile up): cgroup ids
 * to paths, and inotify watch descriptors to the directory they watch.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "cgmap.h"

struct kv {
	__u32 key;
	bool used;
	bool seen;		/* found by the latest walk */
	char *val;
};

struct table {
	struct kv *v;
	unsigned int mask, n;	/* slots - 1; entries */
};

struct mg_cgmap {
	char root[PATH_MAX];	/* "" for none */
	struct table ids, wds;
	int ifd;
	__u64 last_scan;	/* mono ns; 0: never */
	struct mg_cgmap_stats st;
};

static unsigned int slot_of(const struct table *t, __u32 key)
{
	return (unsigned int)((key * 0x9e3779b97f4a7c15ULL) >> 32) & t->mask;
}

static struct kv *t_find(const struct table *t, __u32 key)
{
	unsigned int i;

	if (!t->v)
		return NULL;
	for (i = slot_of(t, key); t->v[i].used; i = (i + 1) & t->mask)
		if (t->v[i].key == key)
			return &t->v[i];
	return NULL;
}

static int t_grow(struct table *t)
{
	unsigned int slots = t->v ? 2 * (t->mask + 1) : 64, i, j;
	struct kv *old = t->v, *v = calloc(slots, sizeof(*v));
	unsigned int oslots = t->v ? t->mask + 1 : 0;

	if (!v)
		return -ENOMEM;
	t->v = v;
	t->mask = slots - 1;
	for (i = 0; i < oslots; i++) {
		if (!old[i].used)
			continue;
		for (j = slot_of(t, old[i].key); v[j].used; j = (j + 1) & t->mask)
			;
		v[j] = old[i];
	}
	free(old);
	return 0;
}

/* Set key's value to a copy of val (replacing it); marks it seen. */
static int t_put(struct table *t, __u32 key, const char *val)
{
	struct kv *e = t_find(t, key);
	char *copy;
	unsigned int i;

	if (e && e->val && !strcmp(e->val, val)) {
		e->seen = true;
		return 0;
	}
	copy = strdup(val);
	if (!copy)
		return -ENOMEM;
	if (e) {
		free(e->val);
		e->val = copy;
		e->seen = true;
		return 0;
	}
	if (!t->v || 2 * (t->n + 1) > t->mask + 1) {
		if (t_grow(t)) {
			free(copy);
			return -ENOMEM;
		}
	}
	for (i = slot_of(t, key); t->v[i].used; i = (i + 1) & t->mask)
		;
	t->v[i] = (struct kv){ .key = key, .used = true, .seen = true,
			       .val = copy };
	t->n++;
	return 0;
}

static void t_del(struct table *t, struct kv *e)
{
	unsigned int hole = e - t->v, i, home;

	free(e->val);
	memset(e, 0, sizeof(*e));
	t->n--;
	for (i = (hole + 1) & t->mask; t->v[i].used; i = (i + 1) & t->mask) {
		home = slot_of(t, t->v[i].key);
		/* It stays if its home lies cyclically in (hole, i]. */
		if (hole <= i ? (hole < home && home <= i) :
				(hole < home || home <= i))
			continue;
		t->v[hole] = t->v[i];
		memset(&t->v[i], 0, sizeof(t->v[i]));
		hole = i;
	}
}

static void t_free(struct table *t)
{
	unsigned int i;

	for (i = 0; t->v && i <= t->mask; i++)
		free(t->v[i].val);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* The cgroup2 mount point from mountinfo: field 5; " - cgroup2 " after. */
static void find_cgroup2(struct mg_cgmap *m)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX];

		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
			snprintf(m->root, sizeof(m->root), "%s", mnt);
			break;
		}
	}
	fclose(f);
}

/* Map directory rel (under the root) and every directory below it. */
static void walk(struct mg_cgmap *m, const char *rel, unsigned int depth)
{
	char full[2 * PATH_MAX], sub[PATH_MAX];
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int fd;

	if (depth > 64)
		return;		/* deeper than any cgroup tree: a loop */
	snprintf(full, sizeof(full), "%s%s", m->root, strcmp(rel, "/") ? rel : "");
	fd = open(full[0] ? full : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;		/* removed meanwhile */
	if (fstat(fd, &st) || t_put(&m->ids, (__u32)st.st_ino, rel)) {
		close(fd);
		return;
	}
	if (m->ifd >= 0) {
		/* Before reading it: a mkdir after the readdir is reported. */
		int wd = inotify_add_watch(m->ifd, full, IN_CREATE | IN_ONLYDIR);

		if (wd >= 0)
			t_put(&m->wds, (__u32)wd, rel);
	}
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.' &&
		    (!d->d_name[1] || (d->d_name[1] == '.' && !d->d_name[2])))
			continue;
		if (d->d_type == DT_UNKNOWN) {
			if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode))
				continue;
		} else if (d->d_type != DT_DIR) {
			continue;
		}
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s",
				     strcmp(rel, "/") ? rel : "", d->d_name) >=
		    sizeof(sub))
			continue;
		walk(m, sub, depth + 1);
	}
	closedir(dir);
}

static void rescan(struct mg_cgmap *m, __u64 now_ns)
{
	unsigned int i;

	m->last_scan = now_ns ? now_ns : 1;
	m->st.rescans++;
	if (!m->root[0])
		return;
	for (i = 0; m->ids.v && i <= m->ids.mask; i++)
		m->ids.v[i].seen = false;
	walk(m, "/", 0);
	/* Over the bound: forget the removed cgroups (a kept one never goes). */
	if (m->ids.n > MG_CGMAP_MAX) {
		for (i = 0; i <= m->ids.mask; i++)
			while (m->ids.v[i].used && !m->ids.v[i].seen)
				t_del(&m->ids, &m->ids.v[i]);
	}
}

int mg_cgmap_open(const char *root, unsigned int flags, struct mg_cgmap **out)
{
	struct mg_cgmap *m = calloc(1, sizeof(*m));
	struct stat st;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->ifd = -1;
	if (root) {
		if (stat(root, &st) || !S_ISDIR(st.st_mode)) {
			free(m);
			return -EINVAL;
		}
		snprintf(m->root, sizeof(m->root), "%s", root);
	} else {
		find_cgroup2(m);
	}
	/* No trailing '/': paths under it start with one. */
	while (strlen(m->root) > 1 && m->root[strlen(m->root) - 1] == '/')
		m->root[strlen(m->root) - 1] = '\0';
	if (m->root[0] && (flags & MG_CGMAP_INOTIFY))
		m->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	rescan(m, 0);
	if (m->root[0] && !m->ids.n) {
		mg_cgmap_free(m);
		return -ENOMEM;		/* the root itself could not be mapped */
	}
	*out = m;
	return 0;
}

void mg_cgmap_free(struct mg_cgmap *m)
{
	if (!m)
		return;
	if (m->ifd >= 0)
		close(m->ifd);
	t_free(&m->ids);
	t_free(&m->wds);
	free(m);
}

const char *mg_cgmap_root(const struct mg_cgmap *m)
{
	return m->root[0] ? m->root : NULL;
}

const char *mg_cgmap_path(struct mg_cgmap *m, __u32 id, __u64 now_ns)
{
	struct kv *e = t_find(&m->ids, id);

	if (e)
		return e->val;
	if (!m->root[0] || now_ns - m->last_scan < MG_CGMAP_RESCAN_NS)
		return NULL;	/* a miss since the last walk: still a miss */
	rescan(m, now_ns);
	e = t_find(&m->ids, id);
	return e ? e->val : NULL;
}

const char *mg_cgmap_name(struct mg_cgmap *m, __u32 id, __u64 now_ns,
			  char *buf, size_t size)
{
	const char *path = mg_cgmap_path(m, id, now_ns);

	if (path)
		return path;
	snprintf(buf, size, "cgroup:%u", id);
	return buf;
}

bool mg_cgmap_alive(struct mg_cgmap *m, __u32 id)
{
	struct kv *e = t_find(&m->ids, id);
	char full[2 * PATH_MAX];
	struct stat st;

	if (!e)
		return false;
	snprintf(full, sizeof(full), "%s%s", m->root,
		 strcmp(e->val, "/") ? e->val : "");
	return !stat(full[0] ? full : "/", &st) && (__u32)st.st_ino == id;
}

int mg_cgmap_fd(const struct mg_cgmap *m)
{
	return m->ifd;
}

void mg_cgmap_poll(struct mg_cgmap *m)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	if (m->ifd < 0)
		return;
	while ((n = read(m->ifd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (p < buf + n) {
			const struct inotify_event *ev = (const void *)p;
			struct kv *w = t_find(&m->wds, (__u32)ev->wd);
			char sub[PATH_MAX];

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				rescan(m, m->last_scan);	/* events were lost */
				continue;
			}
			if (!w)
				continue;
			if (ev->mask & IN_IGNORED) {
				t_del(&m->wds, w);	/* the directory went */
				continue;
			}
			if (!(ev->mask & IN_CREATE) || !(ev->mask & IN_ISDIR) ||
			    !ev->len)
				continue;
			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s",
					     strcmp(w->val, "/") ? w->val : "",
					     ev->name) >= sizeof(sub))
				continue;
			m->st.created++;
			walk(m, sub, 1);
		}
	}
}

void mg_cgmap_stats(const struct mg_cgmap *m, struct mg_cgmap_stats *st)
{
	*st = m->st;
	st->paths = m->ids.n;
	st->watches = m->wds.n;
}
