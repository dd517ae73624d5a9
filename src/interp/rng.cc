// rng-bit-generator (bit-exact with XLA's expansion of the op on CPU) and rng (XLA leaves its
// values unspecified; we use a documented deterministic generator so that runs are repeatable).
#include <cmath>
#include <cstring>
#include <numbers>

#include "interp/ops.h"

namespace mk::interp {

using hlo::DType;
using hlo::Instruction;
using hlo::Literal;

namespace {

// ---------------------------------------------------------------------------------------------
// Counter-based generators, as XLA's prng library builds them.

uint32_t RotateLeft32(uint32_t v, int distance) {
  return (v << distance) | (v >> (32 - distance));
}

// Threefry-2x32 with 20 rounds (Salmon et al. 2011), XLA's key-schedule order.
void ThreeFry2x32(uint32_t key0, uint32_t key1, uint32_t in0, uint32_t in1, uint32_t* out0,
                  uint32_t* out1) {
  static constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key0, key1, 0x1BD11BDAu ^ key0 ^ key1};
  uint32_t x0 = in0 + ks[0];
  uint32_t x1 = in1 + ks[1];
  for (int block = 0; block < 5; ++block) {
    // Blocks alternate between the first and the second half of the rotation table.
    const int* rot = kRotations + (block % 2 == 0 ? 0 : 4);
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = RotateLeft32(x1, rot[r]);
      x1 ^= x0;
    }
    // Key injection after every four rounds.
    x0 += ks[(block + 1) % 3];
    x1 += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  *out0 = x0;
  *out1 = x1;
}

// Philox-4x32 with 10 rounds.
void Philox4x32(const uint32_t counter[4], uint32_t key0, uint32_t key1, uint32_t out[4]) {
  uint32_t x[4] = {counter[0], counter[1], counter[2], counter[3]};
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(x[0]) * 0xD2511F53u;
    const uint64_t p1 = static_cast<uint64_t>(x[2]) * 0xCD9E8D57u;
    const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ key0;
    const uint32_t y1 = static_cast<uint32_t>(p1);
    const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ key1;
    const uint32_t y3 = static_cast<uint32_t>(p0);
    x[0] = y0, x[1] = y1, x[2] = y2, x[3] = y3;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; ++i) out[i] = x[i];
}

// Threefry, 32-bit outputs. XLA splits the output shape into two halves along one dimension
// (the first even one, else the largest, padded to even) so that each threefry call yields two
// neighbouring elements along that dimension; counters run row-major over the half shape.
// Returns how many counters were consumed (the state advance).
uint64_t ThreeFryBits32(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                        uint32_t* out) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  if (dims.empty()) {
    uint32_t x0, x1;
    ThreeFry2x32(k0, k1, static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32),
                 &x0, &x1);
    out[0] = x0;
    return 1;
  }
  int64_t split = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] % 2 == 0) {
      split = static_cast<int64_t>(i);
      break;
    }
  }
  if (split < 0) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (split < 0 || dims[i] > dims[static_cast<size_t>(split)]) split = static_cast<int64_t>(i);
    }
  }
  std::vector<int64_t> half = dims;
  half[static_cast<size_t>(split)] = (dims[static_cast<size_t>(split)] + 1) / 2;
  int64_t half_count = 1;
  for (int64_t d : half) half_count *= d;
  // Elements of the half shape in row-major order: outer (dims before split), the split dim,
  // inner (dims after split).
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(split) + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t split_full = dims[static_cast<size_t>(split)];
  const int64_t split_half = half[static_cast<size_t>(split)];
  int64_t outer = 1;
  for (size_t i = 0; i < static_cast<size_t>(split); ++i) outer *= dims[i];
  int64_t c = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < split_half; ++a) {
      for (int64_t in = 0; in < inner; ++in, ++c) {
        const uint64_t ctr = counter + static_cast<uint64_t>(c);
        uint32_t x[2];
        ThreeFry2x32(k0, k1, static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), &x[0],
                     &x[1]);
        for (int64_t sel = 0; sel < 2; ++sel) {
          const int64_t i = 2 * a + sel;
          if (i >= split_full) continue;  // the padding element of an odd dimension
          out[(o * split_full + i) * inner + in] = x[sel];
        }
      }
    }
  }
  return static_cast<uint64_t>(half_count);
}

