# SPDX-License-Identifier: GPL-2.0
# libmagnet: record codec, trace files, printing, the sensor directory,
# escaping (JSON strings, text), small helpers (hex, UTF-8, the tools' fatal
# errors), cgroup paths and Slurm's jobs among them.
# Static only: every user binary is linked statically for the initramfs.
LIBMAGNET_SRCS := lib/record.c lib/probes.c lib/stats.c lib/trace.c lib/print.c lib/pcap.c \
	lib/sensor.c lib/util.c lib/escape.c lib/tasks.c lib/cgmap.c lib/flow.c lib/seqtrack.c lib/reorder.c \
	lib/slurm.c
LIBMAGNET_OBJS := $(LIBMAGNET_SRCS:%.c=$(BUILD)/%.o)
LIBMAGNET := $(BUILD)/libmagnet.a

$(LIBMAGNET): $(LIBMAGNET_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

USER_BINS += $(LIBMAGNET)

# libmagnetctl (lib/ctl/): the netlink client and magnet-ctl's command
# engine, shared by magnet-ctl and magnetd.
include lib/ctl/build.mk
