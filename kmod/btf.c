// SPDX-License-Identifier: GPL-2.0
/*
 * Parameter types of kernel functions, from the kernel's own BTF.
 *
 * Named handlers read structures through a function's arguments; the only
 * authority on what a function takes is the BTF the kernel was built with.
 * Modules cannot reach the kernel's parsed copy (6.1 exports neither
 * btf_vmlinux nor bpf_get_btf_vmlinux(), and btf_type_by_id() needs one),
 * so this reads the documented ABI file, /sys/kernel/btf/vmlinux. The path
 * is resolved from init's root, as the firmware loader resolves its files,
 * never in the caller's mount namespace, where a container's /sys or a
 * file mounted over it could claim that any function takes a struct sock *.
 * Not with kernel_read_file(): that asks the LSMs about the read by a
 * kernel_read_file_id, which has none for this file, and IPE (6.12) warns
 * on READING_UNKNOWN.
 *
 * The file is megabytes and PROBE_ADD runs under genl_mutex, which every
 * generic netlink family shares. So the first lookup reads and walks it
 * once, under mg_btf_lock, and keeps only what lookups need: the functions
 * in a sorted array, their parameters already described (on Debian's 6.1,
 * 44134 functions in 1.8 MB of the 4.3 MB file, kept until unload). The
 * file's copy is freed at once, and every later lookup is a binary search.
 * A failed read is not remembered: the next lookup tries again.
 *
 * The format is include/uapi/linux/btf.h; every offset is checked against
 * the section it points into, as the file is only trusted to be BTF.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/fs_struct.h>
#include <linux/jhash.h>
#include <linux/kallsyms.h>
#include <linux/sched/task.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "btf.h"
#include "compat.h"	/* and linux/btf.h, with what newer kernels add */

#define MG_BTF_PATH	"/sys/kernel/btf/vmlinux"
#define MG_BTF_MAX	(64U << 20)	/* far above any vmlinux BTF */
#define MG_BTF_DEPTH	16		/* typedef/qualifier chains */
#define MG_BTF_PARAMS	8		/* parameters described per function */
#define MG_BTF_TAG_LEN	(sizeof_field(struct mg_btf_param, struct_name) - 1)

/* The file, while the index is built from it. */
struct mg_btf {
	void *data;
	size_t size;
	const void *types;	/* type section */
	u32 types_len;
	const char *strs;	/* string section */
	u32 strs_len;
	u32 *off;		/* type id -> offset in the type section */
	u32 n;			/* ids 1..n - 1 */
};

/*
 * A function of the index, in mg_btf_order(). Functions of one name (static
 * ones in several files) are one entry, ambiguous if they differ in what is
 * reported.
 */
struct mg_btf_fn {
	u32 name;		/* offset in names */
	u32 par;		/* its first described parameter in pars */
	u16 vlen;		/* its parameter count */
	bool ambiguous;
};

/* A described parameter: its kind, and a struct pointer's tag in names. */
#define MG_BTF_PAR(kind, tag)	((u32)(kind) << 30 | (tag))
#define MG_BTF_PAR_KIND(p)	((enum mg_btf_kind)((p) >> 30))
#define MG_BTF_PAR_TAG(p)	((p) & (BIT(30) - 1))
/* An integer's "tag": its size, and whether it is signed. */
static inline u32 mg_btf_int_tag(const struct mg_btf_param *par)
{
	return par->int_size | par->int_signed << 8;
}

struct mg_btf_index {
	struct mg_btf_fn *fns;	/* sorted by mg_btf_order() */
	u32 nfns;
	u32 *pars;		/* MG_BTF_PAR() */
	u32 npars;
	char *names;		/* "" at 0, function names, struct tags */
	u32 names_len;		/* < MG_BTF_MAX: tags fit MG_BTF_PAR() */
};

/*
 * The FUNCs that have a FUNC_PROTO, and the order of the index: by a hash
 * of the name, then the name, so that sorting and searching mostly compare
 * integers, not strings scattered over megabytes.
 */
