// rng-bit-generator (Philox and Threefry, the bits the interpreter produces, which are XLA's)
// and rng (the interpreter's documented deterministic generator: SplitMix64 seeded by the FNV-1a
// hash of the instruction name; see src/interp/rng.cc).
#include <sstream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/materialize_ops.h"

namespace mk::codegen::cpu {

using hlo::DType;
using hlo::Instruction;

Status EmitRngBitGenerator(FunctionEmitter& f, const Instruction& inst) {
  if (inst.operands.size() != 1) return CannotLower(inst, "expects the state operand");
  const hlo::Shape& state = inst.operands[0]->shape;
  if (!state.is_array() || state.dtype() != DType::kU64 || state.rank() != 1 ||
      state.num_elements() < 2 || !inst.shape.is_tuple() ||
      inst.shape.tuple_shapes().size() != 2 || !inst.shape.tuple_shape(0).SameAs(state)) {
    return CannotLower(inst, "state must be u64[n >= 2] and the result (state, values)");
  }
  MK_ASSIGN_OR_RETURN(auto leaves, ArrayLeaves(inst));
  const hlo::Shape& out = leaves[1];
  const int64_t bytes = hlo::DTypeByteSize(out.dtype());
  if (bytes != 4 && bytes != 8) return CannotLower(inst, "output type must be 32 or 64 bits");
  std::string algorithm = inst.rng_algorithm.empty() ? "rng_default" : inst.rng_algorithm;
  if (algorithm == "rng_default") algorithm = "rng_philox";
  if (algorithm != "rng_philox" && algorithm != "rng_three_fry") {
    return CannotLower(inst, "unknown algorithm \"" + algorithm + "\"");
  }
  MK_ASSIGN_OR_RETURN(std::string ns, f.StorageFor(&inst, 0, leaves[0]));
  MK_ASSIGN_OR_RETURN(std::string vals, f.StorageFor(&inst, 1, out));
  const int64_t n = out.num_elements(), sn = state.num_elements();
  const int64_t words = bytes == 4 ? n : 2 * n;
  auto& o = f.out();
  o << "  {\n  uint64_t st[" << sn << "];\n  for (int64_t i = 0; i < " << sn
    << "; ++i) st[i] = " << CallExpr(f.Fn(inst.operands[0]), {"i"}) << ";\n"
    << "  for (int64_t i = 0; i < " << sn << "; ++i) " << ns << "[i] = st[i];\n"
    << "  mkrt::Scratch bits_mem(" << std::max<int64_t>(1, words) * 4 << ");\n";
  if (algorithm == "rng_philox") {
    o << "  uint32_t* const w = static_cast<uint32_t*>(bits_mem.p);\n"
      << "  const uint64_t lo = st[1], hi = " << (sn >= 3 ? "st[2]" : "st[0]") << ";\n"
      << "  const uint64_t blocks = mkrt::philox_words(st[0], lo, hi, " << words << ", w);\n"
      << "  " << ns << "[1] = lo + blocks;\n";
    if (sn >= 3) o << "  if (" << ns << "[1] < lo) " << ns << "[2] = hi + 1;\n";
    if (bytes == 4) {
      o << "  std::memcpy(" << vals << ", w, " << n * 4 << ");\n";
    } else {
      o << "  for (int64_t i = 0; i < " << n << "; ++i) {\n"
        << "    const uint64_t v = static_cast<uint64_t>(w[2 * i]) | (static_cast<uint64_t>(w[2 * i + 1]) << 32);\n"
        << "    std::memcpy(" << vals << " + i, &v, 8);\n  }\n";
    }
  } else if (bytes == 4) {
    // The split dimension: the first even one, else the largest.
    const auto& dims = out.dims();
    int64_t outer = 1, half = 1, full = 1, inner = 1;
    if (!dims.empty()) {
      int64_t split = -1;
      for (size_t i = 0; i < dims.size() && split < 0; ++i) {
        if (dims[i] % 2 == 0) split = static_cast<int64_t>(i);
      }
      if (split < 0) {
        for (size_t i = 0; i < dims.size(); ++i) {
          if (split < 0 || dims[i] > dims[static_cast<size_t>(split)]) split = static_cast<int64_t>(i);
        }
      }
      for (int64_t d = 0; d < split; ++d) outer *= dims[static_cast<size_t>(d)];
      for (size_t d = static_cast<size_t>(split) + 1; d < dims.size(); ++d) inner *= dims[d];
      full = dims[static_cast<size_t>(split)];
      half = (full + 1) / 2;
    }
    o << "  uint32_t* const w = static_cast<uint32_t*>(bits_mem.p);\n";
    if (dims.empty()) {
      o << "  uint32_t x1;\n  mkrt::threefry2x32(static_cast<uint32_t>(st[0]), "
           "static_cast<uint32_t>(st[0] >> 32), static_cast<uint32_t>(st[1]), "
           "static_cast<uint32_t>(st[1] >> 32), &w[0], &x1);\n"
        << "  " << ns << "[1] = st[1] + 1;\n";
    } else {
      o << "  " << ns << "[1] = st[1] + mkrt::threefry_bits32(st[0], st[1], " << outer << ", "
        << half << ", " << full << ", " << inner << ", w);\n";
    }
    o << "  std::memcpy(" << vals << ", w, " << n * 4 << ");\n";
  } else {
    o << "  mkrt::Scratch v_mem(" << std::max<int64_t>(1, n) * 8 << ");\n"
      << "  uint64_t* const v = static_cast<uint64_t*>(v_mem.p);\n"
      << "  " << ns << "[1] = st[1] + mkrt::threefry_bits64(st[0], st[1], " << n << ", v);\n"
      << "  std::memcpy(" << vals << ", v, " << n * 8 << ");\n";
  }
  o << "  }\n";
  return DefineStoredValue(f, inst, {ns, vals});
}

Status EmitRng(FunctionEmitter& f, const Instruction& inst) {
  if (inst.operands.size() != 2 || !inst.shape.is_array()) {
    return CannotLower(inst, "rng needs two scalar operands and an array result");
  }
  const DType t = inst.shape.dtype();
  if (t == DType::kPred) return CannotLower(inst, "rng of pred");
  const bool normal = inst.rng_distribution == "rng_normal";
  if (!normal && inst.rng_distribution != "rng_uniform") {
    return CannotLower(inst, "unknown distribution \"" + inst.rng_distribution + "\"");
  }
  if (normal && !IsFloatCompute(t)) return CannotLower(inst, "rng_normal of an integer type");
  uint64_t seed = 1469598103934665603ull;
  for (char c : inst.name) seed = (seed ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, 0, inst.shape));
  MK_ASSIGN_OR_RETURN(std::string st, StorageType(t));
  const std::string a = CallExpr(f.Fn(inst.operands[0]), {});
  const std::string b = CallExpr(f.Fn(inst.operands[1]), {});
  const std::string seed_s = std::to_string(seed) + "ull";
  auto& o = f.out();
  o << "  {\n  for (int64_t i = 0; i < " << inst.shape.num_elements() << "; ++i) {\n";
  if (IsFloatCompute(t)) {
    // The interpreter computes in double and stores through float (bf16/f16 from that float).
    auto to_elem = [&](const std::string& e) {
      return t == DType::kF64 ? e : StoreExpr(t, "static_cast<float>(" + e + ")");
    };
    o << "    const double a = static_cast<double>(" << a << "), b = static_cast<double>(" << b
      << ");\n    const uint64_t bits = mkrt::splitmix64(" << seed_s
      << " + 2 * static_cast<uint64_t>(i));\n";
    if (normal) {
      o << "    const double u1 = 1.0 - mkrt::unit_fraction(bits);\n"
        << "    const double u2 = mkrt::unit_fraction(mkrt::splitmix64(" << seed_s
        << " + 2 * static_cast<uint64_t>(i) + 1));\n"
        << "    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * "
           "3.141592653589793238462643383279502884 * u2);\n"
        << "    " << ptr << "[i] = " << to_elem("a + b * z") << ";\n";
    } else {
      o << "    " << st << " r = " << to_elem("a + (b - a) * mkrt::unit_fraction(bits)") << ";\n"
        << "    if (b > a && static_cast<double>(" << LoadExpr(t, "r") << ") >= b) r = "
        << to_elem("a") << ";\n    " << ptr << "[i] = r;\n";
    }
  } else if (hlo::IsUnsignedInt(t)) {
    o << "    const uint64_t a = static_cast<uint64_t>(" << a << "), b = static_cast<uint64_t>("
      << b << ");\n    const uint64_t bits = mkrt::splitmix64(" << seed_s
      << " + static_cast<uint64_t>(i));\n    " << ptr << "[i] = static_cast<" << st
      << ">(b > a ? a + bits % (b - a) : a);\n";
  } else {
    o << "    const int64_t a = static_cast<int64_t>(" << a << "), b = static_cast<int64_t>(" << b
      << ");\n    const uint64_t range = static_cast<uint64_t>(b) - static_cast<uint64_t>(a);\n"
      << "    const uint64_t bits = mkrt::splitmix64(" << seed_s
      << " + static_cast<uint64_t>(i));\n    " << ptr << "[i] = static_cast<" << st
      << ">(b > a ? static_cast<int64_t>(static_cast<uint64_t>(a) + bits % range) : a);\n";
  }
  o << "  }\n  }\n";
  return DefineStoredValue(f, inst, {ptr});
}

}  // namespace mk::codegen::cpu
