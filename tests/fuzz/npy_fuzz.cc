// libFuzzer target for the .npy reader (tests/fuzz/README.md). Every input must either fail with
// a message that names the file, or give an array whose data holds exactly shape x dtype bytes;
// such an array, encoded again, must read back to the same type, shape and bytes, and encoding
// that must give the same file again. Anything else aborts, which libFuzzer reports as a
// finding; crashes, leaks and UB are caught by ASan/UBSan. CI replays the corpus and the crash
// inputs through this same function (replay_main.cc).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/npy.h"

namespace {

constexpr const char* kFile = "fuzz.npy";

[[noreturn]] void Violation(const char* what, const std::string& detail) {
  std::fprintf(stderr, ".npy property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string Describe(const mk::npy::NpyArray& a) {
  return std::string(mk::npy::NpyTypeDescr(a.type)) + " " + mk::npy::NpyShapeString(a.shape) +
         ", " + std::to_string(a.data.size()) + " data bytes";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mk::Result<mk::npy::NpyArray> parsed = mk::npy::ParseNpy(data, size, kFile);
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) Violation("error with an empty message", parsed.status().ToString());
    if (parsed.status().loc().file != kFile) Violation("error does not name the file", parsed.status().ToString());
    return 0;
  }
  const mk::npy::NpyArray& array = *parsed;
  for (int64_t d : array.shape) {
    if (d < 0) Violation("negative dimension", Describe(array));
  }
  const int64_t elements = array.num_elements();
  if (elements < 0 ||
      static_cast<uint64_t>(elements) * static_cast<uint64_t>(mk::npy::NpyTypeByteSize(array.type)) !=
          array.data.size()) {
    Violation("data size does not match shape x dtype",
              Describe(array) + ", num_elements() = " + std::to_string(elements));
  }
  mk::Result<std::vector<uint8_t>> encoded = mk::npy::EncodeNpy(array);
  if (!encoded.ok()) Violation("a read array does not encode", encoded.status().ToString());
  mk::Result<mk::npy::NpyArray> reread = mk::npy::ParseNpy(encoded->data(), encoded->size(), kFile);
  if (!reread.ok()) Violation("an encoded array does not read back", reread.status().ToString());
  if (reread->type != array.type || reread->shape != array.shape || reread->data != array.data) {
    Violation("read(encode(a)) differs from a", Describe(array) + " became " + Describe(*reread));
  }
  mk::Result<std::vector<uint8_t>> reencoded = mk::npy::EncodeNpy(*reread);
  if (!reencoded.ok() || *reencoded != *encoded) Violation("encoding is not a fixed point", Describe(array));
  return 0;
}
