# SPDX-License-Identifier: GPL-2.0
# magnet-ctl: the generic-netlink control tool (tools/ctl/, docs/magnet-ctl.md),
# linked statically with libnl-genl-3 and libnl-3; and its unit test.
CTL_SRCS := $(addprefix tools/ctl/, main.c args.c nl.c print.c probe.c \
	filter.c sample.c buffer.c stats.c monitor.c)
CTL_OBJS := $(CTL_SRCS:%.c=$(BUILD)/%.o)
CTL_LIB_OBJS := $(filter-out $(BUILD)/tools/ctl/main.o,$(CTL_OBJS))
MAGNET_CTL := $(BUILD)/tools/magnet-ctl

NL_CFLAGS := $(or $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null),\
	-I/usr/include/libnl3)
NL_LIBS := $(or $(shell pkg-config --static --libs libnl-genl-3.0 2>/dev/null),\
	-lnl-genl-3 -lnl-3 -lpthread)

$(CTL_OBJS): CFLAGS += $(NL_CFLAGS)

$(MAGNET_CTL): $(CTL_OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(NL_LIBS)

USER_BINS += $(MAGNET_CTL)
GUEST_FILES += $(MAGNET_CTL):/magnet/bin/magnet-ctl

# The unit test drives the whole command line through main.c's main(),
# renamed so that Check's runner can be the program's main.
CTL_TEST_MAIN := $(BUILD)/tests/unit/ctl_main.o
$(CTL_TEST_MAIN): tools/ctl/main.c | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(NL_CFLAGS) -Dmain=magnet_ctl_main -MMD -MP -c -o $@ $<

$(BUILD)/tests/unit/test_ctl.o: CFLAGS += $(NL_CFLAGS) -Itools/ctl

$(BUILD)/tests/unit/test_ctl: $(BUILD)/tests/unit/test_ctl.o $(CTL_TEST_MAIN) \
			      $(CTL_LIB_OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(NL_LIBS) $(CHECK_LIBS)

UNIT_TESTS += $(BUILD)/tests/unit/test_ctl
