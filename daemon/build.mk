# SPDX-License-Identifier: GPL-2.0
# magnetd, the record-serving daemon (docs/protocol.md). So far its
# foundation: the command parser, the filter language, the aggregation
# table and the trace file writer, with their unit tests (Check, static, as
# tests/unit/build.mk's; libmagnet last, daemon objects use it too).
DAEMON_OBJS := $(BUILD)/daemon/access.o $(BUILD)/daemon/owners.o $(BUILD)/daemon/expr.o $(BUILD)/daemon/proto.o \
	$(BUILD)/daemon/agg.o $(BUILD)/daemon/tracewr.o \
	$(BUILD)/daemon/config.o $(BUILD)/daemon/log.o $(BUILD)/daemon/notify.o \
	$(BUILD)/daemon/peer.o $(BUILD)/daemon/totals.o $(BUILD)/daemon/prom.o \
	$(BUILD)/daemon/supermon.o $(BUILD)/daemon/netview.o \
	$(BUILD)/daemon/auth.o
DAEMON_UNIT_TESTS := $(BUILD)/tests/unit/test_access $(BUILD)/tests/unit/test_expr $(BUILD)/tests/unit/test_proto \
	$(BUILD)/tests/unit/test_agg $(BUILD)/tests/unit/test_tracewr \
	$(BUILD)/tests/unit/test_config $(BUILD)/tests/unit/test_chunkq \
	$(BUILD)/tests/unit/test_peer $(BUILD)/tests/unit/test_totals \
	$(BUILD)/tests/unit/test_prom $(BUILD)/tests/unit/test_supermon \
	$(BUILD)/tests/unit/test_netview

$(BUILD)/tests/unit/test_access.o \
$(BUILD)/tests/unit/test_expr.o $(BUILD)/tests/unit/test_proto.o \
$(BUILD)/tests/unit/test_agg.o $(BUILD)/tests/unit/test_tracewr.o \
$(BUILD)/tests/unit/test_config.o $(BUILD)/tests/unit/test_chunkq.o \
$(BUILD)/tests/unit/test_peer.o $(BUILD)/tests/unit/test_server.o \
$(BUILD)/tests/unit/test_totals.o $(BUILD)/tests/unit/test_prom.o \
$(BUILD)/tests/unit/test_supermon.o $(BUILD)/tests/unit/test_netview.o: \
	CFLAGS += -Idaemon
# The shipped example config must load, and give exactly the defaults.
$(BUILD)/tests/unit/test_config.o: \
	CFLAGS += -DMG_TEST_CONF='"$(abspath daemon/magnetd.conf)"'

$(BUILD)/tests/unit/test_access: $(BUILD)/daemon/access.o $(BUILD)/daemon/owners.o
$(BUILD)/tests/unit/test_expr: $(BUILD)/daemon/expr.o
$(BUILD)/tests/unit/test_proto: $(BUILD)/daemon/proto.o
$(BUILD)/tests/unit/test_agg: $(BUILD)/daemon/agg.o
$(BUILD)/tests/unit/test_tracewr: $(BUILD)/daemon/tracewr.o $(BUILD)/daemon/chunkq.o
$(BUILD)/tests/unit/test_config: $(BUILD)/daemon/config.o $(BUILD)/daemon/access.o $(BUILD)/daemon/log.o \
	$(BUILD)/daemon/notify.o
$(BUILD)/tests/unit/test_chunkq: $(BUILD)/daemon/chunkq.o
$(BUILD)/tests/unit/test_peer: $(BUILD)/daemon/peer.o
$(BUILD)/tests/unit/test_totals: $(BUILD)/daemon/totals.o
$(BUILD)/tests/unit/test_prom: $(BUILD)/daemon/prom.o $(BUILD)/daemon/totals.o
$(BUILD)/tests/unit/test_supermon: $(BUILD)/daemon/supermon.o
$(BUILD)/tests/unit/test_netview: $(BUILD)/daemon/netview.o

$(filter-out %/test_supermon,$(DAEMON_UNIT_TESTS)): %: %.o \
		$(BUILD)/tests/unit/testutil.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $(filter-out $(LIBMAGNET),$^) \
		$(LIBMAGNET) $(CHECK_LIBS)

# Supermon's replies are checked with sfsexp, which Debian ships only as a
# shared library: this test (a host test, never in the VM) links it so.
$(BUILD)/tests/unit/test_supermon: %: %.o $(BUILD)/tests/unit/testutil.o \
		$(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $(filter-out $(LIBMAGNET),$^) $(LIBMAGNET) \
		-lsexp $(CHECK_LIBS)

# The server on the host, collect.h stubbed in the test (no module here).
$(BUILD)/tests/unit/test_server: $(BUILD)/tests/unit/test_server.o \
		$(BUILD)/tests/unit/testutil.o $(BUILD)/daemon/server.o \
		$(BUILD)/daemon/client.o $(BUILD)/daemon/fanout.o \
		$(BUILD)/daemon/chunkq.o \
		$(DAEMON_OBJS) $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(MUNGE_LIBS) $(CHECK_LIBS)

USER_BINS += $(DAEMON_OBJS)
UNIT_TESTS += $(DAEMON_UNIT_TESTS) $(BUILD)/tests/unit/test_server

# The daemon: its own objects, the foundation above, libmagnetctl (lib/ctl:
# magnet-ctl's command engine, for the probe set at start), libaio for the
# rings, libmunge (static too) for AUTH MUNGE.
MAGNETD := $(BUILD)/daemon/magnetd
MAGNETD_OBJS := $(BUILD)/daemon/magnetd.o $(BUILD)/daemon/server.o \
	$(BUILD)/daemon/client.o $(BUILD)/daemon/fanout.o \
	$(BUILD)/daemon/collect.o $(BUILD)/daemon/chunkq.o $(BUILD)/daemon/rings.o

$(MAGNETD_OBJS): CFLAGS += -Idaemon $(CTL_CFLAGS)

$(MAGNETD): $(MAGNETD_OBJS) $(DAEMON_OBJS) $(CTL_LIB) $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CTL_LIBS) -laio -lpthread \
		$(MUNGE_LIBS)

USER_BINS += $(MAGNETD)
GUEST_FILES += $(MAGNETD):/magnet/bin/magnetd

# AUTH MUNGE's two halves (daemon/auth.c, tools/client/mgauth.c) against a
# real munged the test starts in a directory of its own (tests/unit/munged.c).
$(BUILD)/tests/unit/test_auth.o: CFLAGS += -Idaemon -Itools/client
$(BUILD)/tests/unit/test_auth: $(BUILD)/tests/unit/test_auth.o \
		$(BUILD)/tests/unit/munged.o $(BUILD)/tests/unit/testutil.o \
		$(BUILD)/daemon/auth.o $(BUILD)/tools/client/mgauth.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(MUNGE_LIBS) $(CHECK_LIBS)
UNIT_TESTS += $(BUILD)/tests/unit/test_auth
