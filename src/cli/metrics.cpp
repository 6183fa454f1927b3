#include "metrics.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <system_error>

#include "instance/clock.hpp"
#include "instance/time.hpp"

namespace instance::cli {
namespace {

// A label value as the exposition format wants it: backslash, double quote
// and newline escaped.
std::string label_value(std::string_view raw) {
  std::string out;
  for (const char c : raw) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Seconds with up to microseconds, as a plain decimal number.
std::string seconds(double value) {
  char buffer[64];
  const auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, 6);
  return ec == std::errc{} ? std::string(buffer, end) : std::string("NaN");
}

std::string seconds(Duration d) { return seconds(std::chrono::duration<double>(d).count()); }

}  // namespace

void MetricsFile::claimed(const Claim& claim) {
  std::lock_guard lock(mu_);
  claim_ = &claim;
  id_ = claim.id();
  mode_ = std::string(to_string(claim.mode()));
  epoch_ = claim.epoch();
  started_ = claim.record().started_at;
  held_ = true;
  write();
}

void MetricsFile::renewed(const RenewalReport& report) {
  std::lock_guard lock(mu_);
  ++(report.renewed ? renewed_ : failed_);
  last_took_ = report.took;
  write();
}

void MetricsFile::ended() {
  std::lock_guard lock(mu_);
  if (!held_ && claim_ == nullptr) return;
  held_ = false;
  claim_ = nullptr;
  write();
}

std::string MetricsFile::text() const {
  const std::string id = "id=\"" + label_value(id_) + "\"";
  std::string out;
  auto metric = [&](std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  };
  metric("instance_guard_claim_held", "gauge", "1 while this guard holds its claim, else 0.");
  out += "instance_guard_claim_held{" + id + "} " + (held_ ? "1" : "0") + "\n";
  metric("instance_guard_claim_mode", "gauge", "The claim's mode in force.");
  out += "instance_guard_claim_mode{" + id + ",mode=\"" + mode_ + "\"} 1\n";
  if (epoch_) {
    metric("instance_guard_claim_epoch", "gauge", "The claim's fencing epoch.");
    out += "instance_guard_claim_epoch{" + id + "} " + std::to_string(*epoch_) + "\n";
  }
  if (started_) {
    metric("instance_guard_claim_start_time_seconds", "gauge",
           "When the claim was granted, in seconds since the Unix epoch.");
    out += "instance_guard_claim_start_time_seconds{" + id + "} " +
           seconds(started_->time_since_epoch()) + "\n";
  }
  metric("instance_guard_renewals_total", "counter", "Renewals, by result.");
  out += "instance_guard_renewals_total{" + id + ",result=\"renewed\"} " +
         std::to_string(renewed_) + "\n";
  out += "instance_guard_renewals_total{" + id + ",result=\"failed\"} " + std::to_string(failed_) +
         "\n";
  if (last_took_) {
    metric("instance_guard_last_renewal_duration_seconds", "gauge",
           "How long the last renewal took.");
    out +=
        "instance_guard_last_renewal_duration_seconds{" + id + "} " + seconds(*last_took_) + "\n";
  }
  if (held_ && claim_ != nullptr) {
    if (const auto deadline = claim_->fence_deadline()) {
      metric("instance_guard_fence_deadline_seconds", "gauge",
             "Seconds until the guard fences itself without a successful renewal.");
      out += "instance_guard_fence_deadline_seconds{" + id + "} " +
             seconds(*deadline - system_clock()->monotonic()) + "\n";
    }
  }
  return out;
}

void MetricsFile::write() {
  const std::filesystem::path temporary =
      path_.string() + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  std::error_code ec;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text();
    out.flush();
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) std::filesystem::rename(temporary, path_, ec);
  if (!ec) return;
  std::error_code ignored;
  std::filesystem::remove(temporary, ignored);
  const LogLevel level = warned_ ? LogLevel::debug : LogLevel::warn;
  warned_ = true;
  const LogField fields[] = {{"file", path_.string()}, {"error", ec.message()}};
  log_.log(level, "cannot write the metrics file; the claim goes on without it", fields);
}

}  // namespace instance::cli
