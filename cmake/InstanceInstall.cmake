# Install rules and the installed package: find_package(InstanceGuard) for
# CMake, instance.pc for pkg-config, and the pieces CPack turns into .debs.
#
# Every library target joins the package with ONE line in its own
# CMakeLists.txt, after add_library():
#
#   instance_install_library(<target> [DEPENDS <find_package args>...]
#                                     [PKG_CONFIG <module>...]
#                                     [DEBIAN <package>...]
#                                     [COMPONENT <name>])
#
#   DEPENDS     what a consumer must find for <target>'s private link
#               dependencies, one quoted find_package argument list each
#               ("CURL", "pugixml CONFIG"). Needed only while the libraries
#               are static (the default): a consumer then links them too.
#   PKG_CONFIG  the same dependencies as pkg-config modules (kept for the
#               day stores get .pc files of their own; instance.pc is the core).
#   DEBIAN      the Debian -dev packages providing them (the -dev .deb's
#               Depends).
#   COMPONENT   the package component whose consumers need DEPENDS (default:
#               the target's own name); the config file finds a component's
#               dependencies only when that component is asked for, so a
#               consumer of the core alone never looks for gRPC or libpq.
#
# The target is installed into the InstanceGuardTargets export set under the
# name instance::<target without its instance_ prefix>, its public header
# include/instance/stores/<that name>.hpp (when there is one) is installed,
# and InstanceGuard_<name>_FOUND is set, so a consumer can ask for it:
# find_package(InstanceGuard REQUIRED COMPONENTS redis).
#
# Each store's CMakeLists.txt has its line; the umbrella `instance`
# (src/CMakeLists.txt) links every store built PUBLIC, so every one must have
# it (install(EXPORT) fails otherwise). A dependency with no dependable CMake
# package of its own gets a find module here, cmake/Find<Name>.cmake, used by
# the build and installed with the package, so a consumer finds the same
# imported target: FindHiredis (Hiredis::hiredis), FindGrpcCpp
# (PkgConfig::GRPCPP).
#
# Libraries are static unless BUILD_SHARED_LIBS=ON. Static keeps the tool a
# single binary (only system libraries shared) and the tests free to reach
# internal symbols; the price is that a consumer links each store's
# dependencies itself, which the package config does for it (find_dependency)
# and instance.pc lists (Requires). With BUILD_SHARED_LIBS=ON the libraries
# get a soname (0.1) and an $ORIGIN rpath, go into the tool's .deb (the -dev
# one keeps the namelinks), and consumers need only Threads; only symbols
# marked INSTANCE_EXPORT (include/instance/export.hpp) are visible.

include(CMakePackageConfigHelpers)

option(INSTANCE_INSTALL "Generate install rules and the CMake / pkg-config package"
       ${PROJECT_IS_TOP_LEVEL})

set(INSTANCE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/InstanceGuard)

# Recorded by instance_install_library, read by instance_install_package.
set_property(GLOBAL PROPERTY INSTANCE_INSTALLED_TARGETS "")
set_property(GLOBAL PROPERTY INSTANCE_FIND_DEPENDENCIES "")
set_property(GLOBAL PROPERTY INSTANCE_DEBIAN_DEV_DEPENDS "")

