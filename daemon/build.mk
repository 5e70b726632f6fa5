# SPDX-License-Identifier: GPL-2.0
# magnetd, the record-serving daemon (docs/protocol.md). So far its
# foundation: the command parser, the filter language, the aggregation
# table and the trace file writer, with their unit tests (Check, static, as
# tests/unit/build.mk's).
DAEMON_OBJS := $(BUILD)/daemon/expr.o $(BUILD)/daemon/proto.o \
	$(BUILD)/daemon/agg.o $(BUILD)/daemon/tracewr.o
DAEMON_UNIT_TESTS := $(BUILD)/tests/unit/test_expr $(BUILD)/tests/unit/test_proto \
	$(BUILD)/tests/unit/test_agg $(BUILD)/tests/unit/test_tracewr

$(BUILD)/tests/unit/test_expr.o $(BUILD)/tests/unit/test_proto.o \
$(BUILD)/tests/unit/test_agg.o $(BUILD)/tests/unit/test_tracewr.o: \
	CFLAGS += -Idaemon

$(BUILD)/tests/unit/test_expr: $(BUILD)/daemon/expr.o
$(BUILD)/tests/unit/test_proto: $(BUILD)/daemon/proto.o
$(BUILD)/tests/unit/test_agg: $(BUILD)/daemon/agg.o
$(BUILD)/tests/unit/test_tracewr: $(BUILD)/daemon/tracewr.o

$(DAEMON_UNIT_TESTS): %: %.o $(BUILD)/tests/unit/testutil.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ $(CHECK_LIBS)

USER_BINS += $(DAEMON_OBJS)
UNIT_TESTS += $(DAEMON_UNIT_TESTS)
