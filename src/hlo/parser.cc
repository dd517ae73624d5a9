// HLO text -> Module. Grammar (as XLA and JAX print it):
//   module      := 'HloModule' name (',' key '=' value)* (table | computation)*
//   table       := ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames')
//                  (int (string | '{' ... '}'))*     (skipped: parse_metadata_tables.cc)
//   computation := ['ENTRY'] name [signature] '{' instruction* '}'
//   signature   := '(' [name ':' shape (',' name ':' shape)*] ')' '->' shape
//   instruction := ['ROOT'] name '=' shape opcode '(' operands ')' (',' key '=' value)*
// Names of operands and called computations may refer forward; they are resolved when the
// enclosing computation (operands) or the module (computations) has been read.
#include "hlo/parser.h"

#include <fstream>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <sstream>

#include "hlo/dump_files.h"
#include "hlo/parse_internal.h"
#include "support/regular_file.h"

namespace mk::hlo {
namespace {

using parse::CalleeRef;

struct ParsedInstruction {
  std::unique_ptr<Instruction> inst;
  // Where the operand list starts (after its '(') and how many operands it has. The names are
  // read again from the text when the computation is resolved instead of being kept: an
  // instruction may list millions of operands, and a record each (a std::string: 32 bytes and
  // more) made a 50 MB module take 1.4 GB to reject.
  size_t operands_pos = 0;
  size_t operand_count = 0;
  std::vector<CalleeRef> callees;
};

struct ParsedComputation {
  std::unique_ptr<Computation> comp;
  size_t name_pos = 0;
  // Called computations of all instructions, for ordering callees before callers.
  std::vector<std::pair<Instruction*, std::vector<CalleeRef>>> calls;
};

// Orders nodes 0..n-1 so that every node comes after the nodes it depends on, keeping the
// given order wherever the dependencies allow (so already-ordered text stays as written).
// Returns the order, or the lowest node on a cycle as `cycle_node`.
std::vector<size_t> StableTopologicalOrder(const std::vector<std::vector<size_t>>& deps,
                                           size_t& cycle_node) {
  size_t n = deps.size();
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t d : deps[i]) {
      ++pending[i];
      users[d].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] != 0) {
        cycle_node = i;
        break;
      }
    }
  }
  return order;
}

class ModuleParser {
 public:
  ModuleParser(std::string_view text, const std::string& filename) : lx_(text, filename) {}

  Result<std::unique_ptr<Module>> Parse() {
    auto module = std::make_unique<Module>();
    lx_.SkipTrivia();
    if (lx_.AtEof()) return lx_.Error("empty input: expected 'HloModule <name>'");
    if (!lx_.PeekWord("HloModule", true)) {
      return lx_.Error("expected 'HloModule <name>' at the start of the module, got " +
                       lx_.DescribeNext());
    }
    MK_ASSIGN_OR_RETURN(module->name, lx_.ReadName("module name"));
    while (lx_.TryConsume(',')) {
      lx_.SkipTrivia();
      size_t key_pos = lx_.pos();
      MK_ASSIGN_OR_RETURN(std::string key, lx_.ReadWord("header attribute name"));
      MK_RETURN_IF_ERROR(lx_.Expect('=', "after header attribute '" + key + "'"));
      MK_ASSIGN_OR_RETURN(std::string_view value, lx_.ReadRawValue());
      for (const auto& [k, v] : module->header_attributes) {
        if (k == key) return lx_.ErrorAt(key_pos, "duplicate header attribute '" + key + "'");
      }
      module->header_attributes.emplace_back(key, std::string(value));
    }

    std::vector<ParsedComputation> comps;
    std::map<std::string, size_t> comp_index;
    int entry = -1;
    size_t entry_pos = 0;
    while (true) {
      lx_.SkipTrivia();
      if (lx_.AtEof()) break;
      if (parse::AtMetadataTable(lx_)) {
        MK_RETURN_IF_ERROR(parse::SkipMetadataTable(lx_));
        continue;
      }
      size_t start = lx_.pos();
      bool is_entry = lx_.PeekWord("ENTRY", true);
      if (is_entry && entry >= 0) {
        return lx_.ErrorAt(start, "second ENTRY computation (the first is at " +
                                      lx_.LocAt(entry_pos).ToString() + ")");
      }
      MK_ASSIGN_OR_RETURN(ParsedComputation pc, ParseComputation());
      if (!comp_index.emplace(pc.comp->name, comps.size()).second) {
        return lx_.ErrorAt(pc.name_pos, "duplicate computation name '" + pc.comp->name + "'");
      }
      if (is_entry) {
        entry = static_cast<int>(comps.size());
        entry_pos = start;
      }
      comps.push_back(std::move(pc));
    }
    if (lx_.pending_error()) return *lx_.pending_error();
    if (comps.empty()) return lx_.Error("module has no computations");
    if (entry < 0) entry = static_cast<int>(comps.size()) - 1;

    // Resolve called computations; build caller -> callee dependencies.
    std::vector<std::vector<size_t>> deps(comps.size());
    for (size_t c = 0; c < comps.size(); ++c) {
      for (auto& [inst, refs] : comps[c].calls) {
        std::stable_sort(refs.begin(), refs.end(),
                         [](const CalleeRef& a, const CalleeRef& b) { return a.slot < b.slot; });
        for (const CalleeRef& ref : refs) {
          auto it = comp_index.find(ref.name);
          if (it == comp_index.end()) {
            return lx_.ErrorAt(ref.pos, "unknown computation '" + ref.name + "'");
          }
          inst->called.push_back(comps[it->second].comp.get());
          deps[c].push_back(it->second);
        }
      }
    }
    size_t cycle = 0;
    std::vector<size_t> order = StableTopologicalOrder(deps, cycle);
    if (order.size() != comps.size()) {
      return lx_.ErrorAt(comps[cycle].name_pos,
                         "computation '" + comps[cycle].comp->name + "' calls itself (recursion)");
    }
    Computation* entry_comp = comps[static_cast<size_t>(entry)].comp.get();
    for (size_t i : order) module->AddComputation(std::move(comps[i].comp));
    module->set_entry(entry_comp);
    return module;
  }

