# Store families beyond the core: each is one folder under src/stores/ whose
# CMakeLists.txt calls, once,
#
#   instance_add_store(<family> SOURCES <file>...
#                      [LIBS <private link dependency>...]
#                      [DEPENDS ...] [PKG_CONFIG ...] [DEBIAN ...])
#
# which compiles the sources once and makes two things of them:
#
#   instance_<family>        a library (static unless BUILD_SHARED_LIBS) that
#                            programs link to register the store themselves
#                            (instance::<family>, a component of the installed
#                            CMake package; DEPENDS, PKG_CONFIG and DEBIAN go
#                            to instance_install_library).
#   instance_store_<family>  the loadable module <family>.so, with the
#                            sources, module_entry.cpp and LIBS, but not the
#                            core: it takes the core's symbols from the
#                            program that loads it. Built into
#                            ${PROJECT_BINARY_DIR}/stores/, installed into
#                            ${libdir}/instance-guard/stores/ as the CPack
#                            component store-<family> (Debian package
#                            instance-guard-<family>).
#
# The sources must define `const StoreModule& <family>_store_module()`
# (module.cpp) and the family must be in src/stores/registry.cpp's list.
set(INSTANCE_STORE_MODULE_DIR ${CMAKE_INSTALL_LIBDIR}/instance-guard/stores)
set(INSTANCE_STORE_MODULE_BUILD_DIR ${PROJECT_BINARY_DIR}/stores)
set_property(GLOBAL PROPERTY INSTANCE_STORE_FAMILIES "")

function(instance_add_store family)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBS;DEPENDS;PKG_CONFIG;DEBIAN")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_SOURCES)
    message(FATAL_ERROR "instance_add_store(${family}): needs SOURCES; unknown arguments "
                        "${arg_UNPARSED_ARGUMENTS}")
  endif()
  set(objects instance_${family}_objects)
  add_library(${objects} OBJECT ${arg_SOURCES})
  target_compile_definitions(${objects} PRIVATE INSTANCE_BUILDING)
  # The core's headers and flags only: an object library links nothing.
  target_link_libraries(${objects} PRIVATE instance_core ${arg_LIBS}
                        $<BUILD_INTERFACE:instance_warnings>)

  add_library(instance_${family} $<TARGET_OBJECTS:${objects}>)
  add_library(instance::${family} ALIAS instance_${family})
  target_compile_features(instance_${family} PUBLIC cxx_std_23)
  # LIBS before the core: a static consumer's link line then puts the core
  # after what uses it (src/net uses the core but does not link it, for the
  # module's sake).
  target_link_libraries(instance_${family} PRIVATE ${arg_LIBS} PUBLIC instance_core)
  instance_install_library(instance_${family} DEPENDS ${arg_DEPENDS}
                           PKG_CONFIG ${arg_PKG_CONFIG} DEBIAN ${arg_DEBIAN})

  set(module instance_store_${family})
  add_library(${module} MODULE ${PROJECT_SOURCE_DIR}/src/stores/module_entry.cpp
                               $<TARGET_OBJECTS:${objects}>)
  target_compile_definitions(${module} PRIVATE INSTANCE_BUILDING
                             INSTANCE_STORE_MODULE_FUNCTION=${family}_store_module)
  target_include_directories(${module} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_features(${module} PRIVATE cxx_std_23)
  target_link_libraries(${module} PRIVATE ${arg_LIBS} $<BUILD_INTERFACE:instance_warnings>)
  if(BUILD_SHARED_LIBS)  # the core is a library of its own: link it
    target_link_libraries(${module} PRIVATE instance_core)
  endif()
  set_target_properties(${module} PROPERTIES PREFIX "" OUTPUT_NAME ${family}
                        LIBRARY_OUTPUT_DIRECTORY ${INSTANCE_STORE_MODULE_BUILD_DIR})
  if(INSTANCE_INSTALL)
    if(BUILD_SHARED_LIBS)
      set_target_properties(${module} PROPERTIES INSTALL_RPATH "$ORIGIN/../..")
    endif()
    install(TARGETS ${module} LIBRARY DESTINATION ${INSTANCE_STORE_MODULE_DIR}
            COMPONENT store-${family})
  endif()
  set_property(GLOBAL APPEND PROPERTY INSTANCE_STORE_FAMILIES ${family})
endfunction()
