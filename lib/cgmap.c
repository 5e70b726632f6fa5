// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup id -> path; see cgmap.h.
 *
 * A node per cgroup known (its id, path, watch) sits in one of two lists,
 * least recently used first: live cgroups and removed ones. Three small
 * open-addressing tables of u32 keys point at nodes (linear probing, load
 * at most 1/2, backward-shift deletion so no tombstones pile up): by id,
 * by inotify watch descriptor, and, for live cgroups, by a keyed hash of
 * the path (an IN_DELETE names the removed directory only by its parent
 * and name). The hash is keyed at random so that a user naming cgroups
 * cannot pile them into one probe sequence.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cgmap.h"

/* linux/exportfs.h: kernfs' file handle, the node's 64-bit id. */
#define FILEID_KERNFS	0xfe
#define WATCH_MASK	(IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_ONLYDIR)

struct node {
	struct node *prev, *next;	/* in live or gone */
	__u32 id;
	__u32 hash;		/* of path; in the paths table while live */
	__u32 series;		/* the cgroup its records count in */
	__u32 step;		/* its Slurm step's directory, or 0 */
	int wd;			/* its watch, -1 none */
	bool gone;
	bool seen;		/* found by the latest walk */
	struct mg_slurm *slurm;	/* after path, for a Slurm job's; or NULL */
	size_t len;		/* strlen(path) */
	char path[];
};

struct list {
	struct node *head, *tail;	/* least, most recently used */
	unsigned int n;
};

struct slot {
	__u32 key;
	bool used;
	struct node *n;
};

struct table {
	struct slot *v;
	unsigned int mask, n;	/* slots - 1; entries */
};

struct kernfs_handle {
	struct file_handle fh;
	__u64 id;
};

struct mg_cgmap {
	char root[PATH_MAX];	/* "" for none */
	size_t prefix;		/* bytes of root before a path: 0 for "/" */
	struct table ids, wds, paths;
	struct list live, gone;
	size_t bytes;
	__u64 key[2];		/* of the path hash */
	int ifd;
	int mntfd;		/* the root, for open_by_handle_at; -1 none */
	__u64 last_scan;	/* mono ns; 0: never */
	bool armed;		/* the next mg_cgmap_series miss polls */
	struct mg_cgmap_stats st;
};

/* ---- the tables --------------------------------------------------------- */

static unsigned int slot_of(const struct table *t, __u32 key)
{
	return (unsigned int)((key * 0x9e3779b97f4a7c15ULL) >> 32) & t->mask;
}

/* The slot of key that points at n (NULL: at any node), or NULL. */
static struct slot *t_find(const struct table *t, __u32 key,
			   const struct node *n)
{
	unsigned int i;

	if (!t->v)
		return NULL;
	for (i = slot_of(t, key); t->v[i].used; i = (i + 1) & t->mask)
		if (t->v[i].key == key && (!n || t->v[i].n == n))
			return &t->v[i];
	return NULL;
}

static void t_place(struct table *t, struct slot s)
{
	unsigned int i;

	for (i = slot_of(t, s.key); t->v[i].used; i = (i + 1) & t->mask)
		;
	t->v[i] = s;
}

