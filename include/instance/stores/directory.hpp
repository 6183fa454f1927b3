// The directory store: the embedded default, one file per key under a root
// folder on a local file system.
//
// A key maps to the same relative path under the root (its escaped segments
// are always safe file names). Writes are atomic: a temporary file in
// `<root>/tmp~` (a name no key can produce, outside instances/), renamed
// into place; with DirectoryStoreOptions::sync the file is synced before and
// the folder after, and a removal syncs its folder. create() never clobbers (link or
// RENAME_NOREPLACE). Paths through symbolic links are refused. A file that is
// oversized or not a regular file is reported as Errc::malformed and left
// alone. The root and folders are created on first write.
//
// Native leases (lock / refresh_lock / unlock): an OFD lock (fcntl
// F_OFD_SETLK, exclusive, whole file) on `<root>/locks~/<key's escaped
// segments joined by '~'>`, a name no key can produce, so a lease never shows
// in list() and get() of its key is not_found. The store keeps the locked
// descriptor open until unlock(), and NOT close-on-exec: programs the holder
// starts inherit it, so the lock lasts until the holder and everything it
// started are gone (a guard killed outright cannot free the lock while its
// child still runs). The kernel releases the lock when the last of them
// dies, so a crashed holder on this host is replaced at once. The ttl is ignored: an OFD lock does
// not expire, it lives exactly as long as its holder (refresh_lock only checks that the lock file
// is still the one locked). Two store objects, threads or processes exclude
// each other; a lock is not re-entrant (a second lock() of a held key is
// Errc::locked even from the same store). Tokens ("ofd:<n>") are only
// meaningful to the store object that issued them. A child forked (with or
// without exec) shares the held lock until it exits or the lock is unlocked. OFD
// locks need Linux 3.15+ and a local file system (on NFS they become NFS
// locks and depend on the server's lock manager).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/store.hpp"

namespace instance {

struct DirectoryStoreOptions {
  std::filesystem::path root;  // must be absolute
  // Whether every write and removal is synced to disk (fsync of the file
  // and of its folder) before it returns. nullopt, the default: synced
  // unless the root is on a local file system (ext2/3/4, XFS, Btrfs, F2FS,
  // ZFS, bcachefs, tmpfs, ramfs, overlayfs), where the kernel's lock is the
  // authority, only this host can hold it, and a crash ends every holder
  // with the boot it ran in. Without syncs the fencing epoch is still
  // durable (numbered in the lock file, with a synced reservation every
  // kEpochReserve claims and at the first claim of each boot), and a
  // document that a crash left unreadable is recognised as written before
  // this boot (Document::from_earlier_boot). Force true for a local folder
  // that other hosts reach (exported over NFS): file:///path?sync=on.
  std::optional<bool> sync;
  // Tests only: this boot's id and when it began. Empty / nullopt: the
  // kernel's (/proc/sys/kernel/random/boot_id; now - CLOCK_BOOTTIME).
  std::string boot_id;
  std::optional<std::chrono::system_clock::time_point> booted_at;
};

// How many epochs a lock file reserves with one synced write, on a root
// without syncs (DirectoryStoreOptions::sync).
inline constexpr std::uint64_t kEpochReserve = 1024;

INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_directory_store(DirectoryStoreOptions options);

}  // namespace instance
