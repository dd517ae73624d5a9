#include "server/secrets.h"

#include <sodium.h>

#include <mutex>
#include <vector>

namespace mk::server {

namespace {
constexpr unsigned long long kOpsLimit = 2;
constexpr size_t kMemLimit = 8u << 20;
}  // namespace

Status InitSecrets() {
  static std::once_flag once;
  static int rc = 0;
  std::call_once(once, [] { rc = sodium_init(); });
  if (rc < 0) return EnvironmentError("libsodium could not start (sodium_init failed)");
  return Status::Ok();
}

std::string RandomText(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  randombytes_buf(raw.data(), raw.size());
  std::string text(sodium_base64_ENCODED_LEN(bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(text.data(), text.size(), raw.data(), raw.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  text.resize(std::char_traits<char>::length(text.c_str()));
  sodium_memzero(raw.data(), raw.size());
  return text;
}

std::string RandomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  randombytes_buf(raw.data(), raw.size());
  std::string text(2 * bytes + 1, '\0');
  sodium_bin2hex(text.data(), text.size(), raw.data(), raw.size());
  text.pop_back();
  return text;
}

Result<std::string> HashSecret(std::string_view secret) {
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str_alg(out, secret.data(), secret.size(), kOpsLimit, kMemLimit,
                            crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return EnvironmentError("argon2id hashing failed (out of memory?)");
  }
  return std::string(out);
}

bool VerifySecret(std::string_view hash, std::string_view secret) {
  if (hash.size() >= crypto_pwhash_STRBYTES) return false;
  std::string terminated(hash);
  return crypto_pwhash_str_verify(terminated.c_str(), secret.data(), secret.size()) == 0;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace mk::server
