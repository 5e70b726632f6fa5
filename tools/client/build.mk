# SPDX-License-Identifier: GPL-2.0
# magnetd's clients (docs/protocol.md): magnet-cat, magnet-top and
# magnet-jobs, on the client library mgclient (mgclient.c the transport,
# mgreply.c the reply parsers, mgauth.c AUTH MUNGE), linked statically like
# every user binary; and their unit test, which runs them against fake
# magnetds on loopback.
MGCLIENT_OBJS := $(BUILD)/tools/client/mgclient.o \
		 $(BUILD)/tools/client/mgreply.o $(BUILD)/tools/client/mgauth.o
# libmunge (libmunge-dev): libmunge.a has no dependencies of its own, so
# static binaries take it as it is; the gmond module links libmunge.so.
MUNGE_LIBS := -lmunge
MAGNET_CLIENT_BINS := $(BUILD)/tools/magnet-cat $(BUILD)/tools/magnet-top \
		      $(BUILD)/tools/magnet-jobs
# magnet-jobs' grouping and flow matching (mgjobs.c), apart: unit-tested.
MGJOBS_OBJ := $(BUILD)/tools/client/mgjobs.o

$(MAGNET_CLIENT_BINS): $(BUILD)/tools/%: $(BUILD)/tools/client/%.o \
		       $(MGCLIENT_OBJS) $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(MUNGE_LIBS)
$(BUILD)/tools/magnet-jobs: $(MGJOBS_OBJ)

USER_BINS += $(MAGNET_CLIENT_BINS)
GUEST_FILES += $(BUILD)/tools/magnet-cat:/magnet/bin/magnet-cat \
	       $(BUILD)/tools/magnet-top:/magnet/bin/magnet-top \
	       $(BUILD)/tools/magnet-jobs:/magnet/bin/magnet-jobs

$(BUILD)/tests/unit/test_client.o: CFLAGS += -Itools/client

# The binaries are run by the test, not linked into it: order-only.
$(BUILD)/tests/unit/test_client: $(BUILD)/tests/unit/test_client.o \
				 $(BUILD)/tests/unit/testutil.o \
				 $(BUILD)/tests/unit/munged.o $(MGCLIENT_OBJS) \
				 $(MGJOBS_OBJ) $(LIBMAGNET) | $(MAGNET_CLIENT_BINS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(MUNGE_LIBS) $(CHECK_LIBS)

UNIT_TESTS += $(BUILD)/tests/unit/test_client
