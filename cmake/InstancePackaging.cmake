# Debian packages with CPack, from a configured and built tree:
#
#   cpack -G DEB --config build/CPackConfig.cmake -B <out>
#
# after a build, gives one package per component:
#   instance-guard           the tool and the core, its man page, the guides and
#                            examples; Depends (dpkg-shlibdeps) on the C and
#                            C++ runtimes only
#   instance-guard-<store>   one per store module (webdav, cs3, etcd,
#                            postgres, redis): <libdir>/instance-guard/stores/
#                            <store>.so; Depends on instance-guard of the same
#                            version and, through dpkg-shlibdeps, on the
#                            store's client libraries (libcurl4, libpq5, ...),
#                            as postfix-pgsql does for Postfix
#   libinstance-guard-dev    headers, libraries, the CMake package and
#                            instance.pc; Depends on the -dev packages of the
#                            stores' dependencies (their DEBIAN lists in
#                            instance_install_library) while the libraries are
#                            static.
# All install under /usr. tests/packaging/deb_test.sh builds, installs,
# runs and removes them.
if(NOT INSTANCE_INSTALL)
  return()
endif()

# cpack (and the install target) pack and install what is built, and build
# nothing themselves: the .deb test runs cpack from inside a test and must
# not rebuild the tree. `cmake --build build` first (scripts/build.sh does);
# `cmake --build build --target package` still builds everything first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_PACKAGE_NAME instance-guard)
set(CPACK_PACKAGE_VENDOR "instance-guard")
set(CPACK_PACKAGE_CONTACT "instance-guard maintainers <instance-guard@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Each package's Description: PROJECT_DESCRIPTION as the synopsis, then its
# component's description.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_COMPONENTS_ALL runtime development)
get_property(store_families GLOBAL PROPERTY INSTANCE_STORE_FAMILIES)
foreach(family ${store_families})
  list(APPEND CPACK_COMPONENTS_ALL store-${family})
  string(TOUPPER "STORE-${family}" component)
  set(CPACK_DEBIAN_${component}_PACKAGE_NAME instance-guard-${family})
  set(CPACK_DEBIAN_${component}_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_${component}_PACKAGE_DEPENDS "instance-guard (= ${PROJECT_VERSION})")
  set(CPACK_COMPONENT_${component}_DESCRIPTION
      "The ${family} store module of instance-guard: lets the tool (and programs\n\
using its library) keep their claims in ${family} (store URLs of that\n\
family), with ${family}'s client library.")
endforeach()
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME instance-guard)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "The instance-guard tool wraps a service's command: it claims a shared state\n\
store (a folder, a WebDAV server, etcd, PostgreSQL, Redis, an OpenCloud\n\
space), runs the command while renewing the claim, and stands down when the\n\
command exits, so a second instance is refused or waits. Folders need nothing\n\
more; each other store comes in its own package (instance-guard-etcd, ...).")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libinstance-guard-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
    "Development files of the instance-guard C++ library: headers, libraries,\n\
the CMake package (find_package(InstanceGuard): instance::core and one\n\
target per store) and the pkg-config module (instance, the core).")
set(dev_depends ${INSTANCE_DEBIAN_DEV_DEPENDS})
if(BUILD_SHARED_LIBS)  # the shared libraries are in the tool's package
  list(APPEND dev_depends "instance-guard (= ${PROJECT_VERSION})")
endif()
list(JOIN dev_depends ", " dev_depends)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${dev_depends}")

include(CPack)