function(instance_install_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "COMPONENT" "DEPENDS;PKG_CONFIG;DEBIAN")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "instance_install_library(${target}): unknown arguments "
                        "${arg_UNPARSED_ARGUMENTS}")
  endif()
  string(REGEX REPLACE "^instance_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  if(NOT arg_COMPONENT)
    set(arg_COMPONENT ${name})
  endif()
  if(NOT INSTANCE_INSTALL)
    return()
  endif()

  install(TARGETS ${target} EXPORT InstanceGuardTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
            NAMELINK_COMPONENT development
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    # Our libraries find each other wherever the tree is installed. 0.x:
    # the ABI may change with the minor version, hence the soname.
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN"
      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  elseif(type STREQUAL "STATIC_LIBRARY")
    # `cmake --install --strip` and cpack strip executables and shared
    # libraries only; drop the archives' debug sections too (a tenth the size).
    install(CODE "if(CMAKE_INSTALL_DO_STRIP)
      execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
        \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:${target}>\"
        COMMAND_ERROR_IS_FATAL ANY)
    endif()" COMPONENT development)
  endif()
  set(header ${PROJECT_SOURCE_DIR}/include/instance/stores/${name}.hpp)
  if(EXISTS ${header})
    install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/instance/stores
            COMPONENT development)
  endif()

  set_property(GLOBAL APPEND PROPERTY INSTANCE_INSTALLED_TARGETS ${target})
  # A shared library carries its private dependencies itself.
  if(type STREQUAL "STATIC_LIBRARY")
    foreach(spec ${arg_DEPENDS})
      set_property(GLOBAL APPEND PROPERTY INSTANCE_FIND_DEPENDENCIES "${arg_COMPONENT}|${spec}")
    endforeach()
    set_property(GLOBAL APPEND PROPERTY INSTANCE_DEBIAN_DEV_DEPENDS ${arg_DEBIAN})
  endif()
endfunction()

# Writes the package files from what the libraries recorded; called once,
# after every library has been defined (the top-level CMakeLists.txt).
function(instance_install_package)
  if(NOT INSTANCE_INSTALL)
    return()
  endif()
  get_property(targets GLOBAL PROPERTY INSTANCE_INSTALLED_TARGETS)
  get_property(depends GLOBAL PROPERTY INSTANCE_FIND_DEPENDENCIES)
  get_property(deb_depends GLOBAL PROPERTY INSTANCE_DEBIAN_DEV_DEPENDS)
  list(REMOVE_DUPLICATES depends)
  list(REMOVE_DUPLICATES deb_depends)

  # The CMake package: each component's dependencies, found when asked for.
  set(INSTANCE_FIND_DEPENDENCY_CALLS "")
  foreach(entry ${depends})
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 component)
    list(GET entry 1 spec)
    string(APPEND INSTANCE_FIND_DEPENDENCY_CALLS
           "if(\"${component}\" IN_LIST InstanceGuard_FIND_COMPONENTS)\n"
           "  find_dependency(${spec})\nendif()\n")
  endforeach()
  set(INSTANCE_COMPONENTS "")
  foreach(target ${targets})
    get_target_property(name ${target} EXPORT_NAME)
    list(APPEND INSTANCE_COMPONENTS ${name})
  endforeach()
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/InstanceGuardConfig.cmake.in
    ${PROJECT_BINARY_DIR}/InstanceGuardConfig.cmake INSTALL_DESTINATION ${INSTANCE_CMAKE_DIR})
  # 0.x: a minor version may break the API.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/InstanceGuardConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(EXPORT InstanceGuardTargets NAMESPACE instance:: DESTINATION ${INSTANCE_CMAKE_DIR}
          COMPONENT development)
  # Our find modules (cmake/Find*.cmake), for the find_dependency calls.
  file(GLOB find_modules ${PROJECT_SOURCE_DIR}/cmake/Find*.cmake)
  install(FILES ${PROJECT_BINARY_DIR}/InstanceGuardConfig.cmake
                ${PROJECT_BINARY_DIR}/InstanceGuardConfigVersion.cmake ${find_modules}
          DESTINATION ${INSTANCE_CMAKE_DIR} COMPONENT development)

  # pkg-config: one module, `instance`, for the core (the guard, open_store()
  # and the directory store; other stores load as modules). A static core
  # exports its symbols for the modules (instance/sdk/store_module.hpp).
  set(INSTANCE_PC_LIBS "-linstance_core")
  if(NOT BUILD_SHARED_LIBS)
    string(APPEND INSTANCE_PC_LIBS
           " -Wl,--dynamic-list=\${libdir}/cmake/InstanceGuard/instance-core.dynamic-list")
  endif()
  # Relocatable: the prefix is found from the .pc file's own place.
  file(RELATIVE_PATH INSTANCE_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
  string(REGEX REPLACE "/$" "" INSTANCE_PC_TO_PREFIX "${INSTANCE_PC_TO_PREFIX}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/instance.pc.in ${PROJECT_BINARY_DIR}/instance.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/instance.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT development)

  set(INSTANCE_DEBIAN_DEV_DEPENDS "${deb_depends}" PARENT_SCOPE)
endfunction()
