#include "codegen/cpu/vector_loops.h"

#include <algorithm>

namespace mk::codegen::cpu {

LoopSchedule LoopScheduleOf(const FunctionEmitter& f) {
  const space::Schedule& sch = f.schedule();
  LoopSchedule s;
  const int64_t threads = sch.Get("threads", 0);
  s.pin_threads = threads > 1;
  s.threads = threads > 0 ? threads : std::max(1, f.module().target().cores);
  s.vectorize = sch.Get("vectorize", 1) != 0;
  s.unroll = std::max<int64_t>(1, sch.Get("unroll", 1));
  s.tile_inner = std::max<int64_t>(0, sch.Get("tile_inner", 0));
  return s;
}

std::string ParallelPragma(const LoopSchedule& s, int collapse, int64_t work) {
  if (s.threads <= 1 || work < kParallelWork || collapse < 1) return "";
  std::string p = "#pragma omp parallel for schedule(static)";
  if (collapse > 1) p += " collapse(" + std::to_string(collapse) + ")";
  if (s.pin_threads) p += " num_threads(" + std::to_string(s.threads) + ")";
  return p + "\n";
}

int CollapseCount(const std::vector<int64_t>& trips, int64_t threads) {
  int64_t product = 1;
  for (size_t k = 0; k < trips.size(); ++k) {
    product *= std::max<int64_t>(1, trips[k]);
    if (product >= 4 * threads) return static_cast<int>(k + 1);
  }
  return static_cast<int>(trips.size());
}

std::string InnerLoopPragmas(const LoopSchedule& s) {
  std::string p;
  if (s.vectorize) p += "#pragma GCC ivdep\n";
  if (s.unroll > 1) p += "#pragma GCC unroll " + std::to_string(s.unroll) + "\n";
  return p;
}

void EmitVectorLoopNest(std::ostream& out, const LoopSchedule& s, const std::vector<int64_t>& dims,
                        int64_t work, const std::string& body, int64_t bound) {
  const size_t rank = dims.size();
  const size_t first = static_cast<size_t>(std::max<int64_t>(0, bound));
  if (first >= rank) {  // every index bound by the row loop: one element
    out << "  {\n    " << body << "\n  }\n";
    return;
  }
  const size_t last = rank - 1;
  const std::string iv = "i" + std::to_string(last);
  const int64_t n = dims[last];
  int64_t outer = 1;
  for (size_t d = first; d < last; ++d) outer *= dims[d];
  const bool parallel = first == 0 && s.threads > 1 && work >= kParallelWork;
  // Tiles of the innermost loop: asked for, or needed to give the threads work when the outer
  // loops alone have too few iterations (a long vector, a [1, N] row).
  int64_t tile = s.tile_inner > 0 && s.tile_inner < n ? s.tile_inner : 0;
  if (tile == 0 && parallel && outer < 2 * s.threads && n >= 1024) {
    const int64_t pieces = 4 * s.threads;
    tile = std::max<int64_t>(256, ((n + pieces - 1) / pieces + 63) / 64 * 64);
    if (tile >= n) tile = 0;
  }
  std::vector<int64_t> trips(dims.begin() + static_cast<std::ptrdiff_t>(first),
                             dims.begin() + static_cast<std::ptrdiff_t>(last));
  if (tile > 0) trips.push_back((n + tile - 1) / tile);
  out << "  {\n";
  if (parallel && !trips.empty()) out << ParallelPragma(s, CollapseCount(trips, s.threads), work);
  for (size_t d = first; d < last; ++d) {
    out << "  for (int64_t i" << d << " = 0; i" << d << " < " << dims[d] << "; ++i" << d << ")\n";
  }
  if (tile > 0) {
    out << "  for (int64_t " << iv << "t = 0; " << iv << "t < " << trips.back() << "; ++" << iv
        << "t)\n  {\n    const int64_t " << iv << "_lo = " << iv << "t * " << tile << ", " << iv
        << "_hi = std::min<int64_t>(" << iv << "_lo + " << tile << ", " << n << ");\n"
        << InnerLoopPragmas(s) << "    for (int64_t " << iv << " = " << iv << "_lo; " << iv
        << " < " << iv << "_hi; ++" << iv << ")\n      " << body << "\n  }\n";
  } else {
    out << "  {\n" << InnerLoopPragmas(s) << "    for (int64_t " << iv << " = 0; " << iv << " < "
        << n << "; ++" << iv << ")\n      " << body << "\n  }\n";
  }
  out << "  }\n";
}

void OpenResultLoops(FunctionEmitter& f, const std::vector<int64_t>& dims, int64_t work) {
  auto& out = f.loops();
  const size_t first = std::min(f.row_dims().size(), dims.size());
  if (first == 0 && !dims.empty()) {
    const LoopSchedule s = LoopScheduleOf(f);
    out << ParallelPragma(s, CollapseCount(dims, s.threads), work);
  }
  for (size_t d = first; d < dims.size(); ++d) {
    out << "  for (int64_t i" << d << " = 0; i" << d << " < " << dims[d] << "; ++i" << d << ")\n";
  }
}

}  // namespace mk::codegen::cpu