struct mg_btf_key {
	u32 hash;
	u32 id;
};

/* The index under construction: too big for the stack. */
struct mg_btf_build {
	struct mg_btf b;
	struct mg_btf_key *keys;
	u32 nkeys;
	u32 *tag_off;		/* struct type id -> its tag in names, 0: not yet */
	struct mg_btf_param first[MG_BTF_PARAMS], other[MG_BTF_PARAMS];
	u32 tags[MG_BTF_PARAMS], other_tags[MG_BTF_PARAMS];
};

static DEFINE_MUTEX(mg_btf_lock);
static struct mg_btf_index *mg_btf_cache;	/* mg_btf_lock; NULL: not read */

/* Whole or not at all. */
static int mg_btf_read_file(struct file *file, struct mg_btf *b)
{
	loff_t size = i_size_read(file_inode(file)), pos = 0;
	ssize_t n;
	void *buf;

	if (!S_ISREG(file_inode(file)->i_mode) || size <= 0 || size > MG_BTF_MAX)
		return -EINVAL;		/* not a file, empty or too big */
	buf = vmalloc(size);
	if (!buf)
		return -ENOMEM;
	while (pos < size) {
		n = kernel_read(file, buf + pos, size - pos, &pos);
		if (n <= 0) {
			vfree(buf);
			return n ? n : -EINVAL;		/* shorter than it said */
		}
	}
	b->data = buf;
	b->size = size;
	return 0;
}

static int mg_btf_read(struct mg_btf *b)
{
	struct file *file;
	struct path root;
	int ret;

	task_lock(&init_task);
	get_fs_root(init_task.fs, &root);
	task_unlock(&init_task);
	file = mg_file_open_root(&root, MG_BTF_PATH, O_RDONLY | O_LARGEFILE, 0);
	path_put(&root);
	if (IS_ERR(file))
		return PTR_ERR(file) == -ENOENT ? -EOPNOTSUPP : PTR_ERR(file);	/* no BTF */
	ret = mg_btf_read_file(file, b);
	fput(file);
	return ret;
}

/* Bytes that follow struct btf_type for each kind, or -1 if unknown. */
static long mg_btf_extra(const struct btf_type *t)
{
	u32 vlen = BTF_INFO_VLEN(t->info);

	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
		return sizeof(u32);
	case BTF_KIND_PTR: case BTF_KIND_FWD: case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE: case BTF_KIND_CONST: case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC: case BTF_KIND_FLOAT: case BTF_KIND_TYPE_TAG:
		return 0;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT: case BTF_KIND_UNION:
		return (long)vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * sizeof(struct btf_enum);
	case BTF_KIND_ENUM64:
		return (long)vlen * sizeof(struct btf_enum64);
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * sizeof(struct btf_param);
	case BTF_KIND_VAR:
		return sizeof(struct btf_var);
	case BTF_KIND_DATASEC:
		return (long)vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_DECL_TAG:
		return sizeof(struct btf_decl_tag);
	}
	return -1;
}

static void mg_btf_free(struct mg_btf *b)
{
	kvfree(b->off);
	vfree(b->data);
}

