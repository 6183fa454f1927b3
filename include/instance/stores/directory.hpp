// The directory store: the embedded default, one file per key under a root
// folder on a local file system.
//
// A key maps to the same relative path under the root (its escaped segments
// are always safe file names). Writes are atomic: a temporary file in
// `<root>/tmp~` (a name no key can produce, outside instances/), fsync,
// rename into place, fsync of the folder. create() never clobbers (link or
// RENAME_NOREPLACE). Paths through symbolic links are refused. A file that is
// oversized or not a regular file is reported as Errc::malformed and left
// alone. The root and folders are created on first write.
#pragma once

#include <filesystem>
#include <memory>

#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/store.hpp"

namespace instance {

struct DirectoryStoreOptions {
  std::filesystem::path root;  // must be absolute
};

INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_directory_store(DirectoryStoreOptions options);

}  // namespace instance
