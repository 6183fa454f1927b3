// Same-host liveness that covers a process's descendants.
//
// A record written on this host whose pid is gone counts as stale at once
// (no need to wait out its ttl). That is only right if nothing the holder
// started still runs: `instance-guard run` is killed with SIGKILL, its child
// dies with it (PDEATHSIG), but a grandchild the child started keeps working
// on the shared state. So a process that hands its claim to children holds a
// liveness lock: a file named after its pid in a shared folder, flock()ed
// through a descriptor that is not close-on-exec, so every descendant
// inherits it. The lock is released only when the last of them exits (or
// closes the descriptor). A record whose pid is gone still counts as live
// while its lock is held, until its ttl runs out as usual.
//
// The folder is /tmp/instance-guard-live (mode 1777), or
// $INSTANCE_GUARD_LIVENESS_DIR. When it cannot be used (another user made it
// private, a read-only /tmp), holding fails and take-overs on this host rely
// on the pid alone, as before; the checks only ever make a record count as
// live for longer, never shorter.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"

namespace instance {

// The folder liveness locks live in.
INSTANCE_EXPORT std::filesystem::path liveness_dir();

// This process's liveness lock, held while the object (or a descriptor a
// child inherited) lives. Destroying it unlocks and removes the file: only do
// that once the children are gone.
class INSTANCE_EXPORT LivenessLock {
 public:
  LivenessLock() = default;
  LivenessLock(LivenessLock&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}
  LivenessLock& operator=(LivenessLock&& other) noexcept;
  ~LivenessLock();

  // Takes the lock for this process's pid (its descriptor is inherited across
  // fork and exec).
  static Result<LivenessLock> hold();

  bool held() const noexcept { return fd_ >= 0; }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

// Whether some process holds the liveness lock of `pid` (false when there is
// no such lock, or it cannot be read).
INSTANCE_EXPORT bool liveness_lock_held(std::int64_t pid);

// This host across its boots. The kernel's boot id
// (/proc/sys/kernel/random/boot_id) changes with every boot; the machine id
// (/etc/machine-id, else /var/lib/dbus/machine-id: machine-id(5)) stays for
// the installation's life, and is only as unique as the images it was
// cloned from let it be. Each is "" when it cannot be read.
INSTANCE_EXPORT std::string this_boot_id();
INSTANCE_EXPORT std::string this_machine_id();
// When this boot began on the real-time clock: now less CLOCK_BOOTTIME (which
// counts suspended time too).
INSTANCE_EXPORT WallTime this_boot_began();

}  // namespace instance
