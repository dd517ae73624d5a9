// Pieces of the HLO text parser shared between parser.cc (module, computations, instructions),
// parse_shape_literal.cc (shapes and constants) and parse_attributes.cc (typed attributes).
// Internal to src/hlo; other layers use hlo/parser.h.
#pragma once

#include <string>
#include <vector>

#include "hlo/instruction.h"
#include "hlo/lexer.h"

namespace mk::hlo::parse {

// Tuple shapes, constants and attribute values nest; beyond this depth the input is rejected
// rather than risking the stack.
inline constexpr int kMaxNestingDepth = 64;
// More array dimensions than any real program has; bounds the recursion over constant values.
inline constexpr int kMaxRank = 64;

// `f32[2,3]{1,0}`, `(f32[], s32[4])`, `token[]`.
Result<Shape> ParseShape(Lexer& lx, int depth = 0);
// True if the next token starts a shape (a `(` or an element type followed by `[`), which
// is how an operand written as `f32[4]{0} %a` is told apart from a bare `%a`.
bool AtShapeStart(Lexer& lx);

// The text between the parentheses of `constant(...)` for an instruction of `shape`. Sets
// inst.literal, or leaves it unset for an elided `{...}` and for element types that Literal
// does not store (f8, complex, 4-bit), whose values are checked for syntax only.
Status ParseConstantValue(Lexer& lx, const Shape& shape, Instruction& inst);

// A reference to a called computation, resolved once the whole module has been read.
struct CalleeRef {
  std::string name;
  size_t pos = 0;
  int slot = 0;  // position among the called computations (condition 0, body 1, ...)
};

// Parses the value of attribute `key` (the lexer stands after the `=`) into the typed field
// of `inst`, into `callees`, into extra_attributes, or drops it (metadata and friends).
// Duplicate keys are rejected by the caller.
Status ParseAttribute(Lexer& lx, const std::string& key, size_t key_pos, Instruction& inst,
                      std::vector<CalleeRef>& callees);

// XLA's stack-trace tables (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`; see
// parse_metadata_tables.cc), which dumps print before or after the computations.
// AtMetadataTable: the lexer stands at one (it does not move). SkipMetadataTable: reads it,
// checking that each entry is `<id> "string"` or `<id> {...}`.
bool AtMetadataTable(Lexer& lx);
bool AtMetadataTableName(Lexer& lx);
Status SkipMetadataTable(Lexer& lx);

}  // namespace mk::hlo::parse