static int mg_btf_load(struct mg_btf *b)
{
	const struct btf_header *h;
	u32 pos, cap = 1 << 16;
	u32 *off;
	int ret;

	memset(b, 0, sizeof(*b));
	ret = mg_btf_read(b);
	if (ret == -EINVAL)
		goto err_format;
	if (ret)
		return ret;
	h = b->data;
	if (b->size < sizeof(*h) ||
	    h->magic != BTF_MAGIC || h->version != BTF_VERSION ||
	    h->hdr_len < sizeof(*h) || h->hdr_len > b->size ||
	    (u64)h->type_off + h->type_len > b->size - h->hdr_len ||
	    (u64)h->str_off + h->str_len > b->size - h->hdr_len || !h->str_len)
		goto err_format;
	b->types = b->data + h->hdr_len + h->type_off;
	b->types_len = h->type_len;
	b->strs = b->data + h->hdr_len + h->str_off;
	b->strs_len = h->str_len;
	if (b->strs[b->strs_len - 1])
		goto err_format;	/* every name must end inside the section */
	b->off = kvmalloc_array(cap, sizeof(u32), GFP_KERNEL);
	if (!b->off)
		goto err_alloc;
	b->n = 1;		/* id 0 is void */
	for (pos = 0; pos < b->types_len;) {
		const struct btf_type *t = b->types + pos;
		long extra;

		if (b->types_len - pos < sizeof(*t))
			goto err_format;
		extra = mg_btf_extra(t);
		if (extra < 0 || extra > b->types_len - pos - sizeof(*t))
			goto err_format;
		if (b->n == cap) {
			cap *= 2;
			off = mg_kvrealloc(b->off, cap / 2 * sizeof(u32), cap * sizeof(u32),
					   GFP_KERNEL);
			if (!off)
				goto err_alloc;
			b->off = off;
		}
		b->off[b->n++] = pos;
		pos += sizeof(*t) + extra;
	}
	return 0;

err_format:
	pr_warn_once("%s is not BTF this module understands\n", MG_BTF_PATH);
	mg_btf_free(b);
	return -EINVAL;
err_alloc:
	mg_btf_free(b);
	return -ENOMEM;
}

static const struct btf_type *mg_btf_type(const struct mg_btf *b, u32 id)
{
	return id && id < b->n ? b->types + b->off[id] : NULL;
}

static const char *mg_btf_name(const struct mg_btf *b, u32 off)
{
	return off < b->strs_len ? b->strs + off : "";
}

/* Through typedefs, qualifiers and type tags: the id beneath, 0 if none. */
static u32 mg_btf_strip(const struct mg_btf *b, u32 id)
{
	const struct btf_type *t;
	int depth;

	for (depth = 0; depth < MG_BTF_DEPTH; depth++) {
		t = mg_btf_type(b, id);
		if (!t)
			return 0;
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE: case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT: case BTF_KIND_TYPE_TAG:
			id = t->type;
			continue;
		}
		return id;
	}
	return 0;
}

/* Type @id as a parameter; for a struct pointer, returns the struct's id. */
static u32 mg_btf_describe(const struct mg_btf *b, u32 id, struct mg_btf_param *par)
{
	const struct btf_type *t = mg_btf_type(b, mg_btf_strip(b, id));
	u32 tag;

	memset(par, 0, sizeof(*par));
	par->kind = MG_BTF_OTHER;
	if (!t)
		return 0;
	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
		par->kind = MG_BTF_INT;
		par->int_size = t->size;
		par->int_signed = BTF_INT_ENCODING(*(const u32 *)(t + 1)) & BTF_INT_SIGNED;
		return 0;
	case BTF_KIND_ENUM: case BTF_KIND_ENUM64:
		par->kind = MG_BTF_INT;
		par->int_size = t->size;
		return 0;
	case BTF_KIND_PTR:
		tag = mg_btf_strip(b, t->type);
		t = mg_btf_type(b, tag);
		if (t && (BTF_INFO_KIND(t->info) == BTF_KIND_STRUCT ||
			  BTF_INFO_KIND(t->info) == BTF_KIND_UNION ||
			  BTF_INFO_KIND(t->info) == BTF_KIND_FWD)) {
			par->kind = MG_BTF_PTR_STRUCT;
			strscpy(par->struct_name, mg_btf_name(b, t->name_off),
				sizeof(par->struct_name));
			return tag;
		}
		return 0;
	}
	return 0;
}

#define MG_BTF_TRACE_PREFIX	"btf_trace_"

/*
 * The FUNC_PROTO of FUNC @id, or of the typedef that names a tracepoint's
 * probe (typedef void (*btf_trace_EVENT)(void *__data, ...), which the
 * kernel's BTF has for every tracepoint under CONFIG_BPF_EVENTS); NULL if
 * @id is neither.
 */