static int t_add(struct table *t, __u32 key, struct node *n)
{
	if (!t->v || 2 * (t->n + 1) > t->mask + 1) {
		unsigned int slots = t->v ? 2 * (t->mask + 1) : 64, i;
		unsigned int oslots = t->v ? t->mask + 1 : 0;
		struct slot *old = t->v, *v = calloc(slots, sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->mask = slots - 1;
		for (i = 0; i < oslots; i++)
			if (old[i].used)
				t_place(t, old[i]);
		free(old);
	}
	t_place(t, (struct slot){ .key = key, .used = true, .n = n });
	t->n++;
	return 0;
}

static void t_del(struct table *t, struct slot *s)
{
	unsigned int hole = s - t->v, i, home;

	memset(s, 0, sizeof(*s));
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

static void t_remove(struct table *t, __u32 key, const struct node *n)
{
	struct slot *s = t_find(t, key, n);

	if (s)
		t_del(t, s);
}

/* ---- the path hash: SipHash-1-3 ----------------------------------------- */

#define ROTL(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))

static void sipround(__u64 v[4])
{
	v[0] += v[1]; v[1] = ROTL(v[1], 13); v[1] ^= v[0]; v[0] = ROTL(v[0], 32);
	v[2] += v[3]; v[3] = ROTL(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = ROTL(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = ROTL(v[1], 17); v[1] ^= v[2]; v[2] = ROTL(v[2], 32);
}

static __u32 hash_of(const struct mg_cgmap *m, const char *s, size_t len)
{
	__u64 v[4] = { m->key[0] ^ 0x736f6d6570736575ULL,
		       m->key[1] ^ 0x646f72616e646f6dULL,
		       m->key[0] ^ 0x6c7967656e657261ULL,
		       m->key[1] ^ 0x7465646279746573ULL };
	__u64 w, last = (__u64)len << 56;
	size_t i, j;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		v[3] ^= w;
		sipround(v);
		v[0] ^= w;
	}
	for (j = 0; i + j < len; j++)
		last |= (__u64)(unsigned char)s[i + j] << (8 * j);
	v[3] ^= last;
	sipround(v);
	v[0] ^= last;
	v[2] ^= 0xff;
	sipround(v);
	sipround(v);
	sipround(v);
	return (__u32)(v[0] ^ v[1] ^ v[2] ^ v[3]);
}

/* ---- nodes --------------------------------------------------------------- */

static void l_remove(struct list *l, struct node *n)
{
	if (l->head == n)
		l->head = n->next;
	else
		n->prev->next = n->next;
	if (l->tail == n)
		l->tail = n->prev;
	else
		n->next->prev = n->prev;
	n->prev = n->next = NULL;
	l->n--;
}

static void l_append(struct list *l, struct node *n)
{
	n->prev = l->tail;
	n->next = NULL;
	*(l->tail ? &l->tail->next : &l->head) = n;
	l->tail = n;
	l->n++;
}

static struct list *list_of(struct mg_cgmap *m, const struct node *n)
{
	return n->gone ? &m->gone : &m->live;
}

/* Most recently used now. */
static void touch(struct mg_cgmap *m, struct node *n)
{
	struct list *l = list_of(m, n);

	if (l->tail != n) {
		l_remove(l, n);
		l_append(l, n);
	}
}

static void unwatch(struct mg_cgmap *m, struct node *n)
{
	if (n->wd < 0)
		return;
	t_remove(&m->wds, (__u32)n->wd, n);
	/* The kernel holds a watched directory until the watch goes. */
	inotify_rm_watch(m->ifd, n->wd);
	n->wd = -1;
}

/* The live cgroup at path rel, or NULL. */
static struct node *live_at(const struct mg_cgmap *m, const char *rel,
			    size_t len, __u32 hash)
{
	const struct table *t = &m->paths;
	unsigned int i;

	if (!t->v)
		return NULL;
	for (i = slot_of(t, hash); t->v[i].used; i = (i + 1) & t->mask) {
		const struct node *n = t->v[i].n;

		if (t->v[i].key == hash && n->len == len &&
		    !memcmp(n->path, rel, len))
			return t->v[i].n;
	}
	return NULL;
}

/* Forget n, which is in list l. */
static void drop_from(struct mg_cgmap *m, struct list *l, struct node *n)
{
	unwatch(m, n);
	t_remove(&m->ids, n->id, n);
	if (l == &m->live)
		t_remove(&m->paths, n->hash, n);
	l_remove(l, n);
	m->bytes -= n->len + 1;
	free(n);
}

static void drop(struct mg_cgmap *m, struct node *n)
{
	drop_from(m, list_of(m, n), n);
}

/* Removed: kept for late records, without its watch. */
static void set_gone(struct mg_cgmap *m, struct node *n)
{
	if (n->gone)
		return;
	unwatch(m, n);
	t_remove(&m->paths, n->hash, n);
	l_remove(&m->live, n);
	n->gone = true;
	l_append(&m->gone, n);
	m->st.removed++;
}

/*
 * Back within the bounds (cgmap.h): removed cgroups first, then live ones
 * when they can be looked up again; keep is never dropped.
 */
static void enforce(struct mg_cgmap *m, const struct node *keep)
{
	while (m->gone.n > MG_CGMAP_GONE_MAX || m->ids.n > MG_CGMAP_MAX ||
	       m->bytes > MG_CGMAP_MAX_BYTES) {
		struct list *l = m->gone.head ? &m->gone : &m->live;
		struct node *v = l->head;

		if (l == &m->live) {
			if (v && v == keep)
				v = v->next;
			if (!v || m->mntfd < 0)
				return;
			m->st.evicted_live++;
		}
		m->st.evicted++;
		drop_from(m, l, v);
	}
}

static void full_path(const struct mg_cgmap *m, const char *rel, char *buf,
		      size_t size);

/*
 * The id of the cgroup at the first len bytes of rel (a Slurm series'):
 * mapped (a walk maps a directory before those below it), else by a stat;
 * 0 if it is gone.
 */
static __u32 id_at(struct mg_cgmap *m, const char *rel, size_t len)
{
	char sub[PATH_MAX], full[2 * PATH_MAX];
	struct node *n = live_at(m, rel, len, hash_of(m, rel, len));
	struct stat st;

	if (n)
		return n->id;
	if (len >= sizeof(sub))
		return 0;
	memcpy(sub, rel, len);
	sub[len] = '\0';
	full_path(m, sub, full, sizeof(full));
	return stat(full, &st) ? 0 : (__u32)st.st_ino;
}

/* Map id to rel: its live node, or NULL (out of memory). */
static struct node *map(struct mg_cgmap *m, __u32 id, const char *rel)
{
	size_t len = strlen(rel), size;
	__u32 hash = hash_of(m, rel, len);
	struct slot *s = t_find(&m->ids, id, NULL);
	struct node *n = s ? s->n : NULL, *other;
	struct mg_slurm slurm;
	bool is_slurm;

	if (n && !n->gone && n->len == len && !memcmp(n->path, rel, len)) {
		n->seen = true;
		return n;
	}
	/* One removed unnoticed, whose name was taken again. */
	other = live_at(m, rel, len, hash);
	if (other && other != n)
		set_gone(m, other);
	if (n)
		drop(m, n);	/* seen removed by mistake: afresh */
	/* Parsed once, here; a Slurm job's after the path, aligned. */
	is_slurm = mg_slurm_parse(rel, len, &slurm);
	size = sizeof(*n) + len + 1;
	if (is_slurm)
		size = (size + __alignof__(slurm) - 1) / __alignof__(slurm) *
		       __alignof__(slurm) + sizeof(slurm);
	n = malloc(size);
	if (!n)
		return NULL;
	*n = (struct node){ .id = id, .hash = hash, .series = id, .wd = -1,
			    .seen = true, .len = len };
	memcpy(n->path, rel, len + 1);
	if (is_slurm) {
		n->slurm = (struct mg_slurm *)((char *)n + size - sizeof(slurm));
		*n->slurm = slurm;
		if (slurm.series_len < len)
			n->series = id_at(m, rel, slurm.series_len);
		if (!n->series)
			n->series = id;	/* its step is gone: a series alone */
		if (slurm.step_len)
			n->step = slurm.step_len == slurm.series_len ? n->series :
				  id_at(m, rel, slurm.step_len);
	}
	if (t_add(&m->ids, id, n)) {
		free(n);
		return NULL;
	}
	if (t_add(&m->paths, hash, n)) {
		t_remove(&m->ids, id, n);
		free(n);
		return NULL;
	}
	l_append(&m->live, n);
	m->bytes += len + 1;
	enforce(m, n);
	return n;
}

/* Watch n's directory, by path (or /proc/self/fd/N). */
static void watch(struct mg_cgmap *m, struct node *n, const char *path)
{
	struct slot *s;
	int wd;

	if (m->ifd < 0 || n->wd >= 0)
		return;
	wd = inotify_add_watch(m->ifd, path, WATCH_MASK);
	if (wd < 0)
		return;
	s = t_find(&m->wds, (__u32)wd, NULL);
	if (s) {
		/* The same directory under a node that is going. */
		s->n->wd = -1;
		s->n = n;
	} else if (t_add(&m->wds, (__u32)wd, n)) {
		inotify_rm_watch(m->ifd, wd);
		return;
	}
	n->wd = wd;
}

/* ---- walking the tree ----------------------------------------------------- */

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

static void full_path(const struct mg_cgmap *m, const char *rel, char *buf,
		      size_t size)
{
	snprintf(buf, size, "%.*s%s", (int)m->prefix, m->root,
		 strcmp(rel, "/") ? rel : (m->prefix ? "" : "/"));
}

/* Map directory rel (under the root) and every directory below it. */
static void walk(struct mg_cgmap *m, const char *rel, unsigned int depth)
{
	char full[2 * PATH_MAX], sub[PATH_MAX];
	struct dirent *d;
	struct node *n;
	struct stat st;
	DIR *dir;
	int fd;

	if (depth > 64)
		return;		/* deeper than any cgroup tree: a loop */
	full_path(m, rel, full, sizeof(full));
	fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;		/* removed meanwhile */
	n = fstat(fd, &st) ? NULL : map(m, (__u32)st.st_ino, rel);
	if (!n) {
		close(fd);
		return;
	}
	/* Before reading it: a mkdir after the readdir is reported. */
	watch(m, n, full);
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
	struct node *n, *next;

	m->last_scan = now_ns ? now_ns : 1;
	m->st.rescans++;
	if (!m->root[0])
		return;
	for (n = m->live.head; n; n = n->next)
		n->seen = false;
	walk(m, "/", 0);
	/* Not found: removed unnoticed (events lost, or no inotify). */
	for (n = m->live.head; n; n = next) {
		next = n->next;
		if (!n->seen)
			set_gone(m, n);
	}
	enforce(m, NULL);
}

/*
 * Look id up by its handle (cgroupfs only): 0 mapped, -ESTALE no such
 * cgroup now, -ENOMEM, -EPERM when handles cannot be used.
 */
static int resolve(struct mg_cgmap *m, __u32 id)
{
	struct kernfs_handle h = { .fh = { .handle_bytes = sizeof(h.id),
					   .handle_type = FILEID_KERNFS },
				   .id = id };
	char link[32], full[PATH_MAX];
	const char *rel;
	struct node *n;
	struct stat st;
	ssize_t len;
	int fd, ret = -ESTALE;

	fd = open_by_handle_at(m->mntfd, &h.fh, O_RDONLY | O_DIRECTORY |
			       O_CLOEXEC);
	if (fd < 0)
		return errno == EPERM || errno == EACCES || errno == ENOSYS ||
		       errno == EOPNOTSUPP || errno == EBADF ? -EPERM : -ESTALE;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, full, sizeof(full));
	if (len <= 0 || len >= (ssize_t)sizeof(full))
		goto out;
	full[len] = '\0';
	/*
	 * Under the root, and still there by that path (removed, it would
	 * read "... (deleted)", which a cgroup may also be called).
	 */
	if (strncmp(full, m->root, m->prefix) ||
	    (full[m->prefix] && full[m->prefix] != '/') ||
	    stat(full, &st) || (__u32)st.st_ino != id)
		goto out;
	rel = full[m->prefix] ? full + m->prefix : "/";
	n = map(m, id, rel);
	if (!n) {
		ret = -ENOMEM;
		goto out;
	}
	watch(m, n, link);
	ret = 0;
out:
	close(fd);
	return ret;
}

/* Handles when the root is cgroupfs' (kernfs) and we may open them. */
static void setup_handles(struct mg_cgmap *m)
{
	struct kernfs_handle h = { .fh = { .handle_bytes = sizeof(h.id) } };
	struct stat st;
	int mnt, fd;

	if (name_to_handle_at(AT_FDCWD, m->root, &h.fh, &mnt, 0) ||
	    h.fh.handle_type != FILEID_KERNFS ||
	    h.fh.handle_bytes != sizeof(h.id))
		return;
	fd = open(m->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	m->mntfd = fd;
	/* CAP_DAC_READ_SEARCH: try the root itself. */
	if (fstat(fd, &st) || resolve(m, (__u32)st.st_ino)) {
		close(fd);
		m->mntfd = -1;
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
	m->mntfd = -1;
	if (getrandom(m->key, sizeof(m->key), GRND_NONBLOCK) != sizeof(m->key)) {
		m->key[0] = (__u64)time(NULL) * 0x9e3779b97f4a7c15ULL;
		m->key[1] = (__u64)getpid() ^ (__u64)(uintptr_t)m;
	}
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
	m->prefix = strcmp(m->root, "/") ? strlen(m->root) : 0;
	if (m->root[0] && (flags & MG_CGMAP_INOTIFY))
		m->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	rescan(m, 0);
	if (m->root[0] && !m->ids.n) {
		mg_cgmap_free(m);
		return -ENOMEM;		/* the root itself could not be mapped */
	}
	if (m->root[0] && !(flags & MG_CGMAP_NO_HANDLES))
		setup_handles(m);
	*out = m;
	return 0;
}

void mg_cgmap_free(struct mg_cgmap *m)
{
	struct node *n, *next;
	int l;

	if (!m)
		return;
	if (m->ifd >= 0)
		close(m->ifd);
	if (m->mntfd >= 0)
		close(m->mntfd);
	for (l = 0; l < 2; l++)
		for (n = (l ? m->gone : m->live).head; n; n = next) {
			next = n->next;
			free(n);
		}
	free(m->ids.v);
	free(m->wds.v);
	free(m->paths.v);
	free(m);
}

const char *mg_cgmap_root(const struct mg_cgmap *m)
{
	return m->root[0] ? m->root : NULL;
}

const char *mg_cgmap_path(struct mg_cgmap *m, __u32 id, __u64 now_ns)
{
	struct slot *s = t_find(&m->ids, id, NULL);

	if (!s && m->ifd >= 0) {
		/* Made since the last poll? A read tells, cheaper than a lookup. */
		mg_cgmap_poll(m);
		s = t_find(&m->ids, id, NULL);
	}
	if (s) {
		touch(m, s->n);
		return s->n->path;
	}
	if (!m->root[0])
		return NULL;
	if (m->mntfd >= 0) {
		int ret = resolve(m, id);

		if (ret != -EPERM) {
			m->st.resolved += !ret;
			s = t_find(&m->ids, id, NULL);
			return s ? s->n->path : NULL;
		}
		/* Refused now (a capability dropped?): walks from now on. */
		close(m->mntfd);
		m->mntfd = -1;
	}
	if (now_ns - m->last_scan < MG_CGMAP_RESCAN_NS)
		return NULL;	/* a miss since the last walk: still a miss */
	rescan(m, now_ns);
	s = t_find(&m->ids, id, NULL);
	return s ? s->n->path : NULL;
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

bool mg_cgmap_job(struct mg_cgmap *m, __u32 id, __u64 now_ns,
		  struct mg_cgmap_job *out)
{
	struct slot *s;

	out->path = mg_cgmap_path(m, id, now_ns);
	if (!out->path)
		return false;
	s = t_find(&m->ids, id, NULL);
	out->slurm = s->n->slurm;
	out->series = s->n->series;
	out->step = s->n->step;
	return true;
}

void mg_cgmap_arm(struct mg_cgmap *m)
{
	m->armed = m->ifd >= 0;
}

__u32 mg_cgmap_series(struct mg_cgmap *m, __u32 id)
{
	struct slot *s = t_find(&m->ids, id, NULL);

	if (!s && m->armed) {
		mg_cgmap_poll(m);
		s = t_find(&m->ids, id, NULL);
	}
	if (!s)
		return id;
	/* Used: a busy task's entry is the last one dropped for the bounds. */
	touch(m, s->n);
	return s->n->series;
}

bool mg_cgmap_alive(struct mg_cgmap *m, __u32 id)
{
	struct slot *s = t_find(&m->ids, id, NULL);
	char full[2 * PATH_MAX];
	struct stat st;

	if (!s || s->n->gone)
		return false;
	full_path(m, s->n->path, full, sizeof(full));
	if (!stat(full, &st) && (__u32)st.st_ino == id)
		return true;
	set_gone(m, s->n);
	enforce(m, NULL);
	return false;
}

int mg_cgmap_fd(const struct mg_cgmap *m)
{
	return m->ifd;
}

/* One event of a watched directory dir. */
static void event(struct mg_cgmap *m, struct node *dir,
		  const struct inotify_event *ev)
{
	char sub[PATH_MAX];
	struct node *c;
	size_t len;

	if (ev->mask & (IN_DELETE_SELF | IN_IGNORED)) {
		/*
		 * The directory itself went (a file system that drops its
		 * links; cgroupfs tells the parent only).
		 */
		set_gone(m, dir);
		return;
	}
	if (!(ev->mask & IN_ISDIR) || !ev->len)
		return;
	len = snprintf(sub, sizeof(sub), "%s/%s",
		       strcmp(dir->path, "/") ? dir->path : "", ev->name);
	if (len >= sizeof(sub))
		return;
	if (ev->mask & IN_CREATE) {
		m->st.created++;
		walk(m, sub, 1);
	} else if (ev->mask & IN_DELETE) {
		c = live_at(m, sub, len, hash_of(m, sub, len));
		if (c)
			set_gone(m, c);
	}
}

void mg_cgmap_poll(struct mg_cgmap *m)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	if (m->ifd < 0)
		return;
	m->armed = false;
	m->st.polls++;
	while ((n = read(m->ifd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (p < buf + n) {
			const struct inotify_event *ev = (const void *)p;
			struct slot *w;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				rescan(m, m->last_scan);	/* events were lost */
				continue;
			}
			w = t_find(&m->wds, (__u32)ev->wd, NULL);
			if (w)
				event(m, w->n, ev);
		}
		enforce(m, NULL);
	}
}

void mg_cgmap_stats(const struct mg_cgmap *m, struct mg_cgmap_stats *st)
{
	*st = m->st;
	st->paths = m->ids.n;
	st->gone = m->gone.n;
	st->watches = m->wds.n;
	st->bytes = m->bytes;
	st->handles = m->mntfd >= 0;
}
