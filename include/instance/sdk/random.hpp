// Random names, nonces and tokens, drawn from the operating system's random
// source (getrandom(2), else /dev/urandom), never from a seeded generator:
// two processes, or two stores in one process, must not draw the same
// nonce, or each would take the other's lock, version or probe for its own.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "instance/export.hpp"

namespace instance {

// Fills `out` from the operating system's random source. Throws
// std::system_error only when neither getrandom(2) nor /dev/urandom can be
// read (a kernel older than 3.17 without /dev mounted).
INSTANCE_EXPORT void random_bytes(std::span<unsigned char> out);

// `bytes` random bytes as lowercase hex (2 x bytes characters).
INSTANCE_EXPORT std::string random_hex(std::size_t bytes);

}  // namespace instance
