// SPDX-License-Identifier: GPL-2.0
/* 6.2: pre_doit takes the split op (struct genl_split_ops). */
#include <net/genetlink.h>
static int pre(const struct genl_split_ops *ops, struct sk_buff *skb, struct genl_info *info)
{
	return 0;
}

struct genl_family mg_probe = { .pre_doit = pre };
