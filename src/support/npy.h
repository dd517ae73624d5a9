// NumPy .npy files (format versions 1.0, 2.0 and 3.0), as raw typed bytes with a shape.
// Only what maxkernel exchanges is supported: little-endian, C (row-major) order, and the
// bool / integer / float element types below. Everything read is validated against the file
// size before any allocation, so a hostile header cannot make us read past the buffer or
// allocate absurd amounts of memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace mk::npy {

// Element types of the .npy files we accept, named after their NumPy descr without byte order.
enum class NpyType : uint8_t { kF2, kF4, kF8, kB1, kI1, kI2, kI4, kI8, kU1, kU2, kU4, kU8 };

int64_t NpyTypeByteSize(NpyType t);
std::string_view NpyTypeDescr(NpyType t);  // canonical NumPy descr: "<f4", "|b1", ...
std::string_view NpyTypeName(NpyType t);   // NumPy dtype name: "float32", "bool", ...
// Parses a descr string ("<f4", "|u1", ...); an error for big-endian or unknown types.
Result<NpyType> ParseNpyDescr(std::string_view descr);

// A shape as NumPy prints it: "()", "(3,)", "(2, 3)".
std::string NpyShapeString(const std::vector<int64_t>& shape);

struct NpyArray {
  NpyType type = NpyType::kF4;
  std::vector<int64_t> shape;  // () for a scalar
  std::vector<uint8_t> data;   // num_elements() * NpyTypeByteSize(type) bytes, little-endian

  int64_t num_elements() const;  // product of shape (1 for a scalar)
};

// Decodes a whole .npy file held in memory. `name` (usually the path) is used in error messages.
Result<NpyArray> ParseNpy(const uint8_t* bytes, size_t size, const std::string& name);
// Reads and decodes a .npy file.
Result<NpyArray> ReadNpyFile(const std::string& path);

// Encodes an array as .npy bytes: version 1.0 (2.0 when the header does not fit in 64 KiB),
// header padded with spaces so that the data starts at a multiple of 64 bytes, as NumPy does.
// Fails if data.size() does not match the shape and type.
Result<std::vector<uint8_t>> EncodeNpy(const NpyArray& array);
// Encodes and writes `array` to `path` (overwriting it).
Status WriteNpyFile(const std::string& path, const NpyArray& array);

}  // namespace mk::npy
