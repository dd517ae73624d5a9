#include "support/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "support/regular_file.h"

namespace mk::npy {
namespace {

// Element data is copied byte for byte, which is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "maxkernel assumes a little-endian host");

constexpr std::array<uint8_t, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// NumPy aligns the start of the data to this many bytes (numpy.lib.format.ARRAY_ALIGN).
constexpr size_t kArrayAlign = 64;
// NumPy's own limit on the number of dimensions (NPY_MAXDIMS in NumPy 2).
constexpr size_t kMaxRank = 64;

struct TypeInfo {
  NpyType type;
  char kind;  // 'f', 'b', 'i', 'u'
  int64_t bytes;
  std::string_view descr;
  std::string_view name;
};

constexpr std::array<TypeInfo, 12> kTypes = {{
    {NpyType::kF2, 'f', 2, "<f2", "float16"},
    {NpyType::kF4, 'f', 4, "<f4", "float32"},
    {NpyType::kF8, 'f', 8, "<f8", "float64"},
    {NpyType::kB1, 'b', 1, "|b1", "bool"},
    {NpyType::kI1, 'i', 1, "|i1", "int8"},
    {NpyType::kI2, 'i', 2, "<i2", "int16"},
    {NpyType::kI4, 'i', 4, "<i4", "int32"},
    {NpyType::kI8, 'i', 8, "<i8", "int64"},
    {NpyType::kU1, 'u', 1, "|u1", "uint8"},
    {NpyType::kU2, 'u', 2, "<u2", "uint16"},
    {NpyType::kU4, 'u', 4, "<u4", "uint32"},
    {NpyType::kU8, 'u', 8, "<u8", "uint64"},
}};

const TypeInfo& Info(NpyType t) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == t) return info;
  }
  return kTypes[1];  // unreachable for valid enumerators
}

Status NpyError(const std::string& name, std::string message) {
  return InvalidArgument(std::move(message), SourceLoc{name, 0, 0});
}

std::string ShapeRepr(const std::vector<int64_t>& shape) { return NpyShapeString(shape); }

// A parser for the one Python literal NumPy writes as the header:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Nothing else of Python syntax is accepted.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  Status Parse(std::string& descr, bool& fortran_order, std::vector<int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("header is not a Python dict (expected '{')");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      MK_RETURN_IF_ERROR(ParseString(key, "a dict key"));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after key '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (have_descr) return Error("duplicate key 'descr'");
        have_descr = true;
        if (Peek() == '[') return Error("structured dtypes are not supported");
        MK_RETURN_IF_ERROR(ParseString(descr, "the 'descr' string"));
      } else if (key == "fortran_order") {
        if (have_fortran) return Error("duplicate key 'fortran_order'");
        have_fortran = true;
        MK_RETURN_IF_ERROR(ParseBool(fortran_order));
      } else if (key == "shape") {
        if (have_shape) return Error("duplicate key 'shape'");
        have_shape = true;
        MK_RETURN_IF_ERROR(ParseShape(shape));
      } else {
        return Error("unexpected key '" + key + "' (expected descr, fortran_order, shape)");
      }
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume('}')) break;
      return Error("expected ',' or '}' after the value of '" + key + "'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the header dict");
    if (!have_descr) return Error("header has no 'descr' key");
    if (!have_fortran) return Error("header has no 'fortran_order' key");
    if (!have_shape) return Error("header has no 'shape' key");
    return Status::Ok();
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  Status Error(const std::string& what) const {
    return NpyError(name_, "malformed .npy header: " + what + " at header offset " +
                               std::to_string(pos_));
  }

  Status ParseString(std::string& out, const char* what) {
    char quote = Peek();
    if (quote != '\'' && quote != '"') return Error(std::string("expected ") + what);
    ++pos_;
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      // Escapes never occur in the strings NumPy writes; refusing them keeps this simple.
      if (text_[pos_] == '\\') return Error("escape sequences are not supported in strings");
      ++pos_;
    }
    if (pos_ >= text_.size()) return Error("unterminated string");
    out = std::string(text_.substr(start, pos_ - start));
    ++pos_;
    return Status::Ok();
  }

  Status ParseBool(bool& out) {
    if (text_.substr(pos_, 4) == "True") {
      out = true;
      pos_ += 4;
    } else if (text_.substr(pos_, 5) == "False") {
      out = false;
      pos_ += 5;
    } else {
      return Error("'fortran_order' must be True or False");
    }
    return Status::Ok();
  }

  Status ParseShape(std::vector<int64_t>& shape) {
    shape.clear();
    if (!Consume('(')) return Error("'shape' must be a tuple");
    bool trailing_comma = false;
    while (true) {
      SkipSpace();
      if (Consume(')')) break;
      if (!shape.empty() && !trailing_comma) return Error("expected ',' between shape entries");
      if (Peek() == '-') return Error("negative dimension in 'shape'");
      if (Peek() < '0' || Peek() > '9') return Error("expected a dimension in 'shape'");
      int64_t value = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        int digit = Peek() - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          return Error("dimension in 'shape' is too large");
        }
        value = value * 10 + digit;
        ++pos_;
      }
      Consume('L');  // Python 2 long suffix, found in old files
      shape.push_back(value);
      if (shape.size() > kMaxRank) return Error("'shape' has more than 64 dimensions");
      SkipSpace();
      trailing_comma = Consume(',');
    }
    // `(3)` is the integer 3 in Python, not a tuple.
    if (shape.size() == 1 && !trailing_comma) return Error("'shape' (n) must be written (n,)");
    return Status::Ok();
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

