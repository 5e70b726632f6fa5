// SPDX-License-Identifier: GPL-2.0
/*
 * Thread comm and cgroup lookups with a fixed-size cache; see procinfo.h.
 *
 * Threads: a direct-mapped table (pid % capacity): a collision replaces the
 * older thread, which costs a lookup again later and nothing else. Cgroup
 * paths: a small table of id -> path, replaced round-robin when full; a
 * path missing from it only makes a label "-".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "procinfo.h"

#define CGROUPS		1024

struct proc_slot {
	struct mg_proc p;
	__u64 when;		/* ns of the lookup; 0: empty */
};

struct cgroup_slot {
	__u64 id;
	char path[MG_PROCINFO_PATH_MAX];
};

struct mg_procinfo {
	unsigned int mask;
	struct proc_slot *slots;
	struct cgroup_slot *cgroups;
	unsigned int ncg, next_cg;
	char proc_root[PATH_MAX];
	char cg_root[PATH_MAX];		/* "" for none */
};

/* The cgroup2 mount from mountinfo: field 5 is the mount point. */
static void find_cgroup2(struct mg_procinfo *p)
{
	char path[PATH_MAX + 32], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/self/mountinfo", p->proc_root);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], *sep = strstr(line, " - cgroup2 ");

		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
			snprintf(p->cg_root, sizeof(p->cg_root), "%s", mnt);
			break;
		}
	}
	fclose(f);
}

int mg_procinfo_create(unsigned int capacity, const char *proc_root,
		       const char *cgroup_root, struct mg_procinfo **out)
{
	struct mg_procinfo *p;

	if (!capacity || (capacity & (capacity - 1)))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->slots = calloc(capacity, sizeof(*p->slots));
	p->cgroups = calloc(CGROUPS, sizeof(*p->cgroups));
	if (!p->slots || !p->cgroups) {
		mg_procinfo_free(p);
		return -ENOMEM;
	}
	p->mask = capacity - 1;
	snprintf(p->proc_root, sizeof(p->proc_root), "%s",
		 proc_root ? proc_root : "/proc");
	if (cgroup_root)
		snprintf(p->cg_root, sizeof(p->cg_root), "%s", cgroup_root);
	else
		find_cgroup2(p);
	*out = p;
	return 0;
}

void mg_procinfo_free(struct mg_procinfo *p)
{
	if (!p)
		return;
	free(p->slots);
	free(p->cgroups);
	free(p);
}

static ssize_t read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static void remember_cgroup(struct mg_procinfo *p, __u64 id, const char *path)
{
	struct cgroup_slot *s;
	unsigned int i;

	for (i = 0; i < p->ncg; i++)
		if (p->cgroups[i].id == id)
			return;
	if (p->ncg < CGROUPS) {
		s = &p->cgroups[p->ncg++];
	} else {
		s = &p->cgroups[p->next_cg];
		p->next_cg = (p->next_cg + 1) % CGROUPS;
	}
	s->id = id;
	snprintf(s->path, sizeof(s->path), "%s", path);
}

/* "0::/path" of a cgroup2 (or hybrid) hierarchy; its directory's inode. */
static __u64 lookup_cgroup(struct mg_procinfo *p, __u32 pid)
{
	char path[PATH_MAX + 64], buf[4096], *line, *save;
	__u64 id = 0;

	if (!p->cg_root[0])
		return 0;
	snprintf(path, sizeof(path), "%s/%u/cgroup", p->proc_root, pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char dir[PATH_MAX * 2];
		struct stat st;

		if (strncmp(line, "0::", 3))
			continue;
		snprintf(dir, sizeof(dir), "%s%s", p->cg_root, line + 3);
		if (!stat(dir, &st)) {
			id = st.st_ino;
			remember_cgroup(p, id, line + 3);
		}
		break;
	}
	return id;
}

const struct mg_proc *mg_procinfo_get(struct mg_procinfo *p, __u32 pid,
				      __u64 now_ns)
{
	struct proc_slot *s = &p->slots[pid & p->mask];
	char path[PATH_MAX + 64], comm[64];
	ssize_t n;

	if (s->when && s->p.pid == pid && now_ns - s->when < MG_PROCINFO_TTL_NS)
		return &s->p;
	memset(s, 0, sizeof(*s));
	s->p.pid = pid;
	s->when = now_ns ? now_ns : 1;
	snprintf(path, sizeof(path), "%s/%u/comm", p->proc_root, pid);
	n = read_small(path, comm, sizeof(comm));
	if (n < 0)
		return &s->p;		/* gone: alive false, cached as such */
	if (n && comm[n - 1] == '\n')
		comm[--n] = '\0';
	snprintf(s->p.comm, sizeof(s->p.comm), "%.15s", comm);
	s->p.alive = true;
	s->p.cgroup = lookup_cgroup(p, pid);
	return &s->p;
}

const char *mg_procinfo_cgroup_path(const struct mg_procinfo *p, __u64 id)
{
	unsigned int i;

	for (i = 0; i < p->ncg; i++)
		if (p->cgroups[i].id == id)
			return p->cgroups[i].path;
	return NULL;
}

const char *mg_procinfo_cgroup_root(const struct mg_procinfo *p)
{
	return p->cg_root[0] ? p->cg_root : NULL;
}
