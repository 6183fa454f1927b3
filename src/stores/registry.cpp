// open_store(): URL -> store, through the one registry of store families.
// The core's own families (file://, memory:) are always there; the others
// are registered by a program that links them, or loaded from their module
// on the first URL of their scheme (instance/sdk/store_module.hpp).
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "instance/open_store.hpp"
#include "instance/sdk/credentials.hpp"
#include "instance/sdk/store_module.hpp"
#include "instance/stores/directory.hpp"
#include "instance/stores/memory.hpp"

#ifndef INSTANCE_STORE_MODULE_FOLDER
#error "INSTANCE_STORE_MODULE_FOLDER (the installed store modules' folder) must be defined"
#endif

namespace instance {
namespace {

constexpr std::string_view kModuleFolderEnv = "INSTANCE_GUARD_STORE_MODULES";

// The families that come as modules: which module opens a scheme, so the
// registry knows which file to load (and which package to name) before the
// module is there to say. The module itself declares its schemes; a scheme
// here that its module does not register is an error when it is opened.
struct KnownFamily {
  std::string_view family;
  std::array<std::string_view, 4> schemes;
};
constexpr std::array<KnownFamily, 6> kModuleFamilies = {{
    {"webdav", {"webdav", "webdavs", "opencloud"}},
    {"cs3", {"cs3", "cs3s", "opencloud+cs3", "opencloud+cs3s"}},
    {"etcd", {"etcd", "etcds"}},
    {"postgres", {"postgres", "postgresql"}},
    {"redis", {"redis", "rediss", "redis+sentinel"}},
    {"zookeeper", {"zk"}},
}};

std::string_view scheme_of(std::string_view url) {
  const auto colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0) return {};
  const auto scheme = url.substr(0, colon);
  for (char c : scheme) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '-' || c == '.';
    if (!ok) return {};
  }
  return scheme;
}

// Percent-decodes a file URL's path; refuses %00 and malformed escapes.
Result<std::string> decode_path(std::string_view path) {
  auto out = percent_decode(path);
  if (!out) return fail(Errc::invalid, "malformed percent escape in file URL path");
  if (out->find('\0') != std::string::npos) {
    return fail(Errc::invalid, "file URL path contains %00");
  }
  return std::move(*out);
}

Result<std::shared_ptr<Store>> open_directory(std::string_view url, const OpenOptions&) {
  std::string path;
  std::optional<bool> sync;
  if (url.size() >= 7 && std::equal(url.begin(), url.begin() + 7, "file://", [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == b;
      })) {
    auto rest = url.substr(7);
    if (!rest.starts_with('/')) {
      if (rest.starts_with("localhost/")) {
        rest.remove_prefix(9);
      } else {
        return fail(Errc::invalid,
                    "file URL must be file:///absolute/path (no host): " + redact_url(url));
      }
    }
    if (const auto q = rest.find('?'); q != std::string_view::npos) {
      // The one query a folder takes: whether its writes are synced
      // (DirectoryStoreOptions::sync).
      const auto query = rest.substr(q + 1);
      if (query == "sync=on") {
        sync = true;
      } else if (query == "sync=off") {
        sync = false;
      } else if (query != "sync=auto") {
        return fail(
            Errc::invalid,
            "a file URL takes one query, sync=on, sync=off or sync=auto; got " + redact_url(url));
      }
      rest = rest.substr(0, q);
    }
    if (rest.find('#') != std::string_view::npos) {
      return fail(Errc::invalid, "file URL must not have a fragment");
    }
    auto decoded = decode_path(rest);
    if (!decoded) return std::unexpected(decoded.error());
    path = std::move(*decoded);
  } else {
    path = std::string(url);
  }
  if (path.empty()) return fail(Errc::invalid, "empty store path");
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path, ec);
  if (ec) return fail(Errc::invalid, "cannot resolve store path " + path + ": " + ec.message());
  return make_directory_store({.root = absolute.lexically_normal(), .sync = sync});
}

Result<std::shared_ptr<Store>> open_memory(std::string_view, const OpenOptions&) {
  return make_memory_store();
}

constexpr std::array<std::string_view, 1> kDirectorySchemes = {"file"};
constexpr std::array<std::string_view, 1> kMemorySchemes = {"memory"};
const StoreModule kDirectoryModule{
    .family = "directory", .schemes = kDirectorySchemes, .open = open_directory};
const StoreModule kMemoryModule{.family = "memory", .schemes = kMemorySchemes, .open = open_memory};

class Registry {
 public:
  Registry() {
    (void)add(kDirectoryModule);
    (void)add(kMemoryModule);
  }

  Result<void> add(const StoreModule& module) {
    std::lock_guard lock(mutex_);
    return add_locked(module);
  }

