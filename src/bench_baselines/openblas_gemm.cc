// OpenBLAS: cblas_sgemm for f32; cblas_sbgemm for bf16 operands when the library was built
// with it (MK_OPENBLAS_HAS_SBGEMM, found by CMake; Debian's 0.3.21 declares it but lacks it).
#include <cblas.h>

#include <string>

#include "bench_baselines/library.h"

namespace mk::baselines {

namespace {

std::string Trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// "0.3.21" (the header's OPENBLAS_VERSION is " OpenBLAS 0.3.21 ").
std::string Version() {
  std::string v = Trim(OPENBLAS_VERSION);
  const std::string prefix = "OpenBLAS ";
  return v.rfind(prefix, 0) == 0 ? v.substr(prefix.size()) : v;
}

bool HasSbgemm() {
#ifdef MK_OPENBLAS_HAS_SBGEMM
  return true;
#else
  return false;
#endif
}

}  // namespace

LibraryInfo OpenBlasInfo() {
  LibraryInfo info;
  info.name = "openblas";
  info.version = Version();
  info.dtypes = {"f32"};
  if (HasSbgemm()) info.dtypes.push_back("bf16");
  info.details["corename"] = openblas_get_corename();
  info.details["config"] = Trim(openblas_get_config());
  return info;
}

PreparedGemm PrepareOpenBlas(const GemmProblem& p, GemmData& d, int threads) {
  PreparedGemm g;
  g.version = Version();
  openblas_set_num_threads(threads);
  // The kernel set OpenBLAS chose for this CPU (OPENBLAS_CORETYPE overrides it).
  g.isa = openblas_get_corename();
  g.details["config"] = Trim(openblas_get_config());
  g.details["threads"] = openblas_get_num_threads();
  if (p.out_dtype != "f32") {
    g.error = "OpenBLAS has no GEMM with a bf16 result";
    return g;
  }
  if (p.dtype == "f32") {
    g.api = "cblas_sgemm";
    g.call = [&p, &d] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(p.m),
                  static_cast<blasint>(p.n), static_cast<blasint>(p.k), 1.0f, d.a.data(),
                  static_cast<blasint>(p.k), d.b.data(), static_cast<blasint>(p.n), 0.0f,
                  d.c.data(), static_cast<blasint>(p.n));
    };
    return g;
  }
#ifdef MK_OPENBLAS_HAS_SBGEMM
  if (p.dtype == "bf16") {
    g.api = "cblas_sbgemm";
    g.call = [&p, &d] {
      cblas_sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(p.m),
                   static_cast<blasint>(p.n), static_cast<blasint>(p.k), 1.0f,
                   reinterpret_cast<const bfloat16*>(d.a_bf16.data()), static_cast<blasint>(p.k),
                   reinterpret_cast<const bfloat16*>(d.b_bf16.data()), static_cast<blasint>(p.n),
                   0.0f, d.c.data(), static_cast<blasint>(p.n));
    };
    return g;
  }
#endif
  g.error = "OpenBLAS " + g.version + " has no " + p.dtype + " GEMM" +
            (p.dtype == "bf16" ? " (built without cblas_sbgemm)" : "");
  return g;
}

}  // namespace mk::baselines
