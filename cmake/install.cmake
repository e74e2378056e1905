# What `cmake --install` and the Debian package (`make deb`, CPack below) put where
# (docs/operations.md). Configure with -DCMAKE_INSTALL_PREFIX=/usr for a system install: then
# GNUInstallDirs puts the configuration in /etc.
include(GNUInstallDirs)

if(TARGET bagd)
  install(TARGETS bagd RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
endif()
if(TARGET bagctl)
  install(TARGETS bagctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# /etc/bagd/bagd.conf: no neighbors, listening on loopback (conf/debian/bagd.conf): the
# package enables and starts bagd, which must route nothing until it is configured. 0640:
# TCP-MD5 passwords go in it; the Debian postinst makes it root:bagd.
install(FILES ${PROJECT_SOURCE_DIR}/conf/debian/bagd.conf
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/bagd
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
install(FILES ${PROJECT_SOURCE_DIR}/conf/systemd/bagd.default
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/default RENAME bagd)
# The examples go with the docs.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/conf/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${PROJECT_SOURCE_DIR}/conf/bagd.proto DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "*.yml" PATTERN "*.json" PATTERN "man" EXCLUDE
        PATTERN "fabric" EXCLUDE)  # docs/fabric holds only pictures: no empty directory

# What Debian Policy wants in every package's doc directory (12.5, 12.7): the copyright in
# the machine-readable format (DEP-5) and the Debian changelog, compressed with gzip -9n (no
# name, no time stamp: the same bytes on every build). The changelog's first entry must be
# this version (checked here, so a version bump without its entry fails at configure time).
find_program(GZIP gzip REQUIRED)
file(STRINGS ${PROJECT_SOURCE_DIR}/conf/debian/changelog _changelog_head LIMIT_COUNT 1)
if(NOT _changelog_head MATCHES "^bagd \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "conf/debian/changelog starts with '${_changelog_head}': add an entry for ${PROJECT_VERSION}")
endif()
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/gen/changelog.gz
  COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/conf/debian/changelog ${CMAKE_BINARY_DIR}/gen/changelog
  COMMAND ${GZIP} -9nf ${CMAKE_BINARY_DIR}/gen/changelog
  DEPENDS ${PROJECT_SOURCE_DIR}/conf/debian/changelog VERBATIM)
add_custom_target(bagd_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/gen/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/gen/changelog.gz ${PROJECT_SOURCE_DIR}/conf/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# lintian's overrides, each with its reason (conf/debian/lintian-overrides).
install(FILES ${PROJECT_SOURCE_DIR}/conf/debian/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME bagd)

# The unit file, with the installed paths of bagd and bagctl.
set(BAGD_SBINDIR ${CMAKE_INSTALL_FULL_SBINDIR})
set(BAGD_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
configure_file(${PROJECT_SOURCE_DIR}/conf/systemd/bagd.service.in ${CMAKE_BINARY_DIR}/gen/bagd.service @ONLY)
set(BAGD_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING "Where bagd.service goes, under the prefix")
install(FILES ${CMAKE_BINARY_DIR}/gen/bagd.service DESTINATION ${BAGD_SYSTEMD_UNIT_DIR})

# Man pages: docs/man/*.md through go-md2man (Debian's go-md2man, what Docker and Podman use
# for theirs); bagd.conf(5) is its header page followed by docs/config.md, so the
# configuration is written once. Installed gzip -9n compressed (Debian Policy 12.1; man-db
# reads them so). Without go-md2man: no man pages (a warning).
find_program(GO_MD2MAN go-md2man)
if(GO_MD2MAN)
  set(_man_pages)
  foreach(page bagd.8 bagctl.8 bagd.conf.5)
    set(_src ${PROJECT_SOURCE_DIR}/docs/man/${page}.md)
    set(_extra)
    set(_help)
    set(_deps)
    if(page STREQUAL "bagd.conf.5")
      set(_extra ${PROJECT_SOURCE_DIR}/docs/config.md)
    elseif(page STREQUAL "bagd.8" AND TARGET bagd)
      set(_help "-DHELP_PROGRAM=$<TARGET_FILE:bagd>")
      set(_deps bagd)
    elseif(page STREQUAL "bagctl.8" AND TARGET bagctl)
      set(_help "-DHELP_PROGRAM=$<TARGET_FILE:bagctl>")
      set(_deps bagctl)
    endif()
    add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/${page} ${CMAKE_BINARY_DIR}/man/${page}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${CMAKE_COMMAND} -DGO_MD2MAN=${GO_MD2MAN} -DOUT=${CMAKE_BINARY_DIR}/man/${page}
              -DVERSION=${PROJECT_VERSION} "-DSOURCES=${_src};${_extra}" ${_help}
              -P ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
      COMMAND ${GZIP} -9nkf ${CMAKE_BINARY_DIR}/man/${page}
      DEPENDS ${_src} ${_extra} ${_deps} ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
      VERBATIM)
    list(APPEND _man_pages ${CMAKE_BINARY_DIR}/man/${page}.gz)
    string(REGEX MATCH "[0-9]$" _section ${page})
    install(FILES ${CMAKE_BINARY_DIR}/man/${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section})
  endforeach()
  add_custom_target(bagd_man ALL DEPENDS ${_man_pages})
else()
  message(WARNING "go-md2man not found: no man pages (apt install go-md2man)")
endif()

# The Debian package: CPack's DEB generator, from the install rules above, so the package
# and `cmake --install` cannot disagree. dpkg-shlibdeps computes the libraries' Depends from
# the binaries; adduser is for the postinst's `addgroup --system bagd`. The maintainer
# scripts (conf/debian/) are what dh_installsystemd would write, plus the bagd group and a
# configuration check before an upgrade restarts bagd. lintian finds no error or warning
# (tests/package/deb_install.py runs it).
set(BAGD_DEB_MAINTAINER "bagd maintainers <maintainers@users.noreply.a-seed-471d1425.example>"
    CACHE STRING "The Debian package's Maintainer field: \"Name <address>\"")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME bagd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${BAGD_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${BAGD_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "BGP daemon for AI-fabric super-spines: weighted ECMP from link bandwidth")
# Continuation lines without leading blanks: CPack adds the one space of the Description
# format itself (a second would make the line a verbatim one).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "bagd speaks BGP-4 (IPv4/IPv6 unicast, 4-octet AS, route refresh, ADD-PATH,
graceful restart) and turns the link-bandwidth extended community into
weighted ECMP next-hop groups in the Linux kernel, with hold-down damping of
weight changes.")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "iproute2, adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "frr, gobgpd")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/conf/debian/conffiles ${PROJECT_SOURCE_DIR}/conf/debian/postinst
    ${PROJECT_SOURCE_DIR}/conf/debian/prerm ${PROJECT_SOURCE_DIR}/conf/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