 private:
  Result<ParsedComputation> ParseComputation() {
    ParsedComputation pc;
    pc.comp = std::make_unique<Computation>();
    lx_.SkipTrivia();
    pc.name_pos = lx_.pos();
    pc.comp->loc = lx_.LocAt(pc.name_pos);
    MK_ASSIGN_OR_RETURN(pc.comp->name, lx_.ReadName("computation name"));
    if (lx_.TryConsume('(')) {
      // The signature repeats what the parameter instructions say; it is checked for syntax only.
      if (!lx_.TryConsume(')')) {
        while (true) {
          MK_RETURN_IF_ERROR(lx_.ReadName("parameter name").status());
          MK_RETURN_IF_ERROR(lx_.Expect(':', "after the parameter name"));
          MK_RETURN_IF_ERROR(parse::ParseShape(lx_).status());
          if (lx_.TryConsume(',')) continue;
          MK_RETURN_IF_ERROR(lx_.Expect(')', "to close the computation signature"));
          break;
        }
      }
      if (!lx_.TryConsumeText("->")) return lx_.Error("expected '->' after the parameter list, got " + lx_.DescribeNext());
      MK_RETURN_IF_ERROR(parse::ParseShape(lx_).status());
    }
    lx_.SkipTrivia();
    size_t open_pos = lx_.pos();
    MK_RETURN_IF_ERROR(lx_.Expect('{', "to open computation '" + pc.comp->name + "'"));

    std::vector<ParsedInstruction> insts;
    std::map<std::string, size_t, std::less<>> index;
    int root = -1;
    while (true) {
      lx_.SkipTrivia();
      if (lx_.AtEof()) {
        return lx_.ErrorAt(open_pos, "computation '" + pc.comp->name +
                                         "' is not closed: expected '}' before end of input");
      }
      if (lx_.TryConsume('}')) break;
      size_t start = lx_.pos();
      bool is_root = lx_.PeekWord("ROOT", true);
      if (is_root && root >= 0) return lx_.ErrorAt(start, "second ROOT in computation '" + pc.comp->name + "'");
      MK_ASSIGN_OR_RETURN(ParsedInstruction pi, ParseInstruction());
      if (!index.emplace(pi.inst->name, insts.size()).second) {
        return Status(ErrorCode::kInvalidArgument,
                      "duplicate instruction name '" + pi.inst->name + "'", pi.inst->loc);
      }
      if (is_root) root = static_cast<int>(insts.size());
      insts.push_back(std::move(pi));
    }
    if (insts.empty()) {
      return lx_.ErrorAt(open_pos, "computation '" + pc.comp->name + "' has no instructions");
    }
    if (root < 0) root = static_cast<int>(insts.size()) - 1;

    std::vector<std::vector<size_t>> deps(insts.size());
    const size_t resume_pos = lx_.pos();
    for (size_t i = 0; i < insts.size(); ++i) {
      if (insts[i].operand_count == 0) continue;
      Instruction& inst = *insts[i].inst;
      inst.operands.reserve(insts[i].operand_count);
      deps[i].reserve(insts[i].operand_count);
      lx_.set_pos(insts[i].operands_pos);  // the list was read once already: it is well formed
      Status resolved = ScanOperands([&](std::string_view name, size_t pos) -> Status {
        auto it = index.find(name);
        if (it == index.end()) {
          return lx_.ErrorAt(pos, "unknown operand '" + std::string(name) + "' in computation '" +
                                      pc.comp->name + "'");
        }
        inst.operands.push_back(insts[it->second].inst.get());
        deps[i].push_back(it->second);
        return Status::Ok();
      });
      lx_.set_pos(resume_pos);
      MK_RETURN_IF_ERROR(resolved);
    }
    size_t cycle = 0;
    std::vector<size_t> order = StableTopologicalOrder(deps, cycle);
    if (order.size() != insts.size()) {
      const Instruction& inst = *insts[cycle].inst;
      return Status(ErrorCode::kInvalidArgument,
                    "instruction '" + inst.name + "' is part of a cycle of operands", inst.loc);
    }
    pc.comp->set_root(insts[static_cast<size_t>(root)].inst.get());
    for (size_t i : order) {
      if (!insts[i].callees.empty()) {
        pc.calls.emplace_back(insts[i].inst.get(), std::move(insts[i].callees));
      }
      pc.comp->AddInstruction(std::move(insts[i].inst));
    }
    pc.comp->SortParameters();
    return pc;
  }