uint32_t ReadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// Product of dims times `item_bytes`, or nullopt if it does not fit in int64.
std::optional<int64_t> CheckedByteCount(const std::vector<int64_t>& shape, int64_t item_bytes) {
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  int64_t total = item_bytes;
  for (int64_t d : shape) {
    if (total > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
    total *= d;
  }
  return total;
}

}  // namespace

int64_t NpyTypeByteSize(NpyType t) { return Info(t).bytes; }
std::string_view NpyTypeDescr(NpyType t) { return Info(t).descr; }
std::string_view NpyTypeName(NpyType t) { return Info(t).name; }

Result<NpyType> ParseNpyDescr(std::string_view descr) {
  if (descr.size() < 2) return InvalidArgument("unsupported .npy dtype '" + std::string(descr) + "'");
  char order = descr[0];
  std::string_view rest = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    // NumPy always writes a byte-order character; a bare "f4" is not something it produces.
    return InvalidArgument("unsupported .npy dtype '" + std::string(descr) + "'");
  }
  for (const TypeInfo& info : kTypes) {
    if (info.descr.substr(1) != rest) continue;
    // Byte order means nothing for one-byte types, so every marker is fine there.
    if (info.bytes == 1) return info.type;
    if (order == '>') {
      return InvalidArgument("big-endian .npy data ('" + std::string(descr) +
                             "') is not supported; save it little-endian (e.g. "
                             "arr.astype('<" + std::string(rest) + "'))");
    }
    if (order == '|') {
      return InvalidArgument("invalid .npy dtype '" + std::string(descr) +
                             "': a multi-byte type needs a byte order");
    }
    // '=' is native order, which is little-endian on every host we run on.
    return info.type;
  }
  return InvalidArgument("unsupported .npy dtype '" + std::string(descr) +
                         "' (supported: bool, int8..int64, uint8..uint64, float16/32/64)");
}

std::string NpyShapeString(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";  // (3) would be an integer in Python, not a tuple
  return out + ")";
}

int64_t NpyArray::num_elements() const {
  // Found by tests/fuzz/npy_fuzz: a file may validly hold an empty array of shape
  // (2^40, 2^40, 0), and multiplying left to right overflowed before reaching the 0. The zero
  // check comes first; a product that cannot fit saturates, so no such shape ever looks small.
  return CheckedByteCount(shape, 1).value_or(std::numeric_limits<int64_t>::max());
}

