// SPDX-License-Identifier: GPL-2.0
/* 5.15: sock_cgroup_data holds the cgroup pointer as such (no is_data bits). */
#include <net/sock.h>
struct cgroup *mg_probe(struct sock *sk) { return sk->sk_cgrp_data.cgroup; }
