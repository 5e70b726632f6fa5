# SPDX-License-Identifier: GPL-2.0
# magnet-ctl: the generic-netlink control tool (tools/ctl/, docs/magnet-ctl.md),
# linked statically with libnl-genl-3, libnl-3 and libmagnet; and its unit
# test.
#
# The program is main.c alone: the netlink client and the command engine
# are libmagnetctl.a (lib/ctl/, lib/ctl/build.mk), which magnetd links too.
MAGNET_CTL := $(BUILD)/tools/magnet-ctl

$(BUILD)/tools/ctl/main.o: CFLAGS += $(NL_CFLAGS) $(CTL_CFLAGS)

# Linked through the library, so that it is known to be complete.
$(MAGNET_CTL): $(BUILD)/tools/ctl/main.o $(CTL_LIB) $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CTL_LIBS)

USER_BINS += $(MAGNET_CTL)
GUEST_FILES += $(MAGNET_CTL):/magnet/bin/magnet-ctl

# The unit test drives the whole command line through main.c's main(),
# renamed so that Check's runner can be the program's main; ctl_exec()'s
# socket is the test's fake kernel through --wrap (see test_ctl.c).
CTL_TEST_MAIN := $(BUILD)/tests/unit/ctl_main.o
$(CTL_TEST_MAIN): tools/ctl/main.c | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(NL_CFLAGS) $(CTL_CFLAGS) -Dmain=magnet_ctl_main \
		-MMD -MP -c -o $@ $<

$(BUILD)/tests/unit/test_ctl.o: CFLAGS += $(NL_CFLAGS) $(CTL_CFLAGS)

$(BUILD)/tests/unit/test_ctl: $(BUILD)/tests/unit/test_ctl.o $(CTL_TEST_MAIN) \
			      $(CTL_LIB) $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CTL_LIBS) $(CHECK_LIBS) \
		-Wl,--wrap=ctl_nl_open,--wrap=ctl_nl_close

UNIT_TESTS += $(BUILD)/tests/unit/test_ctl
