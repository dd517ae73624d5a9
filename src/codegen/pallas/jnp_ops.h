// HLO instructions as JAX expressions (jax.numpy / jax.lax), for the Python the Pallas emitter
// writes: the same text serves inside a pallas_call body (on blocks) and in plain jnp glue (on
// whole arrays). Exact about element types: every op computes in its HLO result type, a dot
// accumulates in f32 (integers in s32) and casts back as the HLO says. An op it cannot translate
// is an error naming the op and its source position: it never guesses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::codegen::pallas {

// "jnp.float32", "jnp.bfloat16", "jnp.bool_", ...; an error for types jax has no name for here.
Result<std::string> JnpDType(hlo::DType dtype);

// A Python tuple literal: "()", "(3,)", "(2, 4)".
std::string PyTuple(const std::vector<int64_t>& values);

// A scalar constant's value as a Python expression of its type: "jnp.asarray(1.5, jnp.float32)".
Result<std::string> ScalarConstantExpr(const hlo::Instruction& constant);
// An array constant's value as a Python expression building it (a jnp array of its shape).
Result<std::string> ArrayConstantExpr(const hlo::Instruction& constant);

// Where an op is computed: its shape there (`block_dims`: the HLO dims, or a block's), and for
// iota along a blocked dimension, the Python expression of the block's first index on it.
struct OpSite {
  std::vector<int64_t> block_dims;
  std::string iota_offset;  // empty: the iota starts at 0
  bool in_kernel = false;   // inside a pallas_call body (ops that only glue may run are refused)
};

// The expression for `inst` given its operands' expressions (in operand order).
Result<std::string> TranslateOp(const hlo::Instruction& inst, const std::vector<std::string>& args,
                                const OpSite& site);

// Whether TranslateOp handles `op` at all (in glue).
bool IsTranslatable(hlo::Opcode op);

// The error for an op that cannot be translated, naming it and its position.
Status CannotTranslate(const hlo::Instruction& inst, const std::string& why);

// The binary op a reduce's (or reduce-window's) computation applies: "add", "max", "min",
// "mul", "and", "or"; an error when it is anything else.
Result<std::string> ReducerKind(const hlo::Instruction& reduce);

}  // namespace mk::codegen::pallas
