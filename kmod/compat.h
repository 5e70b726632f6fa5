/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kernels magnet builds for, in one place. Each
 * MG_HAVE_NAME comes of compiling compat/NAME.c against the kernel, or of
 * finding the symbol compat/NAME.sym names in its Module.symvers
 * (kmod/Kbuild; each file's opening comment says what it looks for, and
 * since when upstream has it), never of LINUX_VERSION_CODE: distributions
 * backport. Where only a name is missing, the kernel's name is given;
 * where a signature changed, an mg_ wrapper takes the newest form.
 */
#ifndef _MAGNET_COMPAT_H
#define _MAGNET_COMPAT_H

#include "compat-generated.h"

/* 5.10's linux/btf.h names these in prototypes without declaring them. */
struct bpf_prog;
struct seq_file;

#include <linux/bitmap.h>
#include <linux/btf.h>
#include <linux/fs.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <net/genetlink.h>
#include <net/sock.h>

#ifndef MG_HAVE_INTERRUPT_CONTEXT_LEVEL
/* 0 in a task, 1 in a softirq, 2 in a hard interrupt, 3 in an NMI. */
static __always_inline unsigned char interrupt_context_level(void)
{
	unsigned long pc = preempt_count();

	return !!(pc & NMI_MASK) + !!(pc & (NMI_MASK | HARDIRQ_MASK)) +
	       !!(pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET));
}
#endif

/*
 * BTF kinds newer than the kernel's headers: the format's own numbers, so
 * that btf.c walks any kernel's BTF (an older kernel's has none of them).
 */
#ifndef MG_HAVE_BTF_KIND_FLOAT
#define BTF_KIND_FLOAT		16
#endif
#ifndef MG_HAVE_BTF_KIND_DECL_TAG
#define BTF_KIND_DECL_TAG	17
struct btf_decl_tag {
	__s32 component_idx;
};
#endif
#ifndef MG_HAVE_BTF_KIND_TYPE_TAG
#define BTF_KIND_TYPE_TAG	18
#endif
#ifndef MG_HAVE_BTF_KIND_ENUM64
#define BTF_KIND_ENUM64		19
struct btf_enum64 {
	__u32 name_off;
	__u32 val_lo32;
	__u32 val_hi32;
};
#endif

static inline void mg_ki_complete(struct kiocb *iocb, long res)
{
#ifdef MG_HAVE_KI_COMPLETE_RES
	iocb->ki_complete(iocb, res);
#else
	iocb->ki_complete(iocb, res, 0);
#endif
}

#ifndef MG_HAVE_BITMAP_ARR64
static inline void bitmap_to_arr64(u64 *buf, const unsigned long *bitmap, unsigned int nbits)
{
	unsigned int i;

	memset(buf, 0, DIV_ROUND_UP(nbits, 64) * sizeof(u64));
	for (i = 0; i < nbits; i++)
		if (test_bit(i, bitmap))
			buf[i / 64] |= 1ULL << (i % 64);
}

static inline void bitmap_from_arr64(unsigned long *bitmap, const u64 *buf, unsigned int nbits)
{
	unsigned int i;

	bitmap_zero(bitmap, nbits);
	for (i = 0; i < nbits; i++)
		if (buf[i / 64] & (1ULL << (i % 64)))
			__set_bit(i, bitmap);
}
#endif

/*
 * An ftrace callback's last argument (struct mg_fregs), and the argument
 * registers in it.
 * Before 5.11 it was the pt_regs themselves, and ftrace guarded a callback
 * against recursion (disabling preemption) unless it said it did so
 * itself (FTRACE_OPS_FL_RECURSION_SAFE, which fentry does not say there).
 */
#ifdef MG_HAVE_FTRACE_REGS
#include <linux/trace_recursion.h>
#define mg_fregs		ftrace_regs
#ifdef MG_HAVE_ARCH_FTRACE_REGS
#define mg_fregs_args(fregs)	(&arch_ftrace_regs(fregs)->regs)
#else
#define mg_fregs_args(fregs)	(&(fregs)->regs)
#endif
#define mg_fregs_full(fregs)	ftrace_get_regs(fregs)
#else
#define mg_fregs		pt_regs
#define mg_fregs_args(regs)	(regs)
#define mg_fregs_full(regs)	(regs)
static __always_inline int ftrace_test_recursion_trylock(unsigned long ip, unsigned long pip)
{
	return 0;
}

