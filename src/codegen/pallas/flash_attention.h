// Recognizes scaled-dot-product attention in a fusion plan, so the Pallas emitter can compute it
// as one flash-attention pallas_call instead of three kernels (q.k dot, softmax, p.v dot):
//
//   S = score(dot(q, k))        scale, additive bias, a mask select(pred, s, fill), converts,
//                               transposes and size-1 reshapes, in any order
//   P = exp(S - max_k S) / sum_k exp(S - max_k S)     (reduces over the key dim only)
//   O = dot(P, v)               (either operand order; P may be converted first)
//
// with any batch dims (batch, heads) and grouped-query attention as the suite's HLO writes it:
// q reshaped to [.., kv_heads, group, ..], the kv head a batch dim of both dots and the group a
// free dim of q (so every query head of a group reads the same k/v block, never a broadcast copy).
//
// The match is structural and exact: every shape, reduce dim, reducer, init value and dimension
// mapping is checked, and a chain that differs anywhere is refused with the reason (never guessed).
// A mask made of iota compares is translated into block positions; when it is `k - q <= off`
// (causal, off >= 0) with a very negative fill, blocks wholly above the diagonal may be skipped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "codegen/pallas/paged_kv.h"
#include "support/status.h"

namespace mk::codegen::pallas {

// One step of the score chain, applied to the f32 (or HLO-typed) block `s` in order.
struct ScoreStep {
  const hlo::Instruction* op = nullptr;  // the HLO op (elementwise, select, convert)
  int chain_operand = 0;                 // which operand is the score (the others are sides)
  // Per other operand (by operand index; the chain operand's entry unused):
  //   kScalar: a broadcast scalar constant (written into the body);
  //   kArray: a value computed in glue, passed as an [NB, G, Sq, Sk] blocked input (`side_perm`
  //           and `side_reshape` canonicalize it);
  //   kMask: a pred made of iotas and constants, translated into `mask_expr` over the block's
  //          query/key positions `qpos`/`kpos`.
  enum class Side { kNone, kScalar, kArray, kMask };
  std::vector<Side> sides;
  std::vector<std::string> scalar_expr;       // kScalar: the constant broadcast to the block
  std::vector<const hlo::Instruction*> array; // kArray: the value
  std::vector<std::vector<int>> array_labels; // kArray: per dim of the value, its qk-dot dim (-1: size 1)
  std::string mask_expr;                      // kMask (one per step)
};

// `k - q <= offset` over the sequence positions: the rows' visible keys.
struct CausalMask {
  int64_t offset = 0;
};

struct AttentionMatch {
  const hlo::Instruction* qk = nullptr;  // dot(q, k) in either operand order
  const hlo::Instruction* pv = nullptr;  // dot(P, v) in either operand order
  const hlo::Instruction* q = nullptr;   // the dots' operands
  const hlo::Instruction* k = nullptr;
  const hlo::Instruction* v = nullptr;
  // Canonical layouts (transposes of the operands, then reshapes):
  //   q -> [batch.., group.., Sq, D] -> [NB, G, Sq, D]
  //   k -> [batch.., Sk, D]          -> [NB, Sk, D]
  //   v -> [batch.., Sk, Dv]         -> [NB, Sk, Dv]
  //   O  = [NB, G, Sq, Dv] -> [batch.., group.., Sq, Dv] -> transpose out_perm -> pv's dims
  std::vector<int64_t> q_perm, k_perm, v_perm, out_perm;
  std::vector<int64_t> batch_sizes, group_sizes;  // expanded batch / group dims
  int64_t nb = 1, g = 1, sq = 1, sk = 1, d = 1, dv = 1;
  // GQA written as a repeat of k/v over the query heads: `k`/`v` are then the unrepeated values
  // ([NB / kv_group, Sk, D]) and query batch index n reads kv index n / kv_group.
  int64_t kv_group = 1;
  // The qk dot's dims (ids) that are the batch dims (in order), the group dims, Sq, Sk.
  std::vector<int> batch_ids, group_ids;
  int sq_id = -1, sk_id = -1;
  std::vector<ScoreStep> score;  // in chain order, from the qk dot to S
  hlo::DType score_dtype = hlo::DType::kF32;  // S's type (the softmax's)
  hlo::DType p_dtype = hlo::DType::kF32;      // P's type as the pv dot reads it
  std::optional<CausalMask> causal;  // set when blocks above the diagonal may be skipped
  // Per-batch s32 values a mask reads (a sequence's length), each labelled by its dims' qk-dot
  // batch dims (-1: size 1): passed flattened to [NB] as scalar prefetch (SMEM).
  std::vector<const hlo::Instruction*> prefetch;
  std::vector<std::vector<int>> prefetch_labels;
  // K/V read through a page table (paged_kv.h): the call reads each page from the pool, its
  // index scalar-prefetched, instead of the gathered cache. Only with kv_group == 1.
  std::optional<PagedKv> k_paged, v_paged;
  // Why a k/v that is a gather is not read in place (its gather then runs in glue).
  std::vector<std::string> paged_refused;
  // Every instruction the flash kernel computes (the chain from the dots to O); none of them
  // but `pv` may be used outside this set.
  std::set<const hlo::Instruction*> core;
  // Instructions only the mask uses (iotas, compares): nothing needs them computed.
  std::set<const hlo::Instruction*> mask_only;
};

// The attention whose p.v dot is `pv`, from the HLO graph alone (no users checked), or why not.
// `paged` (kPageK | kPageV bits): read that k/v in place when it is gathered from a page pool
// (else the gather stays an operand producer, computed in glue).
inline constexpr int kPageK = 1, kPageV = 2;
Result<AttentionMatch> MatchAttentionAt(const hlo::Instruction* pv, int paged = kPageK | kPageV);

// The body's Python lines turning the q.k product block `s` ([bq, bkv], the qk dot's type) into
// the scores the softmax reads (`qpos`/`kpos`: the block's query/key positions, int32), with
// `side_refs` naming each array side's block.
Result<std::vector<std::string>> ScoreLines(const AttentionMatch& m, int64_t bq, int64_t bkv,
                                            const std::map<const hlo::Instruction*, std::string>& side_refs);

// A match placed in a plan: the kernels it replaces (plan indices, ascending; the last is the
// anchor, where the fused call runs), the fused call's inputs and outputs.
struct PlannedAttention {
  AttentionMatch match;
  std::vector<size_t> kernels;
  size_t anchor = 0;
  std::vector<const hlo::Instruction*> inputs;   // values from outside the replaced kernels
  std::vector<const hlo::Instruction*> outputs;  // values used outside them (pv's consumers..)
  // The replaced kernels' instructions that run in jnp glue (operand producers before the call,
  // pv's epilogue after it), in plan order.
  std::vector<const hlo::Instruction*> glue;
  // Instructions of other kernels, internal to them, that a prefetched per-batch value needs
  // (7p's slices of cu_q_lens): recomputed in glue at the start of the call's function, in
  // dependency order, from `inputs`.
  std::vector<const hlo::Instruction*> recomputed;
};

struct AttentionScan {
  std::vector<PlannedAttention> found;
  // Per dot that looked like a p.v product but was refused: "%name: reason".
  std::vector<std::string> refused;
};

// Every attention of the plan whose core values nothing outside uses; each kernel in at most one.
AttentionScan FindAttention(const analysis::FusionPlan& plan);

}  // namespace mk::codegen::pallas
