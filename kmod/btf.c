// SPDX-License-Identifier: GPL-2.0
/*
 * Parameter types of kernel functions, from the kernel's own BTF.
 *
 * Named handlers read structures through a function's arguments; the only
 * authority on what a function takes is the BTF the kernel was built with.
 * Modules cannot reach the kernel's parsed copy (6.1 exports neither
 * btf_vmlinux nor bpf_get_btf_vmlinux(), and btf_type_by_id() needs one),
 * so this reads the documented ABI file, /sys/kernel/btf/vmlinux, with
 * kernel_read_file_from_path_initns(): the path is resolved from init's
 * root, as the firmware loader resolves its files, never in the caller's
 * mount namespace, where a container's /sys or a file mounted over it
 * could claim that any function takes a struct sock *. It is read when a
 * probe is added (a few megabytes, freed at once), and walked for just
 * what is needed: the FUNC of that name, its FUNC_PROTO, and each
 * parameter's type through typedefs and qualifiers.
 * The format is include/uapi/linux/btf.h; every offset is checked against
 * the section it points into, as the file is only trusted to be BTF.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/btf.h>
#include <linux/kernel_read_file.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "btf.h"

#define MG_BTF_PATH	"/sys/kernel/btf/vmlinux"
#define MG_BTF_MAX	(64U << 20)	/* far above any vmlinux BTF */
#define MG_BTF_DEPTH	16		/* typedef/qualifier chains */

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

static void *mg_btf_read(size_t *size)
{
	void *buf = NULL;
	ssize_t len;

	/* Whole or not at all; LSMs see the read as READING_UNKNOWN. */
	len = kernel_read_file_from_path_initns(MG_BTF_PATH, 0, &buf, MG_BTF_MAX, NULL,
						READING_UNKNOWN);
	if (len == -ENOENT)
		return ERR_PTR(-EOPNOTSUPP);	/* a kernel built without BTF */
	if (len < 0)
		return ERR_PTR(len == -EFBIG ? -EINVAL : len);	/* -EINVAL: not a file, or empty */
	if (len < sizeof(struct btf_header)) {
		vfree(buf);
		return ERR_PTR(-EINVAL);
	}
	*size = len;
	return buf;
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

static int mg_btf_load(struct mg_btf *b)
{
	const struct btf_header *h;
	u32 pos, cap = 1 << 16;
	u32 *off;

	memset(b, 0, sizeof(*b));
	b->data = mg_btf_read(&b->size);
	if (IS_ERR(b->data))
		return PTR_ERR(b->data);
	h = b->data;
	if (h->magic != BTF_MAGIC || h->version != BTF_VERSION ||
	    h->hdr_len < sizeof(*h) || h->hdr_len > b->size ||
	    (u64)h->type_off + h->type_len > b->size - h->hdr_len ||
	    (u64)h->str_off + h->str_len > b->size - h->hdr_len || !h->str_len)
		goto bad;
	b->types = b->data + h->hdr_len + h->type_off;
	b->types_len = h->type_len;
	b->strs = b->data + h->hdr_len + h->str_off;
	b->strs_len = h->str_len;
	if (b->strs[b->strs_len - 1])
		goto bad;	/* every name must end inside the section */
	b->off = kvmalloc_array(cap, sizeof(u32), GFP_KERNEL);
	if (!b->off)
		goto nomem;
	b->n = 1;		/* id 0 is void */
	for (pos = 0; pos < b->types_len;) {
		const struct btf_type *t = b->types + pos;
		long extra;

		if (b->types_len - pos < sizeof(*t))
			goto bad;
		extra = mg_btf_extra(t);
		if (extra < 0 || extra > b->types_len - pos - sizeof(*t))
			goto bad;
		if (b->n == cap) {
			cap *= 2;
			off = kvrealloc(b->off, cap / 2 * sizeof(u32), cap * sizeof(u32),
					GFP_KERNEL);
			if (!off)
				goto nomem;
			b->off = off;
		}
		b->off[b->n++] = pos;
		pos += sizeof(*t) + extra;
	}
	return 0;
bad:
	pr_warn_once("%s is not BTF this module understands\n", MG_BTF_PATH);
	kvfree(b->off);
	vfree(b->data);
	return -EINVAL;
nomem:
	kvfree(b->off);
	vfree(b->data);
	return -ENOMEM;
}

static void mg_btf_free(struct mg_btf *b)
{
	kvfree(b->off);
	vfree(b->data);
}

static const struct btf_type *mg_btf_type(const struct mg_btf *b, u32 id)
{
	return id && id < b->n ? b->types + b->off[id] : NULL;
}

static const char *mg_btf_name(const struct mg_btf *b, u32 off)
{
	return off < b->strs_len ? b->strs + off : "";
}

/* Through typedefs, qualifiers and type tags. */
static const struct btf_type *mg_btf_strip(const struct mg_btf *b, u32 id)
{
	const struct btf_type *t = mg_btf_type(b, id);
	int depth;

	for (depth = 0; t && depth < MG_BTF_DEPTH; depth++) {
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE: case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT: case BTF_KIND_TYPE_TAG:
			t = mg_btf_type(b, t->type);
			continue;
		}
		return t;
	}
	return NULL;
}

