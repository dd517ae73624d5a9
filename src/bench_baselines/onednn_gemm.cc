// oneDNN: dnnl_sgemm for f32, the matmul primitive for bf16 operands (f32 or bf16 result),
// which is where oneDNN keeps its avx512_core_bf16 kernels.
#include <omp.h>

#include <cstdio>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>

#include "bench_baselines/library.h"

namespace mk::baselines {

namespace {

std::string VersionString() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string IsaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default:
      return "isa 0x" + [&] {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%x", static_cast<unsigned>(isa));
        return std::string(buf);
      }();
  }
}

// Everything the timed matmul call needs, kept alive by the closure.
struct MatmulState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul primitive;
  dnnl::memory a, b, c;
};

// Whether this oneDNN has a bf16 matmul for this CPU: it has none below AVX-512 (2.6 on a
// Zen 3: "could not create a primitive descriptor iterator"), so ask it for a tiny one.
std::string Bf16MatmulMissing() {
  try {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::memory::desc a({2, 2}, dt::bf16, tag::ab), b({2, 2}, dt::bf16, tag::ab),
        c({2, 2}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
    return "";
  } catch (const dnnl::error& e) {
    return std::string("oneDNN has no bf16 matmul on this CPU (") + e.what() + ")";
  }
}

}  // namespace

LibraryInfo OneDnnInfo() {
  LibraryInfo info;
  info.name = "onednn";
  info.version = VersionString();
  info.dtypes = {"f32"};
  if (const std::string missing = Bf16MatmulMissing(); missing.empty()) {
    info.dtypes.push_back("bf16");
    info.bf16_outs = {"bf16"};
  } else {
    info.details["bf16"] = missing;
  }
  info.details["max_isa"] = IsaName(dnnl_get_effective_cpu_isa());
  return info;
}

PreparedGemm PrepareOneDnn(const GemmProblem& p, GemmData& d, int threads) {
  PreparedGemm g;
  g.version = VersionString();
  omp_set_num_threads(threads);
  g.details["max_isa"] = IsaName(dnnl_get_effective_cpu_isa());
  g.details["omp_max_threads"] = omp_get_max_threads();
  if (p.dtype == "f32") {
    if (p.out_dtype != "f32") {
      g.error = "oneDNN: f32 operands with a bf16 result are not measured (use --out-dtype f32)";
      return g;
    }
    g.api = "dnnl_sgemm";
    // dnnl_sgemm picks its kernel internally; the most it reports is the ISA it may use.
    g.isa = IsaName(dnnl_get_effective_cpu_isa());
    g.call = [&p, &d] {
      dnnl_status_t s = dnnl_sgemm('N', 'N', p.m, p.n, p.k, 1.0f, d.a.data(), p.k, d.b.data(), p.n,
                                   0.0f, d.c.data(), p.n);
      if (s != dnnl_success)
        throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(s));
    };
    return g;
  }
  if (p.dtype != "bf16") {
    g.error = "oneDNN: unsupported dtype " + p.dtype;
    return g;
  }
  g.api = "dnnl matmul primitive";
  try {
    auto st = std::make_shared<MatmulState>();
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc a_md({p.m, p.k}, dt::bf16, tag::ab);
    dnnl::memory::desc b_md({p.k, p.n}, dt::bf16, tag::ab);
    dnnl::memory::desc c_md({p.m, p.n}, p.out_dtype == "bf16" ? dt::bf16 : dt::f32, tag::ab);
    dnnl::matmul::desc desc(a_md, b_md, c_md);
    dnnl::matmul::primitive_desc pd(desc, st->engine);
    g.isa = pd.impl_info_str();
    st->primitive = dnnl::matmul(pd);
    st->a = dnnl::memory(a_md, st->engine, d.a_bf16.data());
    st->b = dnnl::memory(b_md, st->engine, d.b_bf16.data());
    void* out = p.out_dtype == "bf16" ? static_cast<void*>(d.c_bf16.data())
                                      : static_cast<void*>(d.c.data());
    st->c = dnnl::memory(c_md, st->engine, out);
    g.call = [st] {
      st->primitive.execute(
          st->stream, {{DNNL_ARG_SRC, st->a}, {DNNL_ARG_WEIGHTS, st->b}, {DNNL_ARG_DST, st->c}});
      st->stream.wait();
    };
  } catch (const dnnl::error& e) {
    const std::string missing = Bf16MatmulMissing();
    g.unsupported = !missing.empty();
    g.error = g.unsupported ? missing : std::string("oneDNN matmul: ") + e.what();
  }
  return g;
}

}  // namespace mk::baselines
