#include "codegen/pallas/paged_kv.h"

#include <algorithm>

namespace mk::codegen::pallas {

using hlo::Instruction;
using hlo::Opcode;

namespace {

Status Refuse(const std::string& why) { return InvalidArgument(why); }

std::string Name(const Instruction* i) { return "%" + i->name; }

bool IsScalarConstBroadcast(const Instruction* x) {
  return x->opcode == Opcode::kBroadcast && x->operand_count() == 1 &&
         x->operand(0)->opcode == Opcode::kConstant && x->operand(0)->shape.is_array() &&
         x->operand(0)->shape.rank() == 0 && x->operand(0)->literal.has_value();
}

// Mixed-radix coordinate of batch position `p` in flat index `n`, times `scale`, as Python.
std::string Coord(const std::vector<int64_t>& sizes, size_t p, const std::string& n) {
  int64_t stride = 1;
  for (size_t q = p + 1; q < sizes.size(); ++q) stride *= sizes[q];
  std::string e = n;
  if (stride != 1) e = "(" + e + " // " + std::to_string(stride) + ")";
  if (p > 0) e = "(" + e + " % " + std::to_string(sizes[p]) + ")";
  return e;
}

// The flat index over the batch positions where `is_seq[p] == want`, as Python.
std::string Flat(const std::vector<bool>& is_seq, const std::vector<int64_t>& sizes, bool want,
                 const std::string& n) {
  std::string e;
  int64_t scale = 1;
  for (size_t p = sizes.size(); p-- > 0;) {
    if (is_seq[p] != want || sizes[p] == 1) continue;
    std::string term = Coord(sizes, p, n);
    if (scale != 1) term += " * " + std::to_string(scale);
    e = e.empty() ? term : term + " + " + e;
    scale *= sizes[p];
  }
  return e.empty() ? "0" : e;
}

}  // namespace

std::string PagedSeqExpr(const PagedKv& p, const std::vector<int64_t>& batch_sizes, const std::string& n) {
  return Flat(p.batch_is_seq, batch_sizes, true, n);
}

std::string PagedHeadExpr(const PagedKv& p, const std::vector<int64_t>& batch_sizes, const std::string& n) {
  return Flat(p.batch_is_seq, batch_sizes, false, n);
}

Result<std::optional<PagedKv>> MatchPagedKv(const Instruction* op, const std::vector<int64_t>& perm,
                                            const std::vector<int64_t>& batch_sizes) {
  const size_t nbatch = batch_sizes.size();
  // reshape(select(..., gather, ...)) or reshape(gather): anything else is not paged at all.
  if (op->opcode != Opcode::kReshape) return std::optional<PagedKv>();
  const Instruction* sel = nullptr;
  const Instruction* g = op->operand(0);
  if (g->opcode == Opcode::kSelect && g->operand(1)->opcode == Opcode::kGather) {
    sel = g;
    g = sel->operand(1);
  }
  if (g->opcode != Opcode::kGather) return std::optional<PagedKv>();
  const std::string what = Name(op) + " reads " + Name(g) + ", ";
  if (!g->gather_dims) return Refuse(what + "a gather without its dimension numbers");
  const hlo::GatherDimensions& gd = *g->gather_dims;
  const Instruction* pool = g->operand(0);
  const Instruction* index = g->operand(1);
  if (perm.size() != nbatch + 2 || op->shape.rank() != static_cast<int64_t>(nbatch + 2)) {
    return Refuse(what + "but the operand has other dims than batch, key and value dims");
  }
  if (!gd.operand_batching_dims.empty() || !gd.start_indices_batching_dims.empty()) {
    return Refuse(what + "a gather with batching dims (not a page table read)");
  }
  if (gd.start_index_map.size() != 1 || gd.collapsed_slice_dims != gd.start_index_map) {
    return Refuse(what + "a gather that does not index and collapse exactly one (page) dim");
  }
  const int64_t pdim = gd.start_index_map[0];
  const int64_t prank = pool->shape.rank();
  if (pdim < 0 || pdim >= prank) return Refuse(what + "a gather indexing a dim the pool does not have");
  for (int64_t d = 0; d < prank; ++d) {
    const int64_t want = d == pdim ? 1 : pool->shape.dim(d);
    if (g->gather_slice_sizes.size() != static_cast<size_t>(prank) || g->gather_slice_sizes[static_cast<size_t>(d)] != want) {
      return Refuse(what + "a gather that does not take whole pages (slice sizes)");
    }
  }
  if (index->shape.dtype() != hlo::DType::kS32) return Refuse(what + "a page table that is not s32");
  const int64_t ivd = gd.index_vector_dim;
  const int64_t irank = index->shape.rank();
  if (ivd < irank && index->shape.dim(ivd) != 1) return Refuse(what + "an index vector of more than one entry");
  // Index dims without the index-vector dim: the gather's batch dims, in order.
  std::vector<int64_t> idims;  // index dim numbers
  for (int64_t d = 0; d < irank; ++d) if (d != ivd) idims.push_back(d);
  const int64_t grank = g->shape.rank();
  // Per gather result dim: the pool dim (offset dims) or -1 - (position among batch dims).
  std::vector<int64_t> gsrc(static_cast<size_t>(grank));
  {
    std::vector<int64_t> pool_kept;
    for (int64_t d = 0; d < prank; ++d) if (d != pdim) pool_kept.push_back(d);
    if (gd.offset_dims.size() != pool_kept.size() || !std::is_sorted(gd.offset_dims.begin(), gd.offset_dims.end())) {
      return Refuse(what + "a gather whose offset dims do not hold the pool's other dims in order");
    }
    size_t o = 0, b = 0;
    for (int64_t d = 0; d < grank; ++d) {
      if (o < gd.offset_dims.size() && gd.offset_dims[o] == d) gsrc[static_cast<size_t>(d)] = pool_kept[o++];
      else gsrc[static_cast<size_t>(d)] = -1 - static_cast<int64_t>(b++);
    }
    if (o != gd.offset_dims.size() || b != idims.size()) {
      return Refuse(what + "a gather whose batch dims differ from its index's");
    }
  }
  // The reshape merges exactly one (slot, row within page) pair of adjacent dims into the key.
  if (op->shape.rank() != grank - 1) return Refuse(what + "but the reshape does not merge one pair of dims");
  std::vector<int64_t> merges;
  for (int64_t t = 0; t + 1 < grank; ++t) {
    if (gsrc[static_cast<size_t>(t)] >= 0 || gsrc[static_cast<size_t>(t + 1)] < 0) continue;
    bool ok = g->shape.dim(t) * g->shape.dim(t + 1) == op->shape.dim(t);
    for (int64_t r = 0; r < op->shape.rank() && ok; ++r) {
      if (r != t) ok = op->shape.dim(r) == g->shape.dim(r < t ? r : r + 1);
    }
    if (ok) merges.push_back(t);
  }
  if (merges.size() != 1) {
    return Refuse(what + "but the reshape does not lay one slot dim's pages end to end along the keys");
  }
  const int64_t t = merges[0];
  const int64_t key_r = perm[nbatch], d_r = perm[nbatch + 1];
  if (key_r != t) return Refuse(what + "but the merged (slot, page row) dim is not the attention's key dim");
  auto gdim_of = [&](int64_t r) { return r < t ? r : r + 1; };
  PagedKv p;
  p.pool = pool;
  p.index = index;
  p.pool_pages = pool->shape.dim(pdim);
  p.page = g->shape.dim(t + 1);
  p.slots = g->shape.dim(t);
  const int64_t page_row_dim = gsrc[static_cast<size_t>(t + 1)];
  const int64_t dsrc = gsrc[static_cast<size_t>(gdim_of(d_r))];
  if (dsrc < 0) return Refuse(what + "but the value dim comes from the page table, not the pool");
  p.d = pool->shape.dim(dsrc);
  const int64_t slot_b = -1 - gsrc[static_cast<size_t>(t)];  // the slot's position among batch dims
  // Batch positions: sequence dims (from the index) or head dims (from the pool).
  std::vector<int64_t> head_pool_dims, seq_index_dims;
  std::vector<int> label_of_bdim(idims.size(), -1);  // gather batch dim -> batch position / kSlot
  label_of_bdim[static_cast<size_t>(slot_b)] = PagedKv::kSlot;
  p.batch_is_seq.assign(nbatch, false);
  for (size_t b = 0; b < nbatch; ++b) {
    const int64_t src = gsrc[static_cast<size_t>(gdim_of(perm[b]))];
    if (src >= 0) {
      head_pool_dims.push_back(src);
      p.heads *= pool->shape.dim(src);
    } else {
      p.batch_is_seq[b] = true;
      seq_index_dims.push_back(idims[static_cast<size_t>(-1 - src)]);
      label_of_bdim[static_cast<size_t>(-1 - src)] = static_cast<int>(b);
      p.seqs *= batch_sizes[b];
    }
  }
  p.pool_perm = head_pool_dims;
  for (int64_t d : {pdim, page_row_dim, dsrc}) p.pool_perm.push_back(d);
  if (p.pool_perm.size() != static_cast<size_t>(prank)) {
    return Refuse(what + "but the pool has dims that are neither heads, pages, page rows nor values");
  }
  p.index_dims = idims;
  // index_perm indexes the index with its index-vector dim dropped.
  for (int64_t d : seq_index_dims) p.index_perm.push_back(static_cast<int64_t>(std::find(idims.begin(), idims.end(), d) - idims.begin()));
  p.index_perm.push_back(slot_b);
  p.core = {op, g};
  if (sel) {
    const Instruction* pred = sel->operand(0);
    const Instruction* fill = sel->operand(2);
    if (!IsScalarConstBroadcast(fill)) return Refuse(what + "masked by " + Name(sel) + " to a value that is not a constant");
    if (pred->opcode != Opcode::kBroadcast) return Refuse(what + "masked by " + Name(sel) + " with a pred that is not per page");
    const Instruction* valid = pred->operand(0);
    if (pred->dimensions.size() != static_cast<size_t>(valid->shape.rank())) {
      return Refuse(what + "masked by " + Name(sel) + " with a malformed broadcast");
    }
    p.valid_labels.assign(static_cast<size_t>(valid->shape.rank()), -1);
    for (size_t v = 0; v < pred->dimensions.size(); ++v) {
      const int64_t gdim = pred->dimensions[v];
      const int64_t src = gsrc[static_cast<size_t>(gdim)];
      if (src < 0) {
        p.valid_labels[v] = label_of_bdim[static_cast<size_t>(-1 - src)];
      } else if (valid->shape.dim(static_cast<int64_t>(v)) != 1) {
        return Refuse(what + "masked by " + Name(sel) + " with a pred that varies within a page");
      }
    }
    p.valid = valid;
    p.fill = fill->operand(0);
    for (const Instruction* c : {sel, pred, fill}) p.core.push_back(c);
  }
  return std::optional<PagedKv>(std::move(p));
}

}  // namespace mk::codegen::pallas
