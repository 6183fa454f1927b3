// Store modules: how a family of store URL schemes joins open_store().
//
// open_store() knows two families itself: file:// (and plain paths, the
// directory store) and memory:. Every other family (WebDAV and OpenCloud,
// CS3, etcd, PostgreSQL, Redis) comes as a StoreModule, reached one of two
// ways, both through the one registry below:
//
//   * Linked in: a program links the store's library (instance::etcd, ...)
//     and registers it before opening a URL of its scheme:
//
//       instance::register_store_module(instance::etcd_store_module());
//
//   * Loaded: on the first open_store() of a scheme nobody registered, the
//     registry loads the shared object `<folder>/<family>.so` (dlopen) and
//     calls its one entry point, instance_store_module(), which answers the
//     module's StoreModule. The folder is, first found: OpenOptions::
//     module_folder, the environment variable INSTANCE_GUARD_STORE_MODULES,
//     the installed folder `${libdir}/instance-guard/stores`. Each family is
//     packaged on its own (Debian: instance-guard-<family>), so a host
//     carries only the client libraries of the stores it uses.
//
// A loaded module runs inside the program and uses the core's symbols (the
// Store base class, Error, Logger, ...) from the program itself: a program
// that loads modules exports them (instance::core's CMake target arranges it
// for executables that link it statically: cmake/instance-core.dynamic-list).
//
// Compatibility: a module and the core share C++ types, so a module works
// only with a core of the same kStoreModuleAbi. The registry reads the
// `abi` member first (it is the first member, in every version) and refuses
// a module of another ABI with a message naming both. Change kStoreModuleAbi
// whenever Store (and Capabilities), OpenOptions, Error, Logger, Clock, StartupBudget or
// StoreModule change their layout or virtual functions.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/open_store.hpp"
#include "instance/store.hpp"

namespace instance {

inline constexpr std::uint32_t kStoreModuleAbi = 7;

struct StoreModule {
  // Always the first member: the registry reads it before anything else.
  std::uint32_t abi = kStoreModuleAbi;
  // The family's name, as in its file name and Debian package ("etcd").
  std::string_view family;
  // The URL schemes it opens, lower case ("etcd", "etcds").
  std::span<const std::string_view> schemes;
  // Opens a URL of one of those schemes. Errors as open_store() documents.
  Result<std::shared_ptr<Store>> (*open)(std::string_view url,
                                         const OpenOptions& options) = nullptr;
};

// Makes `module`'s schemes open through open_store(). The module must live
// as long as the program (the stores' own modules are static objects).
// Registering a family again is a no-op; Errc::invalid for a module of
// another ABI, without schemes or an open function, or for a scheme another
// family already opens.
INSTANCE_EXPORT Result<void> register_store_module(const StoreModule& module);

// A StoreModule::open made of a store's URL parser and its factory, the
// shape every store has: `.open = open_parsed<parse_etcd_url, make_etcd_store>`.
template <auto parse, auto make>
Result<std::shared_ptr<Store>> open_parsed(std::string_view url, const OpenOptions& options) {
  auto parsed = parse(url, options);
  if (!parsed) return std::unexpected(parsed.error());
  return make(std::move(*parsed));
}

// The name of a loadable module's one entry point.
inline constexpr const char* kStoreModuleEntryPoint = "instance_store_module";

}  // namespace instance

// Defines a loadable module's entry point, answering `module_function()` (a
// function returning const StoreModule&). Only a module's shared object has
// it: src/stores/module_entry.cpp.
#define INSTANCE_STORE_MODULE_ENTRY(module_function)                               \
  extern "C" __attribute__((visibility("default"))) const ::instance::StoreModule* \
  instance_store_module() {                                                        \
    return &module_function();                                                     \
  }