uint64_t ThreeFryBits64(uint64_t key, uint64_t counter, int64_t n, uint64_t* out) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t ctr = counter + static_cast<uint64_t>(i);
    uint32_t x0, x1;
    ThreeFry2x32(k0, k1, static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), &x0, &x1);
    out[i] = static_cast<uint64_t>(x0) | (static_cast<uint64_t>(x1) << 32);
  }
  return static_cast<uint64_t>(n);
}

// Philox: a 128-bit counter (lo, hi) incremented once per block of four 32-bit words; the words
// of consecutive blocks are laid out one after another. Returns the number of blocks used.
uint64_t PhiloxWords32(uint64_t key, uint64_t lo, uint64_t hi, int64_t n_words, uint32_t* out) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const int64_t blocks = (n_words + 3) / 4;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t l = lo + static_cast<uint64_t>(b);
    const uint64_t h = l < lo ? hi + 1 : hi;  // carry into the high word
    const uint32_t ctr[4] = {static_cast<uint32_t>(l), static_cast<uint32_t>(l >> 32),
                             static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
    uint32_t words[4];
    Philox4x32(ctr, k0, k1, words);
    for (int64_t j = 0; j < 4 && 4 * b + j < n_words; ++j) out[4 * b + j] = words[j];
  }
  return static_cast<uint64_t>(blocks);
}

Result<Literal> EvalRngBitGenerator(const Instruction& inst, const Operands& ops) {
  if (ops.size() != 1) return OpError(inst, "expects one operand (the state)");
  const Literal& state = *ops[0];
  if (state.shape().is_tuple() || state.dtype() != DType::kU64 || state.shape().rank() != 1 ||
      state.num_elements() < 2) {
    return OpError(inst, "state must be u64[n] with n >= 2, got " + state.shape().ToString(false));
  }
  if (!inst.shape.is_tuple() || inst.shape.tuple_shapes().size() != 2 ||
      !inst.shape.tuple_shape(0).SameAs(state.shape()) || !inst.shape.tuple_shape(1).is_array()) {
    return OpError(inst, "result must be a tuple (state, values) with the state's shape first");
  }
  const hlo::Shape& out_shape = inst.shape.tuple_shape(1);
  const int64_t bytes = hlo::DTypeByteSize(out_shape.dtype());
  if (bytes != 4 && bytes != 8) {
    return Status(ErrorCode::kUnimplemented,
                  "rng-bit-generator %" + inst.name + ": output type " +
                      std::string(hlo::DTypeName(out_shape.dtype())) +
                      " is not supported (32- and 64-bit types only)",
                  inst.loc);
  }
  std::string algorithm = inst.rng_algorithm.empty() ? "rng_default" : inst.rng_algorithm;
  // XLA's CPU and GPU compilers expand rng_default as Philox (checked against jax 0.10 on CPU).
  if (algorithm == "rng_default") algorithm = "rng_philox";

  Literal new_state = state;
  Literal values(out_shape);
  const uint64_t* s = state.data<uint64_t>();
  const uint64_t key = s[0];
  const int64_t n = out_shape.num_elements();
  if (algorithm == "rng_three_fry") {
    uint64_t advance = bytes == 4 ? ThreeFryBits32(key, s[1], out_shape.dims(),
                                                   values.data<uint32_t>())
                                  : ThreeFryBits64(key, s[1], n, values.data<uint64_t>());
    new_state.data<uint64_t>()[1] = s[1] + advance;
  } else if (algorithm == "rng_philox") {
    // With a u64[3] state the counter is (state[1], state[2]); with u64[2] XLA uses the key as
    // the counter's high word and keeps only the low word in the new state (checked against
    // jax, including the carry).
    const bool wide = state.num_elements() >= 3;
    const uint64_t lo = s[1];
    const uint64_t hi = wide ? s[2] : s[0];
    std::vector<uint32_t> words(static_cast<size_t>(bytes == 4 ? n : 2 * n));
    const uint64_t blocks =
        PhiloxWords32(key, lo, hi, static_cast<int64_t>(words.size()), words.data());
    if (bytes == 4) {
      std::memcpy(values.raw(), words.data(), words.size() * sizeof(uint32_t));
    } else {
      uint64_t* out = values.data<uint64_t>();
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<uint64_t>(words[static_cast<size_t>(2 * i)]) |
                 (static_cast<uint64_t>(words[static_cast<size_t>(2 * i + 1)]) << 32);
      }
    }
    uint64_t* ns = new_state.data<uint64_t>();
    ns[1] = lo + blocks;
    if (wide && ns[1] < lo) ns[2] = hi + 1;
  } else {
    return Status(ErrorCode::kUnimplemented,
                  "rng-bit-generator %" + inst.name + ": unknown algorithm \"" + algorithm + "\"",
                  inst.loc);
  }
  std::vector<Literal> parts;
  parts.push_back(std::move(new_state));
  parts.push_back(std::move(values));
  return Literal::Tuple(std::move(parts));
}

