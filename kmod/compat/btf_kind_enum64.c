// SPDX-License-Identifier: GPL-2.0
/* 6.0: BTF_KIND_ENUM64. */
#include <linux/btf.h>
int mg_probe = BTF_KIND_ENUM64 + sizeof(struct btf_enum64);