static __always_inline void ftrace_test_recursion_unlock(int bit)
{
}
#endif

/*
 * Frees an ftrace_ops' filter (after unregistering). Before 5.19 there is
 * no export for it, but an empty filter replaces the hash with the shared
 * empty one and frees the old (ftrace_hash_move()).
 */
static inline void mg_ftrace_free_filter(struct ftrace_ops *ops)
{
#ifdef MG_HAVE_FTRACE_FREE_FILTER
	ftrace_free_filter(ops);
#else
	ftrace_set_filter(ops, NULL, 0, 1);
#endif
}

#ifndef MG_HAVE_GET_KRETPROBE
static inline struct kretprobe *get_kretprobe(struct kretprobe_instance *ri)
{
	return ri->rp;
}
#endif

/* The cgroup a full socket was made in, read without faulting; NULL if none. */
static inline struct cgroup *mg_sock_cgroup_nofault(const struct sock *sk)
{
#ifdef MG_HAVE_SOCK_CGROUP_DATA_CGROUP
	struct cgroup *cgrp;

	if (get_kernel_nofault(cgrp, &sk->sk_cgrp_data.cgroup))
		return NULL;
	return cgrp;
#else
	u64 val;

	/*
	 * Before 5.15 the pointer shares its word with cgroup v1's net_cls
	 * and netprio data: either low bit set means there is no pointer
	 * (the root cgroup), as in that kernel's sock_cgroup_ptr().
	 */
	if (get_kernel_nofault(val, &sk->sk_cgrp_data.val) || (val & 3))
		return NULL;
	return (struct cgroup *)(unsigned long)val;
#endif
}

/* Grows a kvmalloc()ed buffer from old_size to new_size bytes. */
static inline void *mg_kvrealloc(void *p, size_t old_size, size_t new_size, gfp_t flags)
{
#if defined(MG_HAVE_KVREALLOC_SIZE)
	return kvrealloc(p, new_size, flags);
#elif defined(MG_HAVE_KVREALLOC)
	return kvrealloc(p, old_size, new_size, flags);
#else
	void *n = kvmalloc(new_size, flags);

	if (n) {
		memcpy(n, p, min(old_size, new_size));
		kvfree(p);
	}
	return n;
#endif
}

#ifndef MG_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* Opens a path from a given root: file_open_root() takes a struct path since 5.12. */
static inline struct file *mg_file_open_root(const struct path *root, const char *name,
					     int flags, umode_t mode)
{
#ifdef MG_HAVE_FILE_OPEN_ROOT_PATH
	return file_open_root(root, name, flags, mode);
#else
	return file_open_root(root->dentry, root->mnt, name, flags, mode);
#endif
}

/* A NULL llseek refuses seeking (ESPIPE) where no_llseek() is gone. */
#ifdef MG_HAVE_NO_LLSEEK
#define MG_NO_LLSEEK	no_llseek
#else
#define MG_NO_LLSEEK	NULL
#endif

/* The device a struct class's devnode() is given: const since 6.2. */
#ifdef MG_HAVE_CLASS_DEVNODE_CONST
#define MG_DEVNODE_CONST	const
#else
#define MG_DEVNODE_CONST
#endif

/* pre_doit's first argument (struct mg_genl_op): the split op since 6.2. */
#ifdef MG_HAVE_GENL_SPLIT_OPS
#define mg_genl_op	genl_split_ops
#else
#define mg_genl_op	genl_ops
#endif

/* A task's state bits (TASK_INTERRUPTIBLE...); 0: runnable. */
static __always_inline unsigned int mg_task_state(const struct task_struct *t)
{
#ifdef MG_HAVE_TASK_STRUCT___STATE
	return READ_ONCE(t->__state);
#else
	return READ_ONCE(t->state);
#endif
}

#endif /* _MAGNET_COMPAT_H */
