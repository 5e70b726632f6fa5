# SPDX-License-Identifier: GPL-2.0
#
# Installing magnet, its DKMS source and its Debian packages (issue 11).
#
#   make install      binaries, unit, magnetd.conf, man pages, bash
#                     completion, headers, libmagnet.a + magnet.pc, the
#                     Ganglia module and its drop-in; DESTDIR and PREFIX
#                     (default /usr/local) are honoured
#   make uninstall    removes exactly what install puts there (same variables)
#   make dkms-src     the DKMS source tree, $(DESTDIR)/usr/src/magnet-VERSION
#   make dkms-install dkms-src, then dkms add, build and install for $(KVER)
#   make dkms-remove  dkms remove magnet/VERSION --all, and the source tree
#   make deb          magnet, libmagnet-dev and magnet-dkms in $(BUILD)/deb/
#   make pkg-check    tests/pkg/run: the packages, lintian, dpkg -i, DKMS,
#                     the VM with the DKMS-built module, purge, install round trip
#
# install-tools and install-dev (uninstall-*) are the halves debian/rules
# puts into the magnet and libmagnet-dev packages.
#
# Paths. magnetd reads /etc/magnet/magnetd.conf and gmond reads
# /etc/ganglia/conf.d/ whatever the prefix, so those two are fixed; the unit
# goes where systemd looks under the prefix (/usr/local/lib/systemd/system
# is searched too). The files naming an installed path (the unit's
# ExecStart, the Ganglia drop-in's module path, magnet.pc) are rewritten to
# the prefix's paths in $(BUILD)/packaging/ on each install.

MAGNET_VERSION := $(shell sed -n 's/^\#define[[:space:]]*MAGNET_RELEASE[[:space:]]*"\(.*\)"/\1/p' \
	include/magnet/version.h)

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
GANGLIA_MODDIR ?= $(LIBDIR)/ganglia
SYSCONFDIR ?= /etc
GANGLIA_CONFDIR ?= $(SYSCONFDIR)/ganglia/conf.d
DKMS_SRCDIR ?= /usr/src/magnet-$(MAGNET_VERSION)

PKG_GEN := $(BUILD)/packaging

# What install-tools and install-dev install: MODE:SOURCE:DESTINATION
# (without DESTDIR). Recursive, so that MAN_PAGES from man/build.mk,
# included after this file, is seen when a recipe runs.
PKG_TOOLS_FILES = \
	0755:$(BUILD)/tools/magnet-ctl:$(SBINDIR)/magnet-ctl \
	0755:$(BUILD)/tools/magnet-read:$(BINDIR)/magnet-read \
	0755:$(BUILD)/tools/magnet-dump:$(BINDIR)/magnet-dump \
	0755:$(BUILD)/tools/magnet-top:$(BINDIR)/magnet-top \
	0755:$(BUILD)/tools/magnet-cat:$(BINDIR)/magnet-cat \
	0755:$(BUILD)/tools/magnet-jobs:$(BINDIR)/magnet-jobs \
	0755:$(BUILD)/daemon/magnetd:$(SBINDIR)/magnetd \
	0644:$(PKG_GEN)/magnetd.service:$(SYSTEMDUNITDIR)/magnetd.service \
	0644:daemon/magnetd.conf:$(SYSCONFDIR)/magnet/magnetd.conf \
	0644:packaging/magnet-ctl.bash-completion:$(BASHCOMPDIR)/magnet-ctl \
	0644:$(BUILD)/monitors/ganglia/modmagnet.so:$(GANGLIA_MODDIR)/modmagnet.so \
	0644:$(PKG_GEN)/magnet.conf:$(GANGLIA_CONFDIR)/magnet.conf \
	$(foreach m,$(filter-out %.3,$(MAN_PAGES)),0644:$(m):$(call pkg_man_dest,$(m)))

# The decoder library's headers are lib/'s, one per source; they include
# <linux/magnet.h>, found through magnet.pc's -I${includedir}/magnet/uapi.
PKG_LIB_HEADERS = $(LIBMAGNET_SRCS:.c=.h)
PKG_DEV_FILES = \
	0644:include/uapi/linux/magnet.h:$(INCLUDEDIR)/magnet/uapi/linux/magnet.h \
	0644:include/magnet/kapi.h:$(INCLUDEDIR)/magnet/kapi.h \
	0644:include/magnet/version.h:$(INCLUDEDIR)/magnet/version.h \
	$(foreach h,$(PKG_LIB_HEADERS),0644:$(h):$(INCLUDEDIR)/magnet/$(notdir $(h))) \
	0644:$(LIBMAGNET):$(LIBDIR)/libmagnet.a \
	0644:$(PKG_GEN)/magnet.pc:$(PKGCONFIGDIR)/magnet.pc \
	$(foreach m,$(filter %.3,$(MAN_PAGES)),0644:$(m):$(call pkg_man_dest,$(m)))