static void mg_btf_describe(const struct mg_btf *b, u32 id, struct mg_btf_param *par)
{
	const struct btf_type *t = mg_btf_strip(b, id);

	memset(par, 0, sizeof(*par));
	par->kind = MG_BTF_OTHER;
	if (!t)
		return;
	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT: case BTF_KIND_ENUM: case BTF_KIND_ENUM64:
		par->kind = MG_BTF_INT;
		return;
	case BTF_KIND_PTR:
		t = mg_btf_strip(b, t->type);
		if (t && (BTF_INFO_KIND(t->info) == BTF_KIND_STRUCT ||
			  BTF_INFO_KIND(t->info) == BTF_KIND_UNION ||
			  BTF_INFO_KIND(t->info) == BTF_KIND_FWD)) {
			par->kind = MG_BTF_PTR_STRUCT;
			strscpy(par->struct_name, mg_btf_name(b, t->name_off),
				sizeof(par->struct_name));
		}
		return;
	}
}

int mg_btf_func_params(const char *func, struct mg_btf_param *par, unsigned int max)
{
	struct mg_btf_param seen[8];
	int found = -ENOENT;
	struct mg_btf b;
	u32 id, i;
	int ret;

	ret = mg_btf_load(&b);
	if (ret)
		return ret;
	for (id = 1; id < b.n; id++) {
		const struct btf_type *t = mg_btf_type(&b, id), *proto;
		const struct btf_param *p;
		u32 vlen;

		if (BTF_INFO_KIND(t->info) != BTF_KIND_FUNC ||
		    strcmp(mg_btf_name(&b, t->name_off), func))
			continue;
		proto = mg_btf_type(&b, t->type);
		if (!proto || BTF_INFO_KIND(proto->info) != BTF_KIND_FUNC_PROTO)
			continue;
		vlen = BTF_INFO_VLEN(proto->info);
		p = (const struct btf_param *)(proto + 1);
		/* A static function may exist in several files: all must agree. */
		for (i = 0; i < vlen && i < ARRAY_SIZE(seen); i++) {
			struct mg_btf_param d;

			mg_btf_describe(&b, p[i].type, &d);
			if (found >= 0 && (i >= found || memcmp(&d, &seen[i], sizeof(d)))) {
				found = -ENOTUNIQ;
				goto out;
			}
			seen[i] = d;
		}
		if (found >= 0 && vlen != found) {
			found = -ENOTUNIQ;
			goto out;
		}
		found = vlen;
	}
	for (i = 0; found > 0 && i < found && i < max && i < ARRAY_SIZE(seen); i++)
		par[i] = seen[i];
out:
	mg_btf_free(&b);
	return found;
}
