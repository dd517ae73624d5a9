// Replays inputs through a libFuzzer target without libFuzzer, so a gcc build (CI) checks the
// kept corpora and every crash input as regression tests (tests/fuzz/README.md). Linked with one
// *_fuzz.cc file, whose LLVMFuzzerTestOneInput aborts on a violated property; this driver feeds
// it every regular file of the directories given (and files given directly), in name order.
// Names starting with '.' are skipped, so an otherwise empty crash directory can be kept in git
// with a `.keep` file. A missing directory, or no input at all, is an error: a test that replays
// nothing proves nothing.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
      continue;
    }
    if (!fs::is_directory(arg, ec)) {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(arg, ec)) {
      if (entry.is_regular_file() && entry.path().filename().string().rfind('.', 0) != 0) {
        files.push_back(entry.path());
      }
    }
    if (ec) {
      std::fprintf(stderr, "%s: cannot list: %s\n", argv[i], ec.message().c_str());
      return 2;
    }
    std::sort(files.begin(), files.end());
    inputs.insert(inputs.end(), files.begin(), files.end());
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs to replay\n");
    return 2;
  }
  for (const fs::path& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.eof() && in.fail()) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 2;
    }
    // A violation aborts inside the call; name the input first so the log says which one.
    std::fprintf(stderr, "replay %s\n", path.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