# Directories that are magnet's alone, removed by uninstall once empty
# (deepest first; one holding a file of the administrator's stays); shared
# ones (bin/, conf.d/, ...) are left in place.
PKG_TOOLS_DIRS = $(SYSCONFDIR)/magnet
PKG_DEV_DIRS = $(INCLUDEDIR)/magnet/uapi/linux $(INCLUDEDIR)/magnet/uapi \
	$(INCLUDEDIR)/magnet

# $(BUILD)/man/NAME.SECTION -> $(MANDIR)/manSECTION/NAME.SECTION
pkg_man_dest = $(MANDIR)/man$(subst .,,$(suffix $(1)))/$(notdir $(1))

pkg_field = $(word $(2),$(subst :, ,$(1)))

define pkg_install_one
	@$(if $(Q),echo "  INSTALL $(DESTDIR)$(call pkg_field,$(1),3)")
	$(Q)install -D -m $(call pkg_field,$(1),1) $(call pkg_field,$(1),2) \
		"$(DESTDIR)$(call pkg_field,$(1),3)"

endef

define pkg_uninstall
	@$(if $(Q),echo "  RM      $(DESTDIR)$(PREFIX) ($(1))")
	$(Q)rm -f $(foreach f,$(2),"$(DESTDIR)$(call pkg_field,$(f),3)")
	$(Q)for d in $(foreach d,$(3),"$(DESTDIR)$(d)"); do \
		if [ -d "$$d" ]; then rmdir --ignore-fail-on-non-empty "$$d" || exit 1; fi; \
	done
endef

# Files that name installed paths, generated for these paths every time.
$(PKG_GEN)/magnetd.service: daemon/magnetd.service FORCE | $(BUILD)
	@mkdir -p $(dir $@)
	$(Q)sed 's|/usr/sbin/magnetd|$(SBINDIR)/magnetd|' $< >$@

$(PKG_GEN)/magnet.conf: monitors/ganglia/magnet.conf FORCE | $(BUILD)
	@mkdir -p $(dir $@)
	$(Q)sed 's|"/usr/lib/x86_64-linux-gnu/ganglia/modmagnet.so"|"$(GANGLIA_MODDIR)/modmagnet.so"|' \
		$< >$@
	$(Q)grep -qF '"$(GANGLIA_MODDIR)/modmagnet.so"' $@ || \
		{ echo "$<: no module path to rewrite" >&2; rm -f $@; exit 1; }

$(PKG_GEN)/magnet.pc: packaging/magnet.pc.in FORCE | $(BUILD)
	@mkdir -p $(dir $@)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(MAGNET_VERSION)|' \
		$< >$@

# Everything installed, built: what the lists name (not the tests' programs
# in USER_BINS), then the man pages (a sub-make, as MAN_PAGES is complete
# only once every fragment has been read).
PKG_BUILT := $(filter-out $(PKG_GEN)/%,$(filter $(BUILD)/%,$(foreach f,\
	$(PKG_TOOLS_FILES) $(PKG_DEV_FILES),$(call pkg_field,$(f),2))))
pkg-build: $(PKG_BUILT)
	$(Q)$(if $(strip $(MAN_PAGES)),$(MAKE) $(MAN_PAGES))

install: install-tools install-dev

install-tools: pkg-build $(PKG_GEN)/magnetd.service $(PKG_GEN)/magnet.conf
	$(foreach f,$(PKG_TOOLS_FILES),$(call pkg_install_one,$(f)))

install-dev: pkg-build $(PKG_GEN)/magnet.pc
	$(foreach f,$(PKG_DEV_FILES),$(call pkg_install_one,$(f)))

uninstall: uninstall-tools uninstall-dev

uninstall-tools:
	$(call pkg_uninstall,tools,$(PKG_TOOLS_FILES),$(PKG_TOOLS_DIRS))

uninstall-dev:
	$(call pkg_uninstall,dev,$(PKG_DEV_FILES),$(PKG_DEV_DIRS))

