// cs3-gateway-double: the CS3 gateway test double as a process, for the
// end-to-end tests (tests/e2e/cs3_run_test.sh).
//
//   cs3-gateway-double --root DIR [--client-id ID] [--secret-file FILE]
//                      [--space-id ID] [--storage-id ID] [--too-early-ms N]
//
// The service account secret comes from a file, never the command line.
// Prints one line "grpc_port=N http_port=M space=<storage>$<space>" on
// stdout once both servers listen, then serves until SIGTERM or SIGINT.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "gateway_double.hpp"

int main(int argc, char** argv) {
  instance::testing::GatewayDoubleOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--root") {
      options.root = value;
    } else if (flag == "--client-id") {
      options.client_id = value;
    } else if (flag == "--secret-file") {
      std::ifstream in(value);
      if (!std::getline(in, options.client_secret)) {
        std::cerr << "cs3-gateway-double: cannot read " << value << "\n";
        return 2;
      }
    } else if (flag == "--space-id") {
      options.space_id = value;
    } else if (flag == "--storage-id") {
      options.storage_id = value;
    } else if (flag == "--too-early-ms") {
      options.too_early = std::chrono::milliseconds(std::stoi(value));
    } else {
      std::cerr << "cs3-gateway-double: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0) {
    std::cerr << "cs3-gateway-double: flags take one value each\n";
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
  instance::testing::GatewayDouble server(options);
  std::cout << "grpc_port=" << server.grpc_port() << " http_port=" << server.http_port()
            << " space=" << server.space() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  return 0;
}