static const struct btf_type *mg_btf_proto(const struct mg_btf *b, u32 id)
{
	const struct btf_type *t = mg_btf_type(b, id), *proto;

	if (!t)
		return NULL;
	if (BTF_INFO_KIND(t->info) == BTF_KIND_TYPEDEF) {
		if (strncmp(mg_btf_name(b, t->name_off), MG_BTF_TRACE_PREFIX,
			    sizeof(MG_BTF_TRACE_PREFIX) - 1))
			return NULL;
		t = mg_btf_type(b, t->type);
		if (!t || BTF_INFO_KIND(t->info) != BTF_KIND_PTR)
			return NULL;
	} else if (BTF_INFO_KIND(t->info) != BTF_KIND_FUNC) {
		return NULL;
	}
	proto = mg_btf_type(b, t->type);
	return proto && BTF_INFO_KIND(proto->info) == BTF_KIND_FUNC_PROTO ? proto : NULL;
}

static const char *mg_btf_func_name(const struct mg_btf *b, u32 id)
{
	return mg_btf_name(b, mg_btf_type(b, id)->name_off);
}

/* Describes the first MG_BTF_PARAMS parameters of FUNC @id; returns its count. */
static u32 mg_btf_func(const struct mg_btf *b, u32 id, struct mg_btf_param *par, u32 *tags)
{
	const struct btf_type *proto = mg_btf_proto(b, id);
	const struct btf_param *p = (const struct btf_param *)(proto + 1);
	u32 vlen = BTF_INFO_VLEN(proto->info), i;

	for (i = 0; i < vlen && i < MG_BTF_PARAMS; i++)
		tags[i] = mg_btf_describe(b, p[i].type, &par[i]);
	return vlen;
}

static u32 mg_btf_hash(const char *name)
{
	return jhash(name, strlen(name), 0);
}

static int mg_btf_order(u32 hash_a, const char *a, u32 hash_b, const char *b)
{
	if (hash_a != hash_b)
		return hash_a < hash_b ? -1 : 1;
	return strcmp(a, b);
}

static int mg_btf_cmp_key(const void *l, const void *r, const void *priv)
{
	const struct mg_btf_key *a = l, *b = r;

	return mg_btf_order(a->hash, mg_btf_func_name(priv, a->id),
			    b->hash, mg_btf_func_name(priv, b->id));
}

/* Where struct @tag's name is in names, copied there on first use. */
static u32 mg_btf_tag(struct mg_btf_build *w, struct mg_btf_index *ix, u32 tag,
		      u64 *names, bool fill)
{
	const char *name = mg_btf_name(&w->b, mg_btf_type(&w->b, tag)->name_off);
	size_t len = strnlen(name, MG_BTF_TAG_LEN);

	if (!len)
		return 0;	/* anonymous: the "" at 0 */
	if (!w->tag_off[tag]) {
		w->tag_off[tag] = *names;
		if (fill) {
			memcpy(ix->names + *names, name, len);
			ix->names[*names + len] = '\0';
		}
		*names += len + 1;
	}
	return w->tag_off[tag];
}

/*
 * What the sock and skb handlers go by: kind and struct tag. An integer's
 * width is for tracepoints, whose names are unique.
 */
static bool mg_btf_same(const struct mg_btf_param *a, const struct mg_btf_param *b, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (a[i].kind != b[i].kind || strcmp(a[i].struct_name, b[i].struct_name))
			return false;
	return true;
}

/*
 * One walk over the FUNCs in index order, merging those of one name as
 * mg_btf_func_params() has always answered for them: ambiguous unless
 * they agree in count and in what is reported. The first walk only
 * counts (@fill false), the second fills the index it sized.
 */
