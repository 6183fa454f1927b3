// cs3s://: the store's gRPC channel over TLS against the double's TLS
// listener (a certificate the test makes with openssl in its own folder):
// verified with --ca-file, refused without it, and --insecure reaching the
// gRPC channel too, not only the data gateway.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "helpers.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class Cs3Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/instance-guard-cs3-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    const std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
        "-addext subjectAltName=IP:127.0.0.1 -keyout '" +
        (dir_ / "key.pem").string() + "' -out '" + ca_file().string() + "' >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "openssl could not make a test certificate";
    GatewayDoubleOptions options;
    options.tls_cert_pem = slurp(ca_file());
    options.tls_key_pem = slurp(dir_ / "key.pem");
    gateway_ = std::make_unique<GatewayDouble>(std::move(options));
  }
  void TearDown() override {
    gateway_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path ca_file() const { return dir_ / "cert.pem"; }
  Cs3StoreOptions options() const {
    auto o = options_for(*gateway_);
    o.tls = true;
    o.retry_deadline = 500ms;
    return o;
  }

  std::filesystem::path dir_;
  std::unique_ptr<GatewayDouble> gateway_;
};

TEST_F(Cs3Tls, VerifiesTheGatewayWithTheGivenCa) {
  auto o = options();
  o.ca_file = ca_file();
  auto store = make_store(o);
  ASSERT_TRUE(store);
  const Key k = Key::parse("instances/a").value();
  ASSERT_TRUE(store->replace(k, "over tls")) << store->get(k).error().message;
  EXPECT_EQ(store->get(k)->data, "over tls");
}

TEST_F(Cs3Tls, RefusesAnUnknownCertificateUnlessInsecure) {
  const Key k = Key::parse("instances/a").value();
  auto unverified = make_store(options());
  ASSERT_TRUE(unverified);
  auto refused = unverified->get(k);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::unavailable) << refused.error().message;

  auto o = options();
  o.insecure = true;
  auto insecure = make_store(o);
  ASSERT_TRUE(insecure);
  ASSERT_TRUE(insecure->replace(k, "unverified tls")) << insecure->get(k).error().message;
  EXPECT_EQ(insecure->get(k)->data, "unverified tls");
}

}  // namespace
}  // namespace instance::testing
