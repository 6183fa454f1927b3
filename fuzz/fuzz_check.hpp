// Shared by the fuzz targets: FUZZ_CHECK(cond, what) reports a broken
// invariant with the inputs involved and aborts, so libFuzzer keeps the input
// as a crash file (crash-<sha1>) that reproduces it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace instance::fuzz {

// Bytes as C-escaped text, for the report.
inline std::string shown(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '"') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

[[noreturn]] inline void broken(const char* file, int line, const char* cond,
                                const std::string& what) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n  %s\n", file, line, cond, what.c_str());
  std::abort();
}

// True when every byte is printable ASCII (what messages that echo input promise).
inline bool printable_ascii(std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c >= 0x7F) return false;
  }
  return true;
}

}  // namespace instance::fuzz

#define FUZZ_CHECK(cond, what)                                                \
  do {                                                                        \
    if (!(cond)) ::instance::fuzz::broken(__FILE__, __LINE__, #cond, (what)); \
  } while (false)