  Result<ParsedInstruction> ParseInstruction() {
    ParsedInstruction pi;
    pi.inst = std::make_unique<Instruction>();
    Instruction& inst = *pi.inst;
    lx_.SkipTrivia();
    inst.loc = lx_.LocAt(lx_.pos());
    MK_ASSIGN_OR_RETURN(inst.name, lx_.ReadName("instruction name"));
    MK_RETURN_IF_ERROR(lx_.Expect('=', "after instruction name '" + inst.name + "'"));
    MK_ASSIGN_OR_RETURN(inst.shape, parse::ParseShape(lx_));
    lx_.SkipTrivia();
    size_t opcode_pos = lx_.pos();
    MK_ASSIGN_OR_RETURN(std::string opcode_name, lx_.ReadWord("opcode"));
    auto opcode = ParseOpcode(opcode_name);
    if (!opcode) return lx_.ErrorAt(opcode_pos, "unknown opcode '" + opcode_name + "'");
    inst.opcode = *opcode;
    MK_RETURN_IF_ERROR(lx_.Expect('(', "after opcode '" + opcode_name + "'"));

    if (inst.opcode == Opcode::kConstant) {
      MK_RETURN_IF_ERROR(parse::ParseConstantValue(lx_, inst.shape, inst));
      MK_RETURN_IF_ERROR(lx_.Expect(')', "to close the constant"));
    } else if (inst.opcode == Opcode::kParameter) {
      lx_.SkipTrivia();
      size_t number_pos = lx_.pos();
      MK_ASSIGN_OR_RETURN(inst.parameter_number, lx_.ReadInt("parameter number"));
      if (inst.parameter_number < 0) return lx_.ErrorAt(number_pos, "negative parameter number");
      MK_RETURN_IF_ERROR(lx_.Expect(')', "after the parameter number"));
    } else {
      pi.operands_pos = lx_.pos();
      MK_RETURN_IF_ERROR(ScanOperands([&pi](std::string_view, size_t) {
        ++pi.operand_count;
        return Status::Ok();
      }));
    }

    std::set<std::string> seen;
    while (lx_.TryConsume(',')) {
      lx_.SkipTrivia();
      size_t key_pos = lx_.pos();
      MK_ASSIGN_OR_RETURN(std::string key, lx_.ReadWord("attribute name"));
      if (!seen.insert(key).second) return lx_.ErrorAt(key_pos, "duplicate attribute '" + key + "'");
      MK_RETURN_IF_ERROR(lx_.Expect('=', "after attribute '" + key + "'"));
      MK_RETURN_IF_ERROR(parse::ParseAttribute(lx_, key, key_pos, inst, pi.callees));
    }
    return pi;
  }

  // Reads an operand list from just after its '(' through its ')', calling
  // on_operand(name, position) for each operand: `f32[4]{0} %a` (XLA long form), `%a` or `a`;
  // the shape is the operand's own. `name` is a view of the text; the position is that of the
  // operand's first character ('%' included), for errors.
  template <typename OnOperand>
  Status ScanOperands(OnOperand&& on_operand) {
    if (lx_.TryConsume(')')) return Status::Ok();
    while (true) {
      if (parse::AtShapeStart(lx_)) MK_RETURN_IF_ERROR(parse::ParseShape(lx_).status());
      lx_.SkipTrivia();
      const size_t pos = lx_.pos();
      MK_ASSIGN_OR_RETURN(std::string name, lx_.ReadName("operand name"));
      // ReadName stops right after the name.
      MK_RETURN_IF_ERROR(on_operand(lx_.text().substr(lx_.pos() - name.size(), name.size()), pos));
      if (lx_.TryConsume(',')) continue;
      return lx_.Expect(')', "to close the operand list");
    }
  }

  Lexer lx_;
};

}  // namespace

Result<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& filename) {
  ModuleParser parser(text, filename);
  return parser.Parse();
}

Result<std::unique_ptr<Module>> ParseModuleFile(const std::string& path) {
  MK_RETURN_IF_ERROR(CheckIsHloText(path));  // an XLA dump's other files, named for what they are
  MK_ASSIGN_OR_RETURN(std::string text,
                      ReadRegularFile(path, kMaxModuleFileBytes, "an HLO module file"));
  return ParseModule(text, path);
}

}  // namespace mk::hlo
