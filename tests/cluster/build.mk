# SPDX-License-Identifier: GPL-2.0
#
# A Slurm cluster of QEMU nodes with magnet on each (docs/cluster.md):
#
#   make cluster          boot CLUSTER_NODES nodes (2 to 4, default 2),
#                         gmetad and Prometheus here, print where to
#                         look, run jobs until ^C, then stop it all
#   make cluster-check    the same as a test (tests/cluster/run --check)
CLUSTER_NODES ?= 2
export CLUSTER_NODES

cluster:
	$(Q)tools/bootstrap
	$(Q)$(MAKE) cluster-run

cluster-run: vm-guest-files
	$(Q)tests/cluster/run

cluster-check: vm-guest-files
	$(Q)tests/cluster/run --check

.PHONY: cluster cluster-run cluster-check