# The DKMS tree: only what builds magnet.ko (packaging/dkms.conf).
PKG_DKMS_FILES = packaging/dkms/Kbuild:Kbuild \
	$(foreach f,$(filter-out kmod/compat-generated.h kmod/%.mod.c,$(wildcard kmod/*.c kmod/*.h \
		kmod/compat/*.c kmod/compat/*.sym)) kmod/Kbuild,$(f):$(f)) \
	include/uapi/linux/magnet.h:include/uapi/linux/magnet.h \
	include/magnet/kapi.h:include/magnet/kapi.h \
	include/magnet/version.h:include/magnet/version.h

dkms-src:
	@$(if $(Q),echo "  INSTALL $(DESTDIR)$(DKMS_SRCDIR)")
	$(Q)rm -rf "$(DESTDIR)$(DKMS_SRCDIR)"
	$(Q)$(foreach f,$(PKG_DKMS_FILES),install -D -m 0644 $(call pkg_field,$(f),1) \
		"$(DESTDIR)$(DKMS_SRCDIR)/$(call pkg_field,$(f),2)" &&) true
	$(Q)sed 's/#MODULE_VERSION#/$(MAGNET_VERSION)/' packaging/dkms.conf \
		>"$(DESTDIR)$(DKMS_SRCDIR)/dkms.conf"

# On this machine, as root: what magnet-dkms's postinst does, for $(KVER)
# (the kernel the Makefile builds against; make dkms-install KVER=...).
dkms-install:
	$(Q)test -z "$(DESTDIR)" || { echo "dkms-install: no DESTDIR" >&2; exit 1; }
	$(Q)$(MAKE) dkms-src
	$(Q)dkms status -m magnet -v $(MAGNET_VERSION) | grep -q . || \
		dkms add -m magnet -v $(MAGNET_VERSION)
	$(Q)dkms build -m magnet -v $(MAGNET_VERSION) -k $(KVER)
	$(Q)dkms install -m magnet -v $(MAGNET_VERSION) -k $(KVER)

dkms-remove:
	$(Q)if dkms status -m magnet -v $(MAGNET_VERSION) | grep -q .; then \
		dkms remove -m magnet -v $(MAGNET_VERSION) --all; fi
	$(Q)rm -rf "$(DKMS_SRCDIR)"

# make deb: a copy of the checkout's sources (tracked and new files, not
# build output) with packaging/debian as its debian/, in $(BUILD)/deb/, so
# the checkout stays clean; dpkg-buildpackage there makes the source
# package and the three binary packages beside it. The changelog entry is
# written from version.h, the one place the release is defined. The outer
# make's flags and variables are not passed down: debian/rules runs the
# project's Makefile with its own (see there). The staged tree is removed
# afterwards (V=1 shows the whole build): the Makefile includes every *.d
# under $(BUILD), and the packages' trees have directories such as
# etc/ganglia/conf.d.
DEB_DIR := $(BUILD)/deb
DEB_SRC := $(DEB_DIR)/magnet-$(MAGNET_VERSION)
DEB_MAINTAINER := magnet maintainers <maintainers@users.noreply.a-seed-78943297.example>
DEB_JOBS ?= 2
# Unless V=1: the log, and its end when the build fails.
DEB_QUIET = >../dpkg-buildpackage.log 2>&1 || { tail -n 40 ../dpkg-buildpackage.log; \
	echo "make deb: failed; see $(DEB_DIR)/dpkg-buildpackage.log" >&2; exit 1; }

deb:
	@test -e .git || { echo "make deb: needs the git checkout (it copies git's files)" >&2; exit 1; }
	@$(if $(Q),echo "  STAGE   $(DEB_SRC)")
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	$(Q)git ls-files -z --cached --others --exclude-standard | \
		xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh | \
		cpio -0 -pdm --quiet $(DEB_SRC)
	$(Q)cp -R packaging/debian $(DEB_SRC)/debian
	$(Q){ echo "magnet ($(MAGNET_VERSION)) unstable; urgency=medium"; echo; \
	  echo "  * Release $(MAGNET_VERSION)."; echo; \
	  echo " -- $(DEB_MAINTAINER)  $$(git log -1 --format=%cD HEAD)"; \
	} >$(DEB_SRC)/debian/changelog
	@$(if $(Q),echo "  DPKG    $(DEB_DIR)/*.deb")
	$(Q)ret=0; (cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD \
		DEB_BUILD_OPTIONS="parallel=$(DEB_JOBS) $(DEB_BUILD_OPTIONS)" \
		dpkg-buildpackage -us -uc $(if $(Q),$(DEB_QUIET))) || ret=$$?; \
		rm -rf $(DEB_SRC); exit $$ret
	@ls $(DEB_DIR)/*.deb | sed 's/^/  DEB     /'

pkg-check:
	$(Q)tests/pkg/run

.PHONY: FORCE pkg-build install install-tools install-dev uninstall uninstall-tools \
	uninstall-dev dkms-src dkms-install dkms-remove deb pkg-check

# For tests/pkg/run: the man pages install-tools and install-dev install.
pkg-print-man:
	@echo $(MAN_PAGES)
.PHONY: pkg-print-man
