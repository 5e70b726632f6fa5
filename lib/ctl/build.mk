# SPDX-License-Identifier: GPL-2.0
# libmagnetctl: magnet's generic-netlink client and magnet-ctl's command
# engine (lib/ctl/, docs/magnet-ctl.md), shared by the magnet-ctl program
# (tools/ctl/main.c, tools/ctl.mk) and magnetd, which runs the same command
# lines in-process with ctl_exec() (lib/ctl/ctl.h). Included from
# lib/build.mk. A user:
#     $(X): CFLAGS += $(CTL_CFLAGS)          (for #include "ctl.h")
#     link with $(CTL_LIB) $(LIBMAGNET) $(CTL_LIBS) (after its own objects)
CTL_LIB_SRCS := $(addprefix lib/ctl/, exec.c args.c nl.c print.c \
	probe.c sets.c filter.c sample.c buffer.c stats.c monitor.c)
CTL_LIB_OBJS := $(CTL_LIB_SRCS:%.c=$(BUILD)/%.o)
CTL_LIB := $(BUILD)/lib/ctl/libmagnetctl.a

NL_CFLAGS := $(or $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null),\
	-I/usr/include/libnl3)
NL_LIBS := $(or $(shell pkg-config --static --libs libnl-genl-3.0 2>/dev/null),\
	-lnl-genl-3 -lnl-3 -lpthread)

# Link flags of CTL_LIB's dependencies (static: libnl's own deps spelled out).
CTL_LIBS := $(NL_LIBS)
CTL_CFLAGS := -Ilib/ctl

$(CTL_LIB_OBJS): CFLAGS += $(NL_CFLAGS)

# Rebuilt from scratch: ar would keep members of objects since removed.
$(CTL_LIB): $(CTL_LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

USER_BINS += $(CTL_LIB)
