# The ring core built for user space: the unit tests and the native bench
# link the very code the module runs.
RING_USER_OBJ := $(BUILD)/kmod/ring_core.o
$(RING_USER_OBJ): CFLAGS += -Ikmod

CHECK_LIBS := $(shell pkg-config --libs --static check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

$(BUILD)/tests/unit/test_ring: $(BUILD)/tests/unit/test_ring.o $(RING_USER_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) -lpthread
$(BUILD)/tests/unit/test_ring.o: CFLAGS += -Ikmod
UNIT_TESTS += $(BUILD)/tests/unit/test_ring

# Per-job fairness (kmod/fair.h) on the same ring.
$(BUILD)/tests/unit/test_fair: $(BUILD)/tests/unit/test_fair.o $(RING_USER_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS)
$(BUILD)/tests/unit/test_fair.o: CFLAGS += -Ikmod
UNIT_TESTS += $(BUILD)/tests/unit/test_fair
