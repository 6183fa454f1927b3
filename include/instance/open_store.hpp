// Opens a store from a URL: parses the URL into the store's own options and
// builds the store from them (each store can also be built from its options
// directly).
//
//   file:///abs/path, /abs/path, rel/path   the directory store
//   memory:                                 a new, private in-memory store
//   any scheme of known_store_schemes()     its store module ("redis://": redis)
//
// The first two are part of the core; every other family is a store module,
// linked in and registered, or loaded on the first URL of its scheme
// (instance/sdk/store_module.hpp says how and from where; the registry's
// list of families, src/stores/registry.cpp, says which module a scheme
// needs).
//
// Credentials never come from the URL's visible text in a way that shows in
// `ps`: they are read from files named in the options or from the
// environment (INSTANCE_GUARD_USER, INSTANCE_GUARD_PASSWORD,
// INSTANCE_GUARD_TOKEN), and never appear in describe(), logs or errors.
//
// Errc::invalid for a URL no store understands (the message lists the
// schemes known). Errc::unsupported when the scheme's module is not there
// (the message names the scheme, the folder searched and the Debian package
// that has the module), cannot be loaded (the loader's reason) or was built
// for another ABI (both versions).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/logger.hpp"
#include "instance/store.hpp"

namespace instance {

struct OpenOptions {
  std::shared_ptr<Logger> logger;
  // Remote stores: credentials and TLS. Empty means "not given".
  std::string user;                     // basic auth user (or INSTANCE_GUARD_USER)
  std::filesystem::path password_file;  // basic auth password or app token
  std::filesystem::path token_file;     // bearer token
  std::filesystem::path ca_file;        // extra CA bundle for TLS
  std::filesystem::path client_cert;    // TLS client certificate (PEM)
  std::filesystem::path client_key;     // its private key (PEM); empty: in client_cert
  bool insecure = false;                // skip TLS verification (warned about)
  // The caller only reads (`status`): the store never writes, so it neither
  // creates folders nor probes its capabilities by writing (capabilities()
  // then answers capabilities_not_probed() where it would have had to).
  bool read_only = false;
  // Remote stores with folders (WebDAV): create every missing folder of the
  // store URL's path. Without it, a store URL whose parent folder does not
  // exist (a misspelled space or path) is refused; the store's own folder is
  // created on first use either way.
  bool create_path = false;
  // Where store modules are loaded from; empty: INSTANCE_GUARD_STORE_MODULES,
  // else the installed folder (instance/sdk/store_module.hpp).
  std::filesystem::path module_folder;
  // Environment lookup for credentials and settings; ::getenv when empty.
  std::function<std::optional<std::string>(std::string_view)> getenv;
};

INSTANCE_EXPORT Result<std::shared_ptr<Store>> open_store(std::string_view url,
                                                          const OpenOptions& options = {});

// Every URL scheme open_store() knows, lower case, "file" and "memory" first,
// then each store family's, whether its module is installed or not: what
// help texts and messages list.
INSTANCE_EXPORT std::vector<std::string_view> known_store_schemes();

}  // namespace instance
