// Paged K/V for flash attention: recognizes an attention's k (or v) operand that is read from a
// page pool through a page table,
//
//   kv = reshape(gather(pool, index))                     pages of one sequence laid end to end
//   kv = reshape(select(broadcast(valid), gather(pool, index), broadcast(fill)))
//
// (`jnp.take(pool, page_table, axis=..)`: the second form is its default "fill" mode), so the
// flash-attention call can read each page straight from the pool, its index taken from the page
// table in SMEM (scalar prefetch) by the K/V BlockSpec's index_map, and the gathered cache is
// never built. Exact: the gather must take one whole page (every pool dim but the page dim whole,
// the page dim collapsed), its index batch dims must be the attention's sequence dims plus one
// slot dim, the reshape must merge exactly (slot, row within the page) into the key dim, and the
// pool's other dims must be the attention's head dims and the value dim. Anything else is
// refused with the reason (and the gather then runs in glue, as before).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::codegen::pallas {

struct PagedKv {
  const hlo::Instruction* pool = nullptr;   // the page pool (an input of the call)
  const hlo::Instruction* index = nullptr;  // the gather's start indices (s32)
  // The select's per-page pred (jnp.take's fill mode) and the scalar constant a page reads where
  // it is false; both null without the select.
  const hlo::Instruction* valid = nullptr;
  const hlo::Instruction* fill = nullptr;
  int64_t pool_pages = 0;  // P: pages in the pool (the index is clamped to [0, P-1], as HLO does)
  int64_t page = 0;        // keys per page
  int64_t slots = 0;       // pages per sequence (Sk = slots * page)
  int64_t heads = 1;       // the pool's head dims, flattened
  int64_t seqs = 1;        // the page table's sequence dims, flattened
  int64_t d = 0;           // the value (feature) dim
  // The pool transposed by `pool_perm` is [heads.., P, page, d] (heads in batch order); reshaped
  // to [heads, P, page, d] it is what the call reads.
  std::vector<int64_t> pool_perm;
  // The index without its index-vector dim (`index_dims`), transposed by `index_perm`, is
  // [seqs.., slots] (sequence dims in batch order).
  std::vector<int64_t> index_dims, index_perm;
  // Per dim of `valid`: the attention batch position it is, `kSlot` for the slot dim, -1 for a
  // size-1 dim.
  std::vector<int> valid_labels;
  static constexpr int kSlot = 1 << 20;
  // Per attention batch position: true for a sequence dim (the page table's), false for a head
  // dim (the pool's).
  std::vector<bool> batch_is_seq;
  // What the call computes in place of the gathered cache: the reshape, select, gather and the
  // select's broadcasts.
  std::vector<const hlo::Instruction*> core;
};

// `op` is an attention's k or v operand whose dims, transposed by `perm`, are
// [batch.. (nbatch, sizes `batch_sizes`), keys, d]. nullopt when it is not read through a gather
// at all; an InvalidArgument with the reason when it is, but not in the form above.
Result<std::optional<PagedKv>> MatchPagedKv(const hlo::Instruction* op, const std::vector<int64_t>& perm,
                                            const std::vector<int64_t>& batch_sizes);

// Python expressions over a flat attention batch index `n` (row-major over `batch_sizes`): the
// flat sequence index into the page table, and the flat head index into the pool.
std::string PagedSeqExpr(const PagedKv& p, const std::vector<int64_t>& batch_sizes, const std::string& n);
std::string PagedHeadExpr(const PagedKv& p, const std::vector<int64_t>& batch_sizes, const std::string& n);

}  // namespace mk::codegen::pallas
