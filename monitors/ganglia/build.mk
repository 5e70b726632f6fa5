# SPDX-License-Identifier: GPL-2.0
# monitors/ganglia: modmagnet.so, magnet's gmond metric module, built as
# gmond's own C modules are: a shared object against libganglia1-dev's
# gm_metric.h (APR, libconfuse, and Sun RPC from libtirpc), resolving
# libganglia's err_msg in gmond when loaded (docs/ganglia.md).
GANGLIA_SO := $(BUILD)/monitors/ganglia/modmagnet.so
# AUTH MUNGE (auth.c, and the credential from tools/client/mgauth.c) links
# libmunge.so: gmond loads the module, so it may not take a static copy.
GANGLIA_CFLAGS := -fPIC $(shell pkg-config --cflags apr-1 libtirpc 2>/dev/null) \
	-Imonitors/ganglia -Itools/client
GANGLIA_OBJS := $(BUILD)/monitors/ganglia/modmagnet.pic.o \
	$(BUILD)/monitors/ganglia/totals.pic.o \
	$(BUILD)/monitors/ganglia/auth.pic.o \
	$(BUILD)/monitors/ganglia/mgauth.pic.o

$(BUILD)/monitors/ganglia/%.pic.o: monitors/ganglia/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) $(GANGLIA_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/monitors/ganglia/mgauth.pic.o: tools/client/mgauth.c | $(BUILD)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) $(GANGLIA_CFLAGS) -MMD -MP -c -o $@ $<

$(GANGLIA_SO): $(GANGLIA_OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -shared -o $@ $^ -lm $(MUNGE_LIBS)

USER_BINS += $(GANGLIA_SO)

# The TOTALS client and its parser, natively (Check, as the daemon's tests).
$(BUILD)/monitors/ganglia/totals.o $(BUILD)/monitors/ganglia/auth.o: \
	CFLAGS += -Itools/client
$(BUILD)/tests/unit/test_ganglia.o: CFLAGS += -Imonitors/ganglia
$(BUILD)/tests/unit/test_ganglia: $(BUILD)/tests/unit/test_ganglia.o \
		$(BUILD)/monitors/ganglia/totals.o $(BUILD)/tests/unit/testutil.o \
		$(BUILD)/monitors/ganglia/auth.o $(BUILD)/tools/client/mgauth.o \
		$(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(MUNGE_LIBS) $(CHECK_LIBS) -lm
UNIT_TESTS += $(BUILD)/tests/unit/test_ganglia

# Its AUTH MUNGE through mgg_fetch, against a real munged of the test's own.
$(BUILD)/tests/unit/test_ganglia_auth.o: CFLAGS += -Imonitors/ganglia
$(BUILD)/tests/unit/test_ganglia_auth: $(BUILD)/tests/unit/test_ganglia_auth.o \
		$(BUILD)/monitors/ganglia/totals.o $(BUILD)/monitors/ganglia/auth.o \
		$(BUILD)/tools/client/mgauth.o $(BUILD)/tests/unit/munged.o \
		$(BUILD)/tests/unit/testutil.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(MUNGE_LIBS) $(CHECK_LIBS) -lm
UNIT_TESTS += $(BUILD)/tests/unit/test_ganglia_auth
