// `run --metrics-file PATH`: the claim's state in the Prometheus text
// exposition format, for node_exporter's textfile collector (or any scraper
// that reads a file). Written at the claim, after each renewal and when the
// claim ends (lost or stood down), never between: no wake-up of its own.
// Each write is whole: a temporary file beside PATH, then rename(2), so a
// scrape never reads half a file. A write that fails is logged and changes
// nothing else: the claim never depends on its metrics.
//
// Metrics (every one labelled id="<the claim's id>"):
//   instance_guard_claim_held                    1 while held, 0 once lost or stood down
//   instance_guard_claim_mode{mode}              1 for the mode in force
//   instance_guard_claim_epoch                   the fencing epoch (exclusive)
//   instance_guard_claim_start_time_seconds      when the claim was granted (Unix time)
//   instance_guard_renewals_total{result}        renewals "renewed" and "failed"
//   instance_guard_last_renewal_duration_seconds how long the last renewal took
//   instance_guard_fence_deadline_seconds        seconds until the guard fences itself
//                                                without a renewal (absent in announce)
//
// Thread safety: every member may be called from any thread (renewals come
// from the guard's renewal thread).
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "instance/guard.hpp"
#include "instance/logger.hpp"

namespace instance::cli {

class MetricsFile {
 public:
  MetricsFile(std::filesystem::path path, Logger& log) : path_(std::move(path)), log_(log) {}
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  // The claim is held; `claim` must outlive ended().
  void claimed(const Claim& claim);
  void renewed(const RenewalReport& report);
  // Lost or stood down: held 0, and the claim is no longer read.
  void ended();

 private:
  // The exposition text of the state now (mu_ held).
  std::string text() const;
  void write();  // mu_ held

  const std::filesystem::path path_;
  Logger& log_;
  mutable std::mutex mu_;
  const Claim* claim_ = nullptr;  // while held
  std::string id_;
  std::string mode_;
  std::optional<std::uint64_t> epoch_;
  std::optional<WallTime> started_;
  bool held_ = false;
  std::uint64_t renewed_ = 0;
  std::uint64_t failed_ = 0;
  std::optional<Duration> last_took_;
  bool warned_ = false;  // a failed write was logged at warn once
};

}  // namespace instance::cli
