# SPDX-License-Identifier: GPL-2.0
# magnet-ctl: the generic-netlink control tool (tools/ctl/, docs/magnet-ctl.md),
# linked statically with libnl-genl-3, libnl-3 and libmagnet; and its unit
# test.
#
# Everything but main.o is libmagnetctl.a, so that magnetd runs the same
# command lines in-process with ctl_exec() (tools/ctl/ctl.h). A user:
#     $(X): CFLAGS += $(CTL_CFLAGS)          (for #include "ctl.h")
#     link with $(CTL_LIB) $(LIBMAGNET) $(CTL_LIBS) (after its own objects)
CTL_SRCS := $(addprefix tools/ctl/, main.c exec.c args.c nl.c print.c \
	probe.c filter.c sample.c buffer.c stats.c monitor.c)
CTL_OBJS := $(CTL_SRCS:%.c=$(BUILD)/%.o)
CTL_LIB_OBJS := $(filter-out $(BUILD)/tools/ctl/main.o,$(CTL_OBJS))
CTL_LIB := $(BUILD)/tools/ctl/libmagnetctl.a
MAGNET_CTL := $(BUILD)/tools/magnet-ctl

NL_CFLAGS := $(or $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null),\
	-I/usr/include/libnl3)
NL_LIBS := $(or $(shell pkg-config --static --libs libnl-genl-3.0 2>/dev/null),\
	-lnl-genl-3 -lnl-3 -lpthread)

# Link flags of CTL_LIB's dependencies (static: libnl's own deps spelled out).
CTL_LIBS := $(NL_LIBS)
CTL_CFLAGS := -Itools/ctl

$(CTL_OBJS): CFLAGS += $(NL_CFLAGS)

# Rebuilt from scratch: ar would keep members of objects since removed.
$(CTL_LIB): $(CTL_LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

# Linked through the library, so that it is known to be complete.
$(MAGNET_CTL): $(BUILD)/tools/ctl/main.o $(CTL_LIB) $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CTL_LIBS)

USER_BINS += $(MAGNET_CTL) $(CTL_LIB)
GUEST_FILES += $(MAGNET_CTL):/magnet/bin/magnet-ctl

# The unit test drives the whole command line through main.c's main(),
# renamed so that Check's runner can be the program's main; ctl_exec()'s
# socket is the test's fake kernel through --wrap (see test_ctl.c).
CTL_TEST_MAIN := $(BUILD)/tests/unit/ctl_main.o
$(CTL_TEST_MAIN): tools/ctl/main.c | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(NL_CFLAGS) -Dmain=magnet_ctl_main -MMD -MP -c -o $@ $<

$(BUILD)/tests/unit/test_ctl.o: CFLAGS += $(NL_CFLAGS) -Itools/ctl

$(BUILD)/tests/unit/test_ctl: $(BUILD)/tests/unit/test_ctl.o $(CTL_TEST_MAIN) \
			      $(CTL_LIB) $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CTL_LIBS) $(CHECK_LIBS) \
		-Wl,--wrap=ctl_nl_open,--wrap=ctl_nl_close

UNIT_TESTS += $(BUILD)/tests/unit/test_ctl
