# Relocatable install: copy the non-system shared libraries our installed
# programs need (Debian's abseil and protobuf are shared-only for PIC use) into
# lib/ beside ours; every installed binary carries an $ORIGIN rpath. The tree
# then runs on a machine that has neither (e.g. a GPU node).
if(TARGET sightline)
  install(TARGETS sightline RUNTIME_DEPENDENCY_SET sightline_runtime_deps
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(RUNTIME_DEPENDENCY_SET sightline_runtime_deps
    PRE_INCLUDE_REGEXES "absl" "protobuf" "benchmark"
    PRE_EXCLUDE_REGEXES ".*"
    POST_EXCLUDE_FILES_STRICT ""
    DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
