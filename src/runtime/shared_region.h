// A block of memory shared between maxkernel and its sandboxed kernel runner (memfd + mmap), laid
// out as consecutive 64-byte-aligned buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/status.h"

namespace mk::runtime {

class SharedRegion {
 public:
  static Result<SharedRegion> Create(const std::vector<size_t>& buffer_bytes);
  SharedRegion() = default;
  SharedRegion(SharedRegion&& o) noexcept { *this = std::move(o); }
  SharedRegion& operator=(SharedRegion&& o) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion();

  int fd() const { return fd_; }
  size_t total_bytes() const { return total_; }
  size_t num_buffers() const { return offsets_.size(); }
  uint8_t* buffer(size_t i) { return base_ + offsets_[i]; }
  size_t buffer_bytes(size_t i) const { return sizes_[i]; }
  const std::vector<size_t>& offsets() const { return offsets_; }
  const std::vector<size_t>& sizes() const { return sizes_; }

 private:
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  size_t total_ = 0;
  std::vector<size_t> offsets_, sizes_;
};

}  // namespace mk::runtime