Result<NpyArray> ParseNpy(const uint8_t* bytes, size_t size, const std::string& name) {
  constexpr size_t kV1Prefix = 10;  // magic(6) + version(2) + header length(2)
  constexpr size_t kV2Prefix = 12;  // header length is 4 bytes from version 2.0 on
  if (size < kV1Prefix) {
    return NpyError(name, "not a .npy file: only " + std::to_string(size) + " bytes");
  }
  if (std::memcmp(bytes, kMagic.data(), kMagic.size()) != 0) {
    return NpyError(name, "not a .npy file: bad magic (expected \\x93NUMPY)");
  }
  int major = bytes[6], minor = bytes[7];
  size_t prefix = 0, header_len = 0;
  if (major == 1 && minor == 0) {
    prefix = kV1Prefix;
    header_len = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (size < kV2Prefix) {
      return NpyError(name, "truncated .npy file: " + std::to_string(size) +
                                " bytes is too short for a version " + std::to_string(major) +
                                ".0 preamble");
    }
    prefix = kV2Prefix;
    header_len = ReadLe32(bytes + 8);
  } else {
    return NpyError(name, "unsupported .npy format version " + std::to_string(major) + "." +
                              std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  if (header_len > size - prefix) {
    return NpyError(name, "truncated .npy file: header length " + std::to_string(header_len) +
                              " runs past the end of the file (" + std::to_string(size) +
                              " bytes)");
  }
  std::string_view header(reinterpret_cast<const char*>(bytes + prefix), header_len);
  // Versions 1 and 2 are latin-1, version 3 utf-8; the header NumPy writes is plain ASCII in
  // all of them, and anything else cannot hold a dtype we support.
  for (char c : header) {
    if (static_cast<unsigned char>(c) >= 0x80 || c == '\0') {
      return NpyError(name, "malformed .npy header: non-ASCII or NUL byte");
    }
  }

  std::string descr;
  bool fortran_order = false;
  NpyArray array;
  MK_RETURN_IF_ERROR(HeaderParser(header, name).Parse(descr, fortran_order, array.shape));
  Result<NpyType> type = ParseNpyDescr(descr);
  if (!type.ok()) return NpyError(name, type.status().message());
  array.type = *type;
  // A 0-d or 1-d array is the same in either order, but NumPy only writes True for arrays it
  // could not store C-contiguously, so refuse it outright rather than guess.
  if (fortran_order) {
    return NpyError(name, "Fortran-order (column-major) .npy data is not supported; save it "
                          "with np.ascontiguousarray first");
  }

  size_t data_offset = prefix + header_len;
  size_t available = size - data_offset;
  std::optional<int64_t> needed = CheckedByteCount(array.shape, NpyTypeByteSize(array.type));
  std::string what = std::string(NpyTypeDescr(array.type)) + " " + ShapeRepr(array.shape);
  if (!needed.has_value() || static_cast<uint64_t>(*needed) > available) {
    return NpyError(name, "truncated .npy data: " + what + " needs " +
                              (needed ? std::to_string(*needed) : std::string("more than 2^63")) +
                              " bytes of data, the file has " + std::to_string(available));
  }
  if (static_cast<uint64_t>(*needed) < available) {
    return NpyError(name, "unexpected trailing bytes in .npy file: " + what + " needs " +
                              std::to_string(*needed) + " bytes of data, the file has " +
                              std::to_string(available));
  }
  array.data.assign(bytes + data_offset, bytes + size);
  return array;
}

Result<NpyArray> ReadNpyFile(const std::string& path) {
  // A FIFO or device is refused without blocking on its open (support/regular_file.h).
  MK_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status(ErrorCode::kIo, "cannot stat", SourceLoc{path, 0, 0});
  }
  // The size the kernel reports bounds the allocation: nothing in the header can make it larger.
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Status(ErrorCode::kIo, "read failed: " + std::string(std::strerror(err)),
                    SourceLoc{path, 0, 0});
    }
    if (n == 0) break;  // the file shrank while we read it; parse what we have
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return ParseNpy(bytes.data(), bytes.size(), path);
}

Result<std::vector<uint8_t>> EncodeNpy(const NpyArray& array) {
  std::optional<int64_t> needed = CheckedByteCount(array.shape, NpyTypeByteSize(array.type));
  for (int64_t d : array.shape) {
    if (d < 0) return InvalidArgument("negative dimension in .npy shape " + ShapeRepr(array.shape));
  }
  if (!needed.has_value() || static_cast<uint64_t>(*needed) != array.data.size()) {
    return Internal("npy array data has " + std::to_string(array.data.size()) +
                    " bytes, its shape and type need " +
                    (needed ? std::to_string(*needed) : std::string("more than 2^63")));
  }
  std::string dict = "{'descr': '" + std::string(NpyTypeDescr(array.type)) +
                     "', 'fortran_order': False, 'shape': " + ShapeRepr(array.shape) + ", }";
  // NumPy leaves room for the first dimension to grow to 21 digits (GROWTH_AXIS_MAX_DIGITS) so
  // appenders can rewrite the header in place; doing the same makes our files byte-identical.
  if (!array.shape.empty()) {
    size_t digits = std::to_string(array.shape[0]).size();
    if (digits < 21) dict += std::string(21 - digits, ' ');
  }
  auto padded_header = [&](size_t prefix) {
    size_t unpadded = prefix + dict.size() + 1;  // +1 for the terminating newline
    size_t pad = (kArrayAlign - unpadded % kArrayAlign) % kArrayAlign;
    return dict + std::string(pad, ' ') + "\n";
  };
  std::string header = padded_header(10);
  int major = 1;
  if (header.size() > 0xffff) {
    major = 2;
    header = padded_header(12);
  }
  std::vector<uint8_t> out(kMagic.begin(), kMagic.end());
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  size_t len = header.size();
  int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

Status WriteNpyFile(const std::string& path, const NpyArray& array) {
  MK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, EncodeNpy(array));
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return Status(ErrorCode::kIo, "cannot create: " + std::string(std::strerror(errno)),
                  SourceLoc{path, 0, 0});
  }
  size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
  bool failed = written != bytes.size();
  if (std::fclose(f) != 0) failed = true;
  if (failed) {
    return Status(ErrorCode::kIo, "write failed: " + std::string(std::strerror(errno)),
                  SourceLoc{path, 0, 0});
  }
  return Status::Ok();
}

}  // namespace mk::npy
