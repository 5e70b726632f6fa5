/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_BTF_H
#define _MAGNET_BTF_H

enum mg_btf_kind {
	MG_BTF_OTHER,
	MG_BTF_INT,		/* an integer or enum, through typedefs */
	MG_BTF_PTR_STRUCT,	/* a pointer to a struct or union */
};

struct mg_btf_param {
	enum mg_btf_kind kind;
	u8 int_size;		/* MG_BTF_INT: its bytes (1, 2, 4, 8) */
	bool int_signed;	/* MG_BTF_INT: sign-extended when narrower */
	char struct_name[32];	/* MG_BTF_PTR_STRUCT: its tag, truncated */
};

/*
 * The parameters of kernel function @func per the kernel's BTF: fills up to
 * @max entries and returns the function's parameter count. -EOPNOTSUPP: the
 * kernel has no BTF; -ENOENT: no function of that name in it; -ENOTUNIQ:
 * several, with parameters that differ in what is reported. Sleeps; the
 * first call reads the kernel's BTF, later ones only search what it kept.
 */
int mg_btf_func_params(const char *func, struct mg_btf_param *par, unsigned int max);

/*
 * The arguments of tracepoint @event (sched_switch: no subsystem), from
 * the btf_trace_EVENT typedef of kernels with CONFIG_BPF_EVENTS: as
 * mg_btf_func_params(), the probe's leading void *__data left out.
 */
int mg_btf_tracepoint_params(const char *event, struct mg_btf_param *par, unsigned int max);

/* Frees what mg_btf_func_params() kept; no call may run or follow. */
void mg_btf_exit(void);

#endif /* _MAGNET_BTF_H */
