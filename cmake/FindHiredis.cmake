# FindHiredis: the hiredis C client of the Redis store (Debian:
# libhiredis-dev). Used by the build (src/stores/redis) and, installed next to
# InstanceGuardConfig.cmake, by consumers of a static instance::redis, so
# both sides link the same target. Debian 12's hiredis 0.14 ships a
# HiredisConfig.cmake that defines no target (upstream's, from 1.0 on, is
# package "hiredis" with hiredis::hiredis); hence this module.
#
# Gives Hiredis_FOUND, Hiredis_VERSION, the cache entries HIREDIS_INCLUDE_DIR
# (the folder holding hiredis/hiredis.h) and HIREDIS_LIBRARY, and the
# imported target Hiredis::hiredis.
find_path(HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
find_library(HIREDIS_LIBRARY NAMES hiredis)
mark_as_advanced(HIREDIS_INCLUDE_DIR HIREDIS_LIBRARY)

if(HIREDIS_INCLUDE_DIR AND EXISTS ${HIREDIS_INCLUDE_DIR}/hiredis/hiredis.h)
  file(STRINGS ${HIREDIS_INCLUDE_DIR}/hiredis/hiredis.h _hiredis_defines
       REGEX "^#define HIREDIS_(MAJOR|MINOR|PATCH) +[0-9]+")
  set(Hiredis_VERSION "")
  foreach(_hiredis_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define HIREDIS_${_hiredis_part} +([0-9]+).*" "\\1" _hiredis_number
           "${_hiredis_defines}")
    list(APPEND Hiredis_VERSION ${_hiredis_number})
  endforeach()
  list(JOIN Hiredis_VERSION "." Hiredis_VERSION)
  unset(_hiredis_defines)
  unset(_hiredis_part)
  unset(_hiredis_number)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hiredis REQUIRED_VARS HIREDIS_LIBRARY HIREDIS_INCLUDE_DIR
                                  VERSION_VAR Hiredis_VERSION)

if(Hiredis_FOUND AND NOT TARGET Hiredis::hiredis)
  add_library(Hiredis::hiredis UNKNOWN IMPORTED)
  set_target_properties(Hiredis::hiredis PROPERTIES
    IMPORTED_LOCATION ${HIREDIS_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${HIREDIS_INCLUDE_DIR})
endif()