static int mg_btf_walk(struct mg_btf_build *w, struct mg_btf_index *ix, bool fill)
{
	const struct mg_btf *b = &w->b;
	u32 nfns = 0, npars = 0, i, j, k, n;
	u64 names = 1;

	for (i = 0; i < w->nkeys; i = j) {
		const struct mg_btf_key *key = &w->keys[i];
		const char *name = mg_btf_func_name(b, key->id);
		size_t len = strlen(name);
		bool ambiguous = false;
		u32 vlen;

		vlen = mg_btf_func(b, key->id, w->first, w->tags);
		n = min_t(u32, vlen, MG_BTF_PARAMS);
		for (j = i + 1; j < w->nkeys && w->keys[j].hash == key->hash &&
		     !strcmp(name, mg_btf_func_name(b, w->keys[j].id)); j++) {
			if (mg_btf_func(b, w->keys[j].id, w->other, w->other_tags) != vlen ||
			    !mg_btf_same(w->first, w->other, n))
				ambiguous = true;
		}
		if (fill) {
			ix->fns[nfns] = (struct mg_btf_fn){
				.name = names, .par = npars, .vlen = vlen, .ambiguous = ambiguous,
			};
			memcpy(ix->names + names, name, len + 1);
		}
		nfns++;
		names += len + 1;
		for (k = 0; k < n && !ambiguous; k++, npars++) {
			u32 tag = 0;

			if (w->first[k].kind == MG_BTF_PTR_STRUCT)
				tag = mg_btf_tag(w, ix, w->tags[k], &names, fill);
			else if (w->first[k].kind == MG_BTF_INT)
				tag = mg_btf_int_tag(&w->first[k]);
			if (fill)
				ix->pars[npars] = MG_BTF_PAR(w->first[k].kind, tag);
		}
		if (names >= MG_BTF_MAX)
			return -EINVAL;	/* only a crafted file gets here */
		cond_resched();
	}
	ix->nfns = nfns;
	ix->npars = npars;
	ix->names_len = names;
	return 0;
}

static void mg_btf_index_free(struct mg_btf_index *ix)
{
	if (!ix)
		return;
	kvfree(ix->fns);
	kvfree(ix->pars);
	kvfree(ix->names);
	kfree(ix);
}

/* The index of @w's FUNCs: sized by one walk, filled by another. */
static struct mg_btf_index *mg_btf_index_make(struct mg_btf_build *w)
{
	struct mg_btf_index *ix;
	int ret;

	ix = kzalloc(sizeof(*ix), GFP_KERNEL);
	if (!ix)
		return ERR_PTR(-ENOMEM);
	ret = mg_btf_walk(w, ix, false);
	if (ret) {
		pr_warn_once("%s is not BTF this module understands\n", MG_BTF_PATH);
		goto err_index;
	}
	ix->fns = kvmalloc_array(ix->nfns, sizeof(*ix->fns), GFP_KERNEL);
	ix->pars = kvmalloc_array(ix->npars, sizeof(*ix->pars), GFP_KERNEL);
	ix->names = kvmalloc(ix->names_len, GFP_KERNEL);
	if (!ix->fns || !ix->pars || !ix->names) {
		ret = -ENOMEM;
		goto err_index;
	}
	ix->names[0] = '\0';
	memset(w->tag_off, 0, w->b.n * sizeof(u32));
	mg_btf_walk(w, ix, true);	/* cannot fail where counting did not */
	return ix;

err_index:
	mg_btf_index_free(ix);
	return ERR_PTR(ret);
}

