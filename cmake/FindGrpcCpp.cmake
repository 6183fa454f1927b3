# FindGrpcCpp: gRPC C++ through its pkg-config file, grpc++.pc (Debian:
# libgrpc++-dev), for the CS3 store. Debian 12's gRPC CMake package refers to
# targets it does not ship everywhere; its pkg-config file is the dependable
# way in. Used by the build (src/stores/cs3) and, installed next to
# InstanceGuardConfig.cmake, by consumers of a static instance::cs3, so both
# sides link the same target.
#
# Gives GrpcCpp_FOUND, GRPCPP_VERSION and the imported target
# PkgConfig::GRPCPP. Needs pkg-config (Debian: pkgconf).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(GRPCPP QUIET IMPORTED_TARGET grpc++)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(GrpcCpp REQUIRED_VARS GRPCPP_LINK_LIBRARIES
                                  VERSION_VAR GRPCPP_VERSION)
