// The server's secrets, through libsodium: random values, argon2id hashes of API-token secrets,
// constant-time comparison. Nothing here logs or returns a secret it was not asked to make.
#pragma once

#include <string>
#include <string_view>

#include "support/status.h"

namespace mk::server {

// Initializes libsodium once (thread-safe). An error when the library cannot start.
Status InitSecrets();

// `bytes` random bytes as URL-safe base64 without padding (cookie, token and key material).
std::string RandomText(size_t bytes);
// `bytes` random bytes as lowercase hex.
std::string RandomHex(size_t bytes);

// argon2id, in libsodium's self-describing string form (algorithm, cost and salt included), so
// a later change of cost still verifies old hashes. The cost is moderate on purpose: a token's
// secret is 32 random bytes, out of reach of guessing at any cost, so the hash protects a leaked
// database from giving tokens away, not a weak password; and an 8 MiB, 2-pass hash keeps a
// login and a cache miss around 10 ms.
Result<std::string> HashSecret(std::string_view secret);
bool VerifySecret(std::string_view hash, std::string_view secret);

// Equal bytes, in time that depends only on the length.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace mk::server