static struct mg_btf_index *mg_btf_index_build(void)
{
	u64 start = ktime_get_ns();
	struct mg_btf_build *w;
	struct mg_btf_index *ix;
	int ret;
	u32 id;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return ERR_PTR(-ENOMEM);
	ret = mg_btf_load(&w->b);
	if (ret) {
		ix = ERR_PTR(ret);
		goto err_load;
	}
	w->keys = kvmalloc_array(w->b.n, sizeof(*w->keys), GFP_KERNEL);
	w->tag_off = kvcalloc(w->b.n, sizeof(u32), GFP_KERNEL);
	if (!w->keys || !w->tag_off) {
		ix = ERR_PTR(-ENOMEM);
		goto out_work;
	}
	for (id = 1; id < w->b.n; id++) {
		if (mg_btf_proto(&w->b, id))
			w->keys[w->nkeys++] = (struct mg_btf_key){
				.hash = mg_btf_hash(mg_btf_func_name(&w->b, id)), .id = id,
			};
	}
	sort_r(w->keys, w->nkeys, sizeof(*w->keys), mg_btf_cmp_key, NULL, &w->b);
	ix = mg_btf_index_make(w);
	if (!IS_ERR(ix))
		pr_info("kernel BTF: %u functions and tracepoints indexed in %llu ms, %zu of %zu KiB kept\n",
			ix->nfns, div_u64(ktime_get_ns() - start, NSEC_PER_MSEC),
			(ix->nfns * sizeof(*ix->fns) + ix->npars * sizeof(*ix->pars) +
			 ix->names_len) >> 10, w->b.size >> 10);
out_work:	/* the file's copy and the work arrays go in any case */
	kvfree(w->tag_off);
	kvfree(w->keys);
	mg_btf_free(&w->b);
err_load:
	kfree(w);
	return ix;
}

/* Binary search: the index is immutable once built. */
static const struct mg_btf_fn *mg_btf_find(const struct mg_btf_index *ix, const char *func)
{
	u32 hash = mg_btf_hash(func), lo = 0, hi = ix->nfns;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		const char *name = ix->names + ix->fns[mid].name;
		int c = mg_btf_order(hash, func, mg_btf_hash(name), name);

		if (!c)
			return &ix->fns[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

int mg_btf_func_params(const char *func, struct mg_btf_param *par, unsigned int max)
{
	const struct mg_btf_fn *fn;
	struct mg_btf_index *ix;
	unsigned int i;
	int ret;

	mutex_lock(&mg_btf_lock);
	if (!mg_btf_cache) {
		ix = mg_btf_index_build();
		if (IS_ERR(ix)) {
			ret = PTR_ERR(ix);
			goto out;
		}
		mg_btf_cache = ix;
	}
	ix = mg_btf_cache;
	fn = mg_btf_find(ix, func);
	if (!fn) {
		ret = -ENOENT;
		goto out;
	}
	if (fn->ambiguous) {
		ret = -ENOTUNIQ;
		goto out;
	}
	for (i = 0; i < fn->vlen && i < max && i < MG_BTF_PARAMS; i++) {
		u32 p = ix->pars[fn->par + i];

		memset(&par[i], 0, sizeof(par[i]));
		par[i].kind = MG_BTF_PAR_KIND(p);
		if (par[i].kind == MG_BTF_PTR_STRUCT) {
			strscpy(par[i].struct_name, ix->names + MG_BTF_PAR_TAG(p),
				sizeof(par[i].struct_name));
		} else if (par[i].kind == MG_BTF_INT) {
			par[i].int_size = MG_BTF_PAR_TAG(p) & 0xff;
			par[i].int_signed = MG_BTF_PAR_TAG(p) >> 8;
		}
	}
	ret = fn->vlen;
out:
	mutex_unlock(&mg_btf_lock);
	return ret;
}

int mg_btf_tracepoint_params(const char *event, struct mg_btf_param *par, unsigned int max)
{
	struct mg_btf_param all[MG_BTF_PARAMS];
	char name[KSYM_NAME_LEN];
	int n;

	if (snprintf(name, sizeof(name), MG_BTF_TRACE_PREFIX "%s", event) >= sizeof(name))
		return -ENOENT;
	n = mg_btf_func_params(name, all, ARRAY_SIZE(all));
	if (n < 0)
		return n;
	if (n < 1)
		return -ENOENT;	/* not a probe's prototype */
	max = min3((unsigned int)n - 1, max, MG_BTF_PARAMS - 1U);
	memcpy(par, all + 1, max * sizeof(*par));
	return n - 1;
}

void mg_btf_exit(void)
{
	mutex_lock(&mg_btf_lock);
	mg_btf_index_free(mg_btf_cache);
	mg_btf_cache = NULL;
	mutex_unlock(&mg_btf_lock);
}