  // The module that opens `scheme`, loading its family's module when no
  // family registered it yet.
  Result<const StoreModule*> find(const std::string& scheme, const OpenOptions& options) {
    std::lock_guard lock(mutex_);
    if (auto it = by_scheme_.find(scheme); it != by_scheme_.end()) return it->second;
    const auto known = std::ranges::find_if(kModuleFamilies, [&](const KnownFamily& f) {
      return std::ranges::find(f.schemes, scheme) != f.schemes.end();
    });
    if (known == kModuleFamilies.end()) {
      return fail(Errc::invalid, "unsupported store URL scheme \"" + scheme +
                                     "\" (known: " + known_schemes() + ")");
    }
    if (auto loaded = load_locked(known->family, options); !loaded) {
      return std::unexpected(loaded.error());
    }
    if (auto it = by_scheme_.find(scheme); it != by_scheme_.end()) return it->second;
    return fail(Errc::unsupported, "the " + std::string(known->family) +
                                       " store module does not open \"" + scheme + "\" URLs");
  }

 private:
  Result<void> add_locked(const StoreModule& module) {
    if (module.abi != kStoreModuleAbi) return abi_mismatch(module.family, module.abi);
    if (module.schemes.empty() || module.open == nullptr || module.family.empty()) {
      return fail(Errc::invalid, "store module \"" + std::string(module.family) +
                                     "\" declares no schemes, name or open function");
    }
    if (std::ranges::find(families_, module.family) != families_.end()) return {};
    for (const auto scheme : module.schemes) {
      if (auto it = by_scheme_.find(std::string(scheme)); it != by_scheme_.end()) {
        return fail(Errc::invalid, "store module \"" + std::string(module.family) + "\" opens \"" +
                                       std::string(scheme) + "\" URLs, which module \"" +
                                       std::string(it->second->family) + "\" opens already");
      }
    }
    for (const auto scheme : module.schemes) by_scheme_[std::string(scheme)] = &module;
    families_.emplace_back(module.family);
    return {};
  }

  static std::unexpected<Error> abi_mismatch(std::string_view family, std::uint32_t abi) {
    return fail(Errc::unsupported,
                "store module \"" + std::string(family) + "\" was built for ABI " +
                    std::to_string(abi) + ", this instance-guard has ABI " +
                    std::to_string(kStoreModuleAbi) + "; install the module of the same version");
  }

  static std::string known_schemes() {
    std::string out;
    for (const auto scheme : known_store_schemes()) {
      if (!out.empty()) out += ", ";
      out += std::string(scheme) + (scheme == "memory" ? ":" : "://");
    }
    return out;
  }

  static std::filesystem::path module_folder(const OpenOptions& options) {
    if (!options.module_folder.empty()) return options.module_folder;
    if (auto env = credential_env(options, kModuleFolderEnv)) return *env;
    return INSTANCE_STORE_MODULE_FOLDER;
  }

  Result<void> load_locked(std::string_view family, const OpenOptions& options) {
    const auto folder = module_folder(options);
    const auto file = folder / (std::string(family) + ".so");
    const std::string where = "the " + std::string(family) + " store module " + file.string();
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      return fail(Errc::unsupported,
                  "no store module for " + std::string(family) + " URLs: " + file.string() +
                      " does not exist (install the Debian package instance-guard-" +
                      std::string(family) + ", or point " + std::string(kModuleFolderEnv) +
                      " at the folder that holds " + std::string(family) + ".so)");
    }
    // RTLD_LOCAL: a module's client libraries stay its own. Never closed: its
    // stores may outlive every caller.
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      return fail(Errc::unsupported,
                  "cannot load " + where + ": " + (why != nullptr ? why : "unknown reason"));
    }
    using Entry = const StoreModule* (*)();
    auto* entry = reinterpret_cast<Entry>(::dlsym(handle, kStoreModuleEntryPoint));
    if (entry == nullptr) {
      return fail(Errc::unsupported, "cannot load " + where + ": it has no " +
                                         std::string(kStoreModuleEntryPoint) + " entry point");
    }
    const StoreModule* module = entry();
    if (module == nullptr) {
      return fail(Errc::unsupported, "cannot load " + where + ": its entry point answered nothing");
    }
    // The first member of every version's StoreModule: safe to read first.
    if (module->abi != kStoreModuleAbi) return abi_mismatch(family, module->abi);
    if (module->family != family) {
      return fail(Errc::unsupported, "cannot load " + where + ": it is the module of \"" +
                                         std::string(module->family) + "\"");
    }
    return add_locked(*module);
  }

  std::mutex mutex_;
  std::map<std::string, const StoreModule*, std::less<>> by_scheme_;
  std::vector<std::string_view> families_;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

std::vector<std::string_view> known_store_schemes() {
  std::vector<std::string_view> out{kDirectorySchemes.begin(), kDirectorySchemes.end()};
  out.insert(out.end(), kMemorySchemes.begin(), kMemorySchemes.end());
  for (const auto& family : kModuleFamilies) {
    for (const auto scheme : family.schemes) {
      if (!scheme.empty()) out.push_back(scheme);
    }
  }
  return out;
}

Result<void> register_store_module(const StoreModule& module) { return registry().add(module); }

Result<std::shared_ptr<Store>> open_store(std::string_view url, const OpenOptions& options) {
  std::string scheme(scheme_of(url));  // schemes are case-insensitive (RFC 3986)
  std::ranges::transform(scheme, scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme.empty()) scheme = "file";  // a plain path
  auto module = registry().find(scheme, options);
  if (!module) {
    return fail(module.error().code, module.error().message + ", in " + shown_store_url(url));
  }
  return (*module)->open(url, options);
}

}  // namespace instance
