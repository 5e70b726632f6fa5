// SPDX-License-Identifier: GPL-2.0
/* 5.16: BTF_KIND_DECL_TAG. */
#include <linux/btf.h>
int mg_probe = BTF_KIND_DECL_TAG + sizeof(struct btf_decl_tag);
