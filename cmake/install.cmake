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

# /etc/bagd/bagd.conf: the minimal example, a starting point that passes --check (edit the
# neighbor before enabling the service). The other examples go with the docs.
install(FILES ${PROJECT_SOURCE_DIR}/conf/examples/minimal.textproto
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/bagd RENAME bagd.conf)
install(FILES ${PROJECT_SOURCE_DIR}/conf/systemd/bagd.default
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/default RENAME bagd)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/conf/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${PROJECT_SOURCE_DIR}/conf/bagd.proto DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "*.yml" PATTERN "*.json" PATTERN "man" EXCLUDE)

# The unit file, with the installed path of bagd.
set(BAGD_SBINDIR ${CMAKE_INSTALL_FULL_SBINDIR})
configure_file(${PROJECT_SOURCE_DIR}/conf/systemd/bagd.service.in ${CMAKE_BINARY_DIR}/gen/bagd.service @ONLY)
set(BAGD_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING "Where bagd.service goes, under the prefix")
install(FILES ${CMAKE_BINARY_DIR}/gen/bagd.service DESTINATION ${BAGD_SYSTEMD_UNIT_DIR})

# Man pages: docs/man/*.md through go-md2man (Debian's go-md2man, what Docker and Podman use
# for theirs); bagd.conf(5) is its header page followed by docs/config.md, so the
# configuration is written once. Without go-md2man: no man pages (a warning).
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
    add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${CMAKE_COMMAND} -DGO_MD2MAN=${GO_MD2MAN} -DOUT=${CMAKE_BINARY_DIR}/man/${page}
              -DVERSION=${PROJECT_VERSION} "-DSOURCES=${_src};${_extra}" ${_help}
              -P ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
      DEPENDS ${_src} ${_extra} ${_deps} ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
      VERBATIM)
    list(APPEND _man_pages ${CMAKE_BINARY_DIR}/man/${page})
    string(REGEX MATCH "[0-9]$" _section ${page})
    install(FILES ${CMAKE_BINARY_DIR}/man/${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section})
  endforeach()
  add_custom_target(bagd_man ALL DEPENDS ${_man_pages})
else()
  message(WARNING "go-md2man not found: no man pages (apt install go-md2man)")
endif()

# The Debian package: CPack's DEB generator, from the install rules above, so the package
# and `cmake --install` cannot disagree. dpkg-shlibdeps computes Depends from the binaries.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME bagd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "bagd developers <bagd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "BGP daemon for AI-fabric super-spines: weighted ECMP from link bandwidth")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "bagd speaks BGP-4 (IPv4/IPv6 unicast, 4-octet AS, route refresh, ADD-PATH)
 and turns the link-bandwidth extended community into weighted ECMP next-hop
 groups in the Linux kernel, with hold-down damping of weight changes.")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "iproute2")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "frr, gobgpd")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/conf/debian/conffiles ${PROJECT_SOURCE_DIR}/conf/debian/postinst
    ${PROJECT_SOURCE_DIR}/conf/debian/prerm ${PROJECT_SOURCE_DIR}/conf/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