// ---------------------------------------------------------------------------------------------
// rng: XLA does not define its values. Ours: element i gets SplitMix64(seed + i) where seed is
// the FNV-1a hash of the instruction name; uniform floats use the top 53 bits as a fraction in
// [0, 1); normal uses Box-Muller on two such draws.

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double UnitFraction(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

Result<Literal> EvalRngDistribution(const Instruction& inst, const Operands& ops) {
  if (ops.size() != 2) return OpError(inst, "expects two scalar operands");
  for (const Literal* op : ops) {
    if (op->shape().is_tuple() || op->num_elements() != 1 || op->dtype() != inst.shape.dtype()) {
      return OpError(inst, "operands must be scalars of the result's element type");
    }
  }
  if (!inst.shape.is_array()) return OpError(inst, "result must be an array");
  const DType t = inst.shape.dtype();
  if (t == DType::kPred || !hlo::IsEvaluable(t)) {
    return Status(ErrorCode::kUnimplemented,
                  "rng %" + inst.name + ": element type " + std::string(hlo::DTypeName(t)) +
                      " is not supported",
                  inst.loc);
  }
  uint64_t seed = 1469598103934665603ull;
  for (char c : inst.name) seed = (seed ^ static_cast<uint8_t>(c)) * 1099511628211ull;

  Literal out(inst.shape);
  const int64_t n = out.num_elements();
  const bool normal = inst.rng_distribution == "rng_normal";
  if (!normal && inst.rng_distribution != "rng_uniform") {
    return OpError(inst, "unknown distribution \"" + inst.rng_distribution + "\"");
  }
  if (hlo::IsFloat(t)) {
    const double a = ops[0]->GetDouble(0), b = ops[1]->GetDouble(0);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits = SplitMix64(seed + 2 * static_cast<uint64_t>(i));
      if (normal) {
        const double u1 = 1.0 - UnitFraction(bits);  // (0, 1], so log is finite
        const double u2 = UnitFraction(SplitMix64(seed + 2 * static_cast<uint64_t>(i) + 1));
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
        out.SetDouble(i, a + b * z);
      } else {
        out.SetDouble(i, a + (b - a) * UnitFraction(bits));
        // Rounding to the element type can reach b; the interval is half-open.
        if (b > a && out.GetDouble(i) >= b) out.SetDouble(i, a);
      }
    }
    return out;
  }
  if (normal) return OpError(inst, "rng_normal needs a floating-point type");
  if (hlo::IsUnsignedInt(t)) {
    const uint64_t a = ops[0]->GetUInt64(0), b = ops[1]->GetUInt64(0);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits = SplitMix64(seed + static_cast<uint64_t>(i));
      out.SetUInt64(i, b > a ? a + bits % (b - a) : a);
    }
  } else {
    const int64_t a = ops[0]->GetInt64(0), b = ops[1]->GetInt64(0);
    // The range is computed in unsigned arithmetic so that [INT64_MIN, INT64_MAX) cannot overflow.
    const uint64_t range = static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits = SplitMix64(seed + static_cast<uint64_t>(i));
      out.SetInt64(i, b > a ? static_cast<int64_t>(static_cast<uint64_t>(a) + bits % range) : a);
    }
  }
  return out;
}

}  // namespace

Result<Literal> EvalRng(const Instruction& inst, const Operands& ops, EvalContext&) {
  if (inst.opcode == hlo::Opcode::kRngBitGenerator) return EvalRngBitGenerator(inst, ops);
  return EvalRngDistribution(inst, ops);
}

}  // namespace mk::interp
