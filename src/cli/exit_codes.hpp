// Exit codes of the instance-guard tool (sysexits.h), and how library errors
// map onto them. The tool's callers (supervisors, scripts) branch on these.
#pragma once

#include "instance/error.hpp"

namespace instance::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFound = 1;         // history: an overlap, or an epoch that did not grow
inline constexpr int kExitUsage = 64;        // EX_USAGE: bad flags or arguments
inline constexpr int kExitNoInput = 66;      // EX_NOINPUT: release of a record that is not there
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: the store cannot be used
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: internal error
inline constexpr int kExitCantCreate = 73;   // EX_CANTCREAT: an output file cannot be written
inline constexpr int kExitTempFail = 75;     // EX_TEMPFAIL: another live instance holds the store
inline constexpr int kExitConfig = 78;       // EX_CONFIG: bad store URL or configuration
// Like a shell: 127 when the command is not found, 126 when it cannot run.
inline constexpr int kExitNotFound = 127;
inline constexpr int kExitCannotExecute = 126;

// The shell's status for a death by signal N.
constexpr int exit_code_for_signal(int signal) noexcept { return 128 + signal; }

// The exit code for a library error:
//   another_instance, locked                      -> 75
//   unavailable, timeout, permission, no_space,   -> 69 (the store, as configured,
//   malformed                                        cannot be used; retry may help;
//                                                    malformed: the store holds or
//                                                    answers bytes that cannot be read,
//                                                    which is never an internal error)
//   invalid, unsupported                          -> 78
//   not_found                                     -> 66
//   anything else                                 -> 70
constexpr int exit_code_for(Errc code) noexcept {
  switch (code) {
    case Errc::another_instance:
    case Errc::locked:
      return kExitTempFail;
    case Errc::unavailable:
    case Errc::timeout:
    case Errc::permission:
    case Errc::no_space:
    case Errc::malformed:
      return kExitUnavailable;
    case Errc::invalid:
    case Errc::unsupported:
      return kExitConfig;
    case Errc::not_found:
      return kExitNoInput;
    default:
      return kExitSoftware;
  }
}

}  // namespace instance::cli
