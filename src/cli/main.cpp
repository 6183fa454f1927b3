// instance-guard: runs only one instance of a service against one state
// store. This file only parses the command line (CLI11) and dispatches to the
// subcommands (commands.hpp); usage errors end with 64, --help and --version
// with 0.

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "instance/open_store.hpp"
#include "log.hpp"

namespace {

using namespace instance::cli;

// Flags for finding and reaching the store, shared by every subcommand.
void add_store_flags(CLI::App& app, StoreFlags& flags) {
  // The schemes come from the store registry: a new store family needs no change here.
  std::string schemes;
  for (const auto scheme : instance::known_store_schemes()) {
    if (scheme == "memory") continue;  // for tests: one process only
    schemes += ", " + std::string(scheme) + (scheme == "file" ? ":///abs/path" : "://...");
  }
  app.add_option("--store", flags.store,
                 "Store URL: a plain path" + schemes +
                     " (man instance-guard: STORE URLS) [env: INSTANCE_GUARD_STORE] "
                     "[default: ${XDG_STATE_HOME:-~/.local/state}/instance-guard/NAME]");
  app.add_option("--name", flags.name,
                 "Service name picking the default store folder (run: the command's basename)");
  auto* creds = app.add_option_group("credentials", "Remote stores (secrets only from files)");
  creds->add_option("--user", flags.user,
                    "User name; cs3: the service account id [env: INSTANCE_GUARD_USER, "
                    "INSTANCE_GUARD_CS3_ID]");
  creds
      ->add_option("--password-file", flags.password_file,
                   "File holding the password or app token; cs3: the service account secret "
                   "[env: INSTANCE_GUARD_PASSWORD, INSTANCE_GUARD_CS3_SECRET(_FILE)]")
      ->check(CLI::ExistingFile);
  creds
      ->add_option("--token-file", flags.token_file,
                   "File holding a bearer token [env: INSTANCE_GUARD_TOKEN]")
      ->check(CLI::ExistingFile);
  creds->add_option("--ca-file", flags.ca_file, "Extra CA bundle for TLS")
      ->check(CLI::ExistingFile);
  creds
      ->add_option("--client-cert", flags.client_cert,
                   "TLS client certificate (PEM) for servers that ask for one (webdav, etcd, "
                   "postgres)")
      ->check(CLI::ExistingFile);
  creds
      ->add_option("--client-key", flags.client_key,
                   "The client certificate's private key (PEM), when not in --client-cert")
      ->check(CLI::ExistingFile);
  creds->add_flag("--insecure", flags.insecure, "Skip TLS certificate verification");
}

struct LogFlags {
  std::string level = "info";
  std::string format = "text";
};

int dispatch(int argc, char** argv) {
  CLI::App app{"Runs only one instance of a service against one state store.", "instance-guard"};
  app.set_version_flag("--version", std::string("instance-guard ") + INSTANCE_GUARD_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // --log-* may also follow the subcommand

  LogFlags log_flags;
  app.add_option("--log-level", log_flags.level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "warning", "error"}))
      ->capture_default_str();
  app.add_option("--log-format", log_flags.format, "text or json (logs go to stderr)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  RunArgs run_args;
  auto* run = app.add_subcommand(
      "run", "Claim the store, run COMMAND (no shell), stand down when it exits");
  run->footer(
      "Usage: instance-guard run [OPTIONS] -- COMMAND [ARGS...]\n"
      "Exit status: COMMAND's (128+N when it died of signal N); 75 another live instance\n"
      "holds the store (or, after --wait=TIMEOUT, still did), or the claim was lost and\n"
      "COMMAND was stopped; 69 store unreachable; 64 usage; 78 configuration; 70 internal;\n"
      "127/126 COMMAND not found / not executable.");
  add_store_flags(*run, run_args.store);
  // Only run writes a store's folders; status never writes, release removes.
  run->add_flag("--create-path", run_args.store.create_path,
                "WebDAV: create every missing folder of the store URL's path (without it, a "
                "store URL whose parent folder is missing is refused) "
                "[env: INSTANCE_GUARD_CREATE_PATH=1]");
  run->add_option("--ttl", run_args.ttl,
                  "How long the record stays live without renewal, Go syntax (90s, 2m) "
                  "[env: INSTANCE_GUARD_TTL] [default: 2m]");
  run->add_option("--id", run_args.id,
                  "This instance's id [env: INSTANCE_GUARD_ID] [default: 16 random hex digits]");
  run->add_option("--mode", run_args.mode,
                  "Claim protocol: auto (the strongest the store supports), announce (the "
                  "original, not a lock), verify or exclusive [env: INSTANCE_GUARD_MODE] "
                  "[default: auto]");
  run->add_option("--max-skew", run_args.max_skew,
                  "How far other hosts' clocks may be off; also the margin before the "
                  "self-fencing deadline [default: 5s, or ttl/10 when smaller]");
  run->add_option("--settle", run_args.settle,
                  "verify: how long the store may take to show an acknowledged write "
                  "[default: 0]");
  run->add_option("--on-lost", run_args.on_lost,
                  "When the claim is lost: terminate (SIGTERM the child's group, SIGKILL after "
                  "--kill-after, exit 75) or ignore (only log)")
      ->capture_default_str();
  run->add_option("--kill-after", run_args.kill_after,
                  "After a loss, how long the child gets between SIGTERM and SIGKILL")
      ->capture_default_str();
  run->add_option("--stand-down-timeout", run_args.stand_down_timeout,
                  "How long removing the record may take once COMMAND has exited; past it, or "
                  "at a further signal, the guard exits and the record expires on its own "
                  "[env: INSTANCE_GUARD_STAND_DOWN_TIMEOUT] [default: 10s]");
  run->add_option("--startup-timeout", run_args.startup_timeout,
                  "The one budget from start to claimed or refused while the store cannot be "
                  "reached, the stores' own retries included; past it, exit 69 "
                  "[env: INSTANCE_GUARD_STARTUP_TIMEOUT] [default: 30s]");
  run->add_option("--wait", run_args.wait,
                  "Wait for the holder to stand down or expire instead of exiting 75; "
                  "--wait=TIMEOUT gives up after TIMEOUT (exit 75) [default: forever]")
      ->expected(0, 1)
      ->default_str("");
  run->add_option("--metrics-file", run_args.metrics_file,
                  "Write the claim's metrics to FILE in the Prometheus text format (for "
                  "node_exporter's textfile collector), at the claim, after each renewal and "
                  "when the claim ends");
  run->add_flag("--no-history", run_args.no_history,
                "Write no tenure to the store's history (history/; `instance-guard history`)");
  run->add_option("--history-keep", run_args.history_keep,
                  "How many tenures the store's history keeps; older ones are removed after "
                  "a claim [default: 200]");
  run->add_option("command", run_args.command, "The command and its arguments")
      ->required()
      ->expected(-1);
  run->positionals_at_end();

  StatusArgs status_args;
  auto* status = app.add_subcommand("status", "Show every instance record in the store");
  add_store_flags(*status, status_args.store);
  status->add_flag("--json", status_args.json, "Print a JSON array");
  status->add_option("--mode", status_args.mode,
                     "Say which mode and guarantee `run --mode MODE` gets on this store "
                     "[env: INSTANCE_GUARD_MODE] [default: auto]");

  ReleaseArgs release_args;
  auto* release =
      app.add_subcommand("release", "Remove an instance's record (a live one only with --force)");
  add_store_flags(*release, release_args.store);
  release->add_option("--id", release_args.id, "The instance to release")->required();
  release->add_flag("--force", release_args.force, "Also remove a live or unreadable record");

  HistoryArgs history_args;
  auto* history = app.add_subcommand(
      "history", "List who held the store and when; flag overlaps and epochs that did not grow");
  history->footer(
      "Exit status: 0 no overlap and every epoch grew; 1 an overlap or an epoch that did not\n"
      "grow was found; 69 store unreachable; 64 usage; 78 configuration.");
  add_store_flags(*history, history_args.store);
  history->add_option("--since", history_args.since,
                      "Only tenures that were held within this long before now (Go syntax: "
                      "24h, 90m)");
  history->add_flag("--json", history_args.json, "Print a JSON object");
  history->add_option("--svg", history_args.svg,
                      "Also draw the timeline into FILE (SVG): a bar per tenure, one row per "
                      "host, hand-over gaps and overlaps marked");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  const auto logger =
      make_stderr_logger(*parse_log_format(log_flags.format), *parse_log_level(log_flags.level));
  if (run->parsed()) return run_command(run_args, logger);
  if (status->parsed()) return status_command(status_args, logger);
  if (history->parsed()) return history_command(history_args, logger);
  return release_command(release_args, logger);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "instance-guard: internal error: " << e.what() << '\n';
    return kExitSoftware;
  }
}
