#include "runtime/shared_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mk::runtime {

Result<SharedRegion> SharedRegion::Create(const std::vector<size_t>& buffer_bytes) {
  SharedRegion r;
  size_t offset = 0;
  for (size_t b : buffer_bytes) {
    r.offsets_.push_back(offset);
    r.sizes_.push_back(b);
    offset += (b + 63) / 64 * 64;
  }
  r.total_ = offset == 0 ? 64 : offset;
  r.fd_ = memfd_create("maxkernel-buffers", MFD_CLOEXEC);
  if (r.fd_ < 0) return IoError(std::string("memfd_create: ") + std::strerror(errno));
  if (ftruncate(r.fd_, static_cast<off_t>(r.total_)) != 0) {
    return IoError("cannot size shared buffers (" + std::to_string(r.total_) +
                   " bytes): " + std::strerror(errno));
  }
  void* p = mmap(nullptr, r.total_, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd_, 0);
  if (p == MAP_FAILED) return IoError(std::string("mmap: ") + std::strerror(errno));
  r.base_ = static_cast<uint8_t*>(p);
  return r;
}

SharedRegion& SharedRegion::operator=(SharedRegion&& o) noexcept {
  if (this != &o) {
    this->~SharedRegion();
    fd_ = o.fd_;
    base_ = o.base_;
    total_ = o.total_;
    offsets_ = std::move(o.offsets_);
    sizes_ = std::move(o.sizes_);
    o.fd_ = -1;
    o.base_ = nullptr;
    o.total_ = 0;
  }
  return *this;
}

SharedRegion::~SharedRegion() {
  if (base_) munmap(base_, total_);
  if (fd_ >= 0) close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

}  // namespace mk::runtime
