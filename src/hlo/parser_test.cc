// One test per construct of HLO text: each checks the typed fields the parser fills against
// values worked out by hand from the text.
#include "hlo/parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace mk::hlo {
namespace {

std::unique_ptr<Module> MustParse(const std::string& text) {
  auto m = ParseModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  return std::move(m).value();
}

const Instruction* Find(const Module& m, const std::string& name) {
  for (const auto& c : m.computations()) {
    if (const Instruction* i = c->FindInstruction(name)) return i;
  }
  ADD_FAILURE() << "no instruction " << name;
  static const Instruction kNone;
  return &kNone;
}

// A module whose entry holds `body` (instruction lines).
std::unique_ptr<Module> ParseEntry(const std::string& body) {
  return MustParse("HloModule m\n\nENTRY main {\n" + body + "\n}\n");
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(ParserTest, JaxShortForm) {
  auto m = MustParse(R"(HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

region_0.4 {
  Arg_0.5 = f32[] parameter(0)
  Arg_1.6 = f32[] parameter(1)
  ROOT add.7 = f32[] add(Arg_0.5, Arg_1.6)
}

ENTRY main.9 {
  Arg_0.1 = f32[4]{0} parameter(0)
  constant.2 = f32[] constant(0)
  reduce.8 = f32[] reduce(Arg_0.1, constant.2), dimensions={0}, to_apply=region_0.4
  ROOT tuple = (f32[]) tuple(reduce.8)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "jit_f");
  ASSERT_EQ(m->header_attributes.size(), 1u);
  EXPECT_EQ(m->header_attributes[0].first, "entry_computation_layout");
  EXPECT_EQ(m->header_attributes[0].second, "{(f32[4]{0})->f32[4]{0}}");
  ASSERT_EQ(m->computations().size(), 2u);
  EXPECT_EQ(m->computations()[0]->name, "region_0.4");
  ASSERT_NE(m->entry(), nullptr);
  EXPECT_EQ(m->entry()->name, "main.9");
  EXPECT_EQ(m->entry()->root()->name, "tuple");
  const Instruction* reduce = Find(*m, "reduce.8");
  EXPECT_EQ(reduce->opcode, Opcode::kReduce);
  EXPECT_EQ(reduce->dimensions, std::vector<int64_t>{0});
  ASSERT_EQ(reduce->called.size(), 1u);
  EXPECT_EQ(reduce->called[0], m->computations()[0].get());
  ASSERT_EQ(reduce->operands.size(), 2u);
  EXPECT_EQ(reduce->operands[0]->name, "Arg_0.1");
  EXPECT_EQ(reduce->operands[1]->name, "constant.2");
  const Instruction* root = m->entry()->root();
  ASSERT_TRUE(root->shape.is_tuple());
  EXPECT_EQ(root->shape.tuple_shapes().size(), 1u);
  EXPECT_EQ(m->entry()->parameters().size(), 1u);
}

TEST(ParserTest, XlaLongFormWithSignaturesAndOperandShapes) {
  auto m = MustParse(R"(HloModule long, is_scheduled=true

%sum.1 (x.1: f32[], y.1: f32[]) -> f32[] {
  %x.1 = f32[] parameter(0)
  %y.1 = f32[] parameter(1)
  ROOT %add.3 = f32[] add(f32[] %x.1, f32[] %y.1)
}

ENTRY %main (a: (f32[4]{0}, s32[]), b: f32[4]) -> f32[4] {
  %a = (f32[4]{0}, s32[]) parameter(0)
  %b = f32[4]{0} parameter(1)
  %g = f32[4]{0} get-tuple-element((f32[4]{0}, s32[]) %a), index=0
  ROOT %add.3 = f32[4]{0} add(f32[4]{0} %g, f32[4]{0} %b)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->header_attributes[0], (std::pair<std::string, std::string>("is_scheduled", "true")));
  const Instruction* root = m->entry()->root();
  EXPECT_EQ(root->name, "add.3");
  EXPECT_EQ(root->operands[0]->name, "g");
  EXPECT_EQ(root->operands[0]->tuple_index, 0);
  EXPECT_EQ(root->shape.layout().minor_to_major, std::vector<int64_t>{0});
}

TEST(ParserTest, NamesWithDotsDashesDigits) {
  auto m = ParseEntry("  %Mean-reduction.1_x = f32[] parameter(0)\n"
                      "  ROOT %9-a.b_c = f32[] negate(%Mean-reduction.1_x)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->name, "9-a.b_c");
  EXPECT_EQ(m->entry()->root()->operands[0]->name, "Mean-reduction.1_x");
}

TEST(ParserTest, NoEntryMeansLastComputationAndNoRootMeansLastInstruction) {
  auto m = MustParse("HloModule m\nfirst {\n a = f32[] parameter(0)\n b = f32[] negate(a)\n}\n"
                     "second {\n c = f32[] parameter(0)\n d = f32[] abs(c)\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->name, "second");
  EXPECT_EQ(m->entry()->root()->name, "d");
  EXPECT_EQ(m->computations()[0]->root()->name, "b");
}

TEST(ParserTest, ForwardReferencesAreOrderedOperandsFirst) {
  auto m = ParseEntry("  ROOT r = f32[] add(s, p)\n  s = f32[] negate(p)\n  p = f32[] parameter(0)");
  ASSERT_TRUE(m);
  const auto& insts = m->entry()->instructions();
  ASSERT_EQ(insts.size(), 3u);
  EXPECT_EQ(insts[0]->name, "p");
  EXPECT_EQ(insts[1]->name, "s");
  EXPECT_EQ(insts[2]->name, "r");
  EXPECT_EQ(m->entry()->root()->name, "r");
}

TEST(ParserTest, ComputationReferencedBeforeDefinitionComesFirst) {
  auto m = MustParse("HloModule m\nENTRY main {\n p = f32[4] parameter(0)\n z = f32[] constant(0)\n"
                     " ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}\n"
                     "add {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y)\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->computations()[0]->name, "add");
  EXPECT_EQ(m->computations()[1]->name, "main");
  EXPECT_EQ(m->entry()->name, "main");
}

TEST(ParserTest, CommentsAnywhere) {
  auto m = MustParse("// header comment\nHloModule /*x*/ m // after\nENTRY /* a */ main {\n"
                     "  p = f32[2] /* shape */ parameter(/*n*/0) // line\n"
                     "  ROOT t = (f32[2], /*index=1*/f32[2]) tuple(p, /*index=1*/ p)\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->operands.size(), 2u);
}

TEST(ParserTest, TupleShapesAndToken) {
  auto m = ParseEntry("  p = ((f32[2]{0}, s32[]), (), token[]) parameter(0)\n  ROOT t = token[] after-all()");
  ASSERT_TRUE(m);
  const Shape& s = Find(*m, "p")->shape;
  ASSERT_TRUE(s.is_tuple());
  ASSERT_EQ(s.tuple_shapes().size(), 3u);
  EXPECT_TRUE(s.tuple_shape(0).is_tuple());
  EXPECT_EQ(s.tuple_shape(0).tuple_shape(0).dims(), std::vector<int64_t>{2});
  EXPECT_EQ(s.tuple_shape(0).tuple_shape(1).dtype(), DType::kS32);
  EXPECT_TRUE(s.tuple_shape(1).is_tuple());
  EXPECT_TRUE(s.tuple_shape(1).tuple_shapes().empty());
  EXPECT_TRUE(s.tuple_shape(2).is_token());
}

TEST(ParserTest, LayoutsWithDecorations) {
  auto m = ParseEntry("  a = f32[8,128]{1,0:T(8,128)} parameter(0)\n  b = f32[4,2]{0,1} parameter(1)\n"
                      "  c = f32[]{:S(1)} parameter(2)\n  ROOT d = bf16[2,3]{1,0:T(8,128)(2,1)S(1)} parameter(3)");
  ASSERT_TRUE(m);
  const Shape& a = Find(*m, "a")->shape;
  EXPECT_EQ(a.layout().minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(a.layout().decorations, "T(8,128)");
  EXPECT_EQ(Find(*m, "b")->shape.layout().minor_to_major, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(Find(*m, "c")->shape.has_layout());
  EXPECT_EQ(Find(*m, "c")->shape.layout().decorations, "S(1)");
  EXPECT_EQ(Find(*m, "d")->shape.layout().decorations, "T(8,128)(2,1)S(1)");
}

TEST(ParserTest, ScalarConstants) {
  auto m = ParseEntry(
      "  a = f32[] constant(-2.5)\n  b = f32[] constant(1e-05)\n  c = s32[] constant(-7)\n"
      "  d = pred[] constant(true)\n  e = u64[] constant(18446744073709551615)\n"
      "  f = s64[] constant(-9223372036854775808)\n  g = f64[] constant(0.1)\n"
      "  ROOT h = s8[] constant(-128)");
  ASSERT_TRUE(m);
  EXPECT_EQ(Find(*m, "a")->literal->GetDouble(0), -2.5);
  EXPECT_EQ(Find(*m, "b")->literal->data<float>()[0], 1e-05f);
  EXPECT_EQ(Find(*m, "c")->literal->GetInt64(0), -7);
  EXPECT_EQ(Find(*m, "d")->literal->GetInt64(0), 1);
  EXPECT_EQ(Find(*m, "e")->literal->GetUInt64(0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(Find(*m, "f")->literal->GetInt64(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Find(*m, "g")->literal->data<double>()[0], 0.1);
  EXPECT_EQ(Find(*m, "h")->literal->GetInt64(0), -128);
}

TEST(ParserTest, InfNanConstants) {
  auto m = ParseEntry("  a = f32[4] constant({inf, -inf, nan, -nan})\n  ROOT b = bf16[] constant(-inf)");
  ASSERT_TRUE(m);
  const Literal& a = *Find(*m, "a")->literal;
  EXPECT_TRUE(std::isinf(a.GetDouble(0)) && a.GetDouble(0) > 0);
  EXPECT_TRUE(std::isinf(a.GetDouble(1)) && a.GetDouble(1) < 0);
  EXPECT_TRUE(std::isnan(a.GetDouble(2)) && !std::signbit(a.GetDouble(2)));
  EXPECT_TRUE(std::isnan(a.GetDouble(3)) && std::signbit(a.GetDouble(3)));
  EXPECT_EQ(Find(*m, "b")->literal->data<uint16_t>()[0], 0xff80);  // bf16 -inf
}

TEST(ParserTest, NestedArrayConstant) {
  auto m = ParseEntry("  ROOT a = s32[2,1,3] constant({ { {1, -2, 3} }, { {-4, 5, -6} } })");
  ASSERT_TRUE(m);
  const Literal& lit = *m->entry()->root()->literal;
  std::vector<int64_t> values;
  for (int64_t i = 0; i < 6; ++i) values.push_back(lit.GetInt64(i));
  EXPECT_EQ(values, (std::vector<int64_t>{1, -2, 3, -4, 5, -6}));
}

TEST(ParserTest, Bf16AndF16ConstantsAreRoundedToTheType) {
  // 1.00390625 is exactly halfway between bf16 1.0 and 1.0078125: ties to even gives 1.0.
  // 1.0039062500001 is just above halfway and must round up (no double rounding via float).
  auto m = ParseEntry("  a = bf16[3] constant({1.00390625, 1.0039062500001, 3.14159})\n"
                      "  ROOT h = f16[2] constant({65504, 0.1})");
  ASSERT_TRUE(m);
  const uint16_t* a = Find(*m, "a")->literal->data<uint16_t>();
  EXPECT_EQ(a[0], 0x3f80);  // 1.0
  EXPECT_EQ(a[1], 0x3f81);  // 1.0078125
  EXPECT_EQ(a[2], 0x4049);  // 3.140625
  const uint16_t* h = Find(*m, "h")->literal->data<uint16_t>();
  EXPECT_EQ(h[0], 0x7bff);  // f16 max
  EXPECT_EQ(h[1], 0x2e66);  // 0.0999755859375
}

TEST(ParserTest, ElidedAndEmptyAndTupleConstants) {
  auto m = ParseEntry("  a = bf16[56945,50]{1,0} constant({...})\n  b = f32[0] constant({})\n"
                      "  c = f32[2,0] constant({ {}, {} })\n"
                      "  ROOT t = (f32[2], (s32[], pred[])) constant(( {1, 2}, (3, false) ))");
  ASSERT_TRUE(m);
  EXPECT_FALSE(Find(*m, "a")->literal.has_value());
  EXPECT_EQ(Find(*m, "b")->literal->num_elements(), 0);
  EXPECT_EQ(Find(*m, "c")->literal->num_elements(), 0);
  const Literal& t = *Find(*m, "t")->literal;
  ASSERT_EQ(t.elements().size(), 2u);
  EXPECT_EQ(t.elements()[0].GetDouble(1), 2.0);
  EXPECT_EQ(t.elements()[1].elements()[0].GetInt64(0), 3);
  EXPECT_EQ(t.elements()[1].elements()[1].GetInt64(0), 0);
}

TEST(ParserTest, UnstoredElementTypesParseWithoutLiteral) {
  auto m = ParseEntry("  a = f8e4m3fn[2] constant({1, -0.5})\n  b = c64[2] constant({(1, 2), (3, -4)})\n"
                      "  ROOT c = s4[2] constant({-8, 7})");
  ASSERT_TRUE(m);
  EXPECT_FALSE(Find(*m, "a")->literal.has_value());
  EXPECT_FALSE(Find(*m, "b")->literal.has_value());
  EXPECT_FALSE(Find(*m, "c")->literal.has_value());
}

TEST(ParserTest, ParameterNumbersAndOrder) {
  auto m = ParseEntry("  b = f32[] parameter(1)\n  a = s32[] parameter(0)\n  ROOT t = (s32[], f32[]) tuple(a, b)");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->entry()->parameters().size(), 2u);
  EXPECT_EQ(m->entry()->parameter(0)->name, "a");
  EXPECT_EQ(m->entry()->parameter(1)->parameter_number, 1);
}

TEST(ParserTest, DotDimensionsAndPrecision) {
  auto m = ParseEntry("  l = f32[8,16,32] parameter(0)\n  r = f32[8,32,64] parameter(1)\n"
                      "  ROOT d = f32[8,16,64] dot(l, r), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                      "rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={high,default}");
  ASSERT_TRUE(m);
  const Instruction* d = m->entry()->root();
  ASSERT_TRUE(d->dot_dims.has_value());
  EXPECT_EQ(d->dot_dims->lhs_batch, std::vector<int64_t>{0});
  EXPECT_EQ(d->dot_dims->lhs_contracting, std::vector<int64_t>{2});
  EXPECT_EQ(d->dot_dims->rhs_batch, std::vector<int64_t>{0});
  EXPECT_EQ(d->dot_dims->rhs_contracting, std::vector<int64_t>{1});
  EXPECT_EQ(d->operand_precision, (std::vector<std::string>{"high", "default"}));
}

TEST(ParserTest, ConvolutionWindowAndDimLabels) {
  auto m = ParseEntry("  i = f32[1,28,28,3] parameter(0)\n  k = f32[3,3,3,16] parameter(1)\n"
                      "  ROOT c = f32[1,14,14,16] convolution(i, k), window={size=3x3 stride=2x2 "
                      "pad=0_1x1_1 lhs_dilate=1x1 rhs_dilate=2x2 rhs_reversal=0x1}, "
                      "dim_labels=b01f_01io->b01f, feature_group_count=3, batch_group_count=2");
  ASSERT_TRUE(m);
  const Instruction* c = m->entry()->root();
  ASSERT_TRUE(c->window.has_value());
  ASSERT_EQ(c->window->size(), 2u);
  const WindowDimension& w0 = (*c->window)[0];
  const WindowDimension& w1 = (*c->window)[1];
  EXPECT_EQ(w0.size, 3);
  EXPECT_EQ(w0.stride, 2);
  EXPECT_EQ(w0.pad_low, 0);
  EXPECT_EQ(w0.pad_high, 1);
  EXPECT_EQ(w1.pad_low, 1);
  EXPECT_EQ(w1.pad_high, 1);
  EXPECT_EQ(w0.lhs_dilation, 1);
  EXPECT_EQ(w0.rhs_dilation, 2);
  EXPECT_FALSE(w0.reversal);
  EXPECT_TRUE(w1.reversal);
  ASSERT_TRUE(c->conv_dims.has_value());
  const ConvDimensionNumbers& d = *c->conv_dims;
  EXPECT_EQ(d.input_batch, 0);
  EXPECT_EQ(d.input_feature, 3);
  EXPECT_EQ(d.input_spatial, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d.kernel_input_feature, 2);
  EXPECT_EQ(d.kernel_output_feature, 3);
  EXPECT_EQ(d.kernel_spatial, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(d.output_batch, 0);
  EXPECT_EQ(d.output_feature, 3);
  EXPECT_EQ(d.output_spatial, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c->feature_group_count, 3);
  EXPECT_EQ(c->batch_group_count, 2);
}

TEST(ParserTest, DimLabelsInOtherOrdersAnd3D) {
  auto m = ParseEntry("  i = f32[4,3,10,10] parameter(0)\n  k = f32[8,3,3,3] parameter(1)\n"
                      "  a = f32[4,8,8,8] convolution(i, k), window={size=3x3}, dim_labels=bf01_oi01->bf01\n"
                      "  v = f32[2,8,8,8,4] parameter(2)\n  w = f32[3,3,3,4,8] parameter(3)\n"
                      "  b = f32[2,6,6,6,8] convolution(v, w), window={size=3x3x3}, dim_labels=b012f_012io->b012f\n"
                      "  ROOT c = f32[4,8,8,8] convolution(i, k), window={size=3x3}, dim_labels=f10b_i10o->b10f");
  ASSERT_TRUE(m);
  const ConvDimensionNumbers& a = *Find(*m, "a")->conv_dims;
  EXPECT_EQ(a.input_batch, 0);
  EXPECT_EQ(a.input_feature, 1);
  EXPECT_EQ(a.input_spatial, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.kernel_output_feature, 0);
  EXPECT_EQ(a.kernel_input_feature, 1);
  const ConvDimensionNumbers& b = *Find(*m, "b")->conv_dims;
  EXPECT_EQ(b.input_spatial, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(b.input_feature, 4);
  EXPECT_EQ(b.kernel_spatial, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(b.kernel_input_feature, 3);
  // Digits name the spatial dimension: in "f10b" spatial 1 sits at position 1, spatial 0 at 2.
  const ConvDimensionNumbers& c = *Find(*m, "c")->conv_dims;
  EXPECT_EQ(c.input_feature, 0);
  EXPECT_EQ(c.input_batch, 3);
  EXPECT_EQ(c.input_spatial, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(c.kernel_input_feature, 0);
  EXPECT_EQ(c.kernel_output_feature, 3);
  EXPECT_EQ(c.output_batch, 0);
  EXPECT_EQ(c.output_spatial, (std::vector<int64_t>{2, 1}));
}

TEST(ParserTest, SliceWithStrides) {
  auto m = ParseEntry("  x = f32[10,20] parameter(0)\n  ROOT s = f32[4,10] slice(x), slice={[0:4], [1:20:2]}");
  ASSERT_TRUE(m);
  const auto& s = m->entry()->root()->slice;
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], (SliceDimension{0, 4, 1}));
  EXPECT_EQ(s[1], (SliceDimension{1, 20, 2}));
}

TEST(ParserTest, PaddingWithNegativeAndInterior) {
  auto m = ParseEntry("  x = f32[10,20] parameter(0)\n  z = f32[] constant(0)\n"
                      "  ROOT p = f32[12,39] pad(x, z), padding=0_0_0x1_1_0x-1_2_3");
  ASSERT_TRUE(m);
  const auto& p = m->entry()->root()->padding;
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], (PaddingDimension{0, 0, 0}));
  EXPECT_EQ(p[1], (PaddingDimension{1, 1, 0}));
  EXPECT_EQ(p[2], (PaddingDimension{-1, 2, 3}));
}

TEST(ParserTest, CompareDirectionAndType) {
  auto m = ParseEntry("  x = f32[4] parameter(0)\n  a = pred[4] compare(x, x), direction=LT\n"
                      "  ROOT b = pred[4] compare(x, x), direction=GE, type=TOTALORDER");
  ASSERT_TRUE(m);
  EXPECT_EQ(Find(*m, "a")->direction, ComparisonDirection::kLt);
  EXPECT_EQ(Find(*m, "a")->comparison_type, "");
  EXPECT_EQ(Find(*m, "b")->direction, ComparisonDirection::kGe);
  EXPECT_EQ(Find(*m, "b")->comparison_type, "TOTALORDER");
}

TEST(ParserTest, IotaAndDynamicSlice) {
  auto m = ParseEntry("  i = s32[4,5] iota(), iota_dimension=1\n  x = f32[10,20] parameter(0)\n"
                      "  a = s32[] parameter(1)\n"
                      "  ROOT d = f32[2,5] dynamic-slice(x, a, a), dynamic_slice_sizes={2,5}");
  ASSERT_TRUE(m);
  EXPECT_EQ(Find(*m, "i")->iota_dimension, 1);
  EXPECT_TRUE(Find(*m, "i")->operands.empty());
  EXPECT_EQ(Find(*m, "d")->dynamic_slice_sizes, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(Find(*m, "d")->operands.size(), 3u);
}

TEST(ParserTest, GatherAttributes) {
  auto m = ParseEntry("  t = f32[4,8,3] parameter(0)\n  i = s32[4,2,1] parameter(1)\n"
                      "  ROOT g = f32[4,2,3] gather(t, i), offset_dims={2}, collapsed_slice_dims={1}, "
                      "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
                      "index_vector_dim=2, slice_sizes={1,1,3}, indices_are_sorted=true");
  ASSERT_TRUE(m);
  const Instruction* g = m->entry()->root();
  ASSERT_TRUE(g->gather_dims.has_value());
  EXPECT_EQ(g->gather_dims->offset_dims, std::vector<int64_t>{2});
  EXPECT_EQ(g->gather_dims->collapsed_slice_dims, std::vector<int64_t>{1});
  EXPECT_EQ(g->gather_dims->start_index_map, std::vector<int64_t>{1});
  EXPECT_EQ(g->gather_dims->operand_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(g->gather_dims->start_indices_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(g->gather_dims->index_vector_dim, 2);
  EXPECT_EQ(g->gather_slice_sizes, (std::vector<int64_t>{1, 1, 3}));
  EXPECT_TRUE(g->indices_are_sorted);
}

TEST(ParserTest, ScatterAttributes) {
  auto m = MustParse("HloModule m\nupd {\n a = f32[] parameter(0)\n ROOT b = f32[] parameter(1)\n}\n"
                     "ENTRY main {\n o = f32[4,8,3] parameter(0)\n i = s32[4,2,1] parameter(1)\n"
                     " u = f32[4,2,3] parameter(2)\n"
                     " ROOT s = f32[4,8,3] scatter(o, i, u), update_window_dims={2}, inserted_window_dims={1}, "
                     "scatter_dims_to_operand_dims={1}, input_batching_dims={0}, "
                     "scatter_indices_batching_dims={0}, index_vector_dim=2, indices_are_sorted=true, "
                     "unique_indices=true, to_apply=upd\n}\n");
  ASSERT_TRUE(m);
  const Instruction* s = m->entry()->root();
  ASSERT_TRUE(s->scatter_dims.has_value());
  EXPECT_FALSE(s->gather_dims.has_value());
  EXPECT_EQ(s->scatter_dims->update_window_dims, std::vector<int64_t>{2});
  EXPECT_EQ(s->scatter_dims->inserted_window_dims, std::vector<int64_t>{1});
  EXPECT_EQ(s->scatter_dims->scatter_dims_to_operand_dims, std::vector<int64_t>{1});
  EXPECT_EQ(s->scatter_dims->input_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(s->scatter_dims->scatter_indices_batching_dims, std::vector<int64_t>{0});
  EXPECT_EQ(s->scatter_dims->index_vector_dim, 2);
  EXPECT_TRUE(s->indices_are_sorted);
  EXPECT_TRUE(s->unique_indices);
  ASSERT_EQ(s->called.size(), 1u);
  EXPECT_EQ(s->called[0]->name, "upd");
}

constexpr const char* kCallees =
    "HloModule m\nc0 {\n p = f32[] parameter(0)\n ROOT r = pred[] constant(true)\n}\n"
    "c1 {\n p = f32[] parameter(0)\n ROOT r = f32[] negate(p)\n}\n"
    "c2 {\n p = f32[] parameter(0)\n ROOT r = f32[] abs(p)\n}\n";

TEST(ParserTest, WhileConditionBodyInEitherOrder) {
  auto m = MustParse(std::string(kCallees) +
                     "ENTRY main {\n x = f32[] parameter(0)\n"
                     " ROOT w = f32[] while(x), body=c1, condition=c0\n}\n");
  ASSERT_TRUE(m);
  const Instruction* w = m->entry()->root();
  ASSERT_EQ(w->called.size(), 2u);
  EXPECT_EQ(w->called[0]->name, "c0");
  EXPECT_EQ(w->called[1]->name, "c1");
}

TEST(ParserTest, ConditionalForms) {
  auto m = MustParse(std::string(kCallees) +
                     "ENTRY main {\n x = f32[] parameter(0)\n b = pred[] parameter(1)\n i = s32[] parameter(2)\n"
                     " t = f32[] conditional(b, x, x), false_computation=c2, true_computation=c1\n"
                     " ROOT s = f32[] conditional(i, x, x, x), branch_computations={%c2, c1, %c0}\n}\n");
  ASSERT_TRUE(m);
  const Instruction* t = Find(*m, "t");
  ASSERT_EQ(t->called.size(), 2u);
  EXPECT_EQ(t->called[0]->name, "c1");
  EXPECT_EQ(t->called[1]->name, "c2");
  const Instruction* s = Find(*m, "s");
  ASSERT_EQ(s->called.size(), 3u);
  EXPECT_EQ(s->called[0]->name, "c2");
  EXPECT_EQ(s->called[1]->name, "c1");
  EXPECT_EQ(s->called[2]->name, "c0");
}

TEST(ParserTest, CallsAndSelectAndScatter) {
  auto m = MustParse(std::string(kCallees) +
                     "ENTRY main {\n x = f32[] parameter(0)\n c = f32[] call(x), to_apply=c2\n"
                     " f = f32[] fusion(x), kind=kLoop, calls=%c1\n"
                     " ROOT s = f32[4] select-and-scatter(x, x, x), window={size=2 stride=2}, scatter=c1, select=c0\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(Find(*m, "c")->called[0]->name, "c2");
  EXPECT_EQ(Find(*m, "f")->called[0]->name, "c1");
  EXPECT_EQ(Find(*m, "f")->extra_attributes.at("kind"), "kLoop");
  const Instruction* s = Find(*m, "s");
  ASSERT_EQ(s->called.size(), 2u);
  EXPECT_EQ(s->called[0]->name, "c0");
  EXPECT_EQ(s->called[1]->name, "c1");
  EXPECT_EQ((*s->window)[0].stride, 2);
}

TEST(ParserTest, SortTopKGetTupleElement) {
  auto m = MustParse(std::string(kCallees) +
                     "ENTRY main {\n x = f32[8] parameter(0)\n"
                     " s = f32[8] sort(x), dimensions={0}, is_stable=true, to_apply=c0\n"
                     " k = (f32[3], s32[3]) topk(x), k=3, largest=false\n"
                     " ROOT g = s32[3] get-tuple-element(k), index=1\n}\n");
  ASSERT_TRUE(m);
  EXPECT_TRUE(Find(*m, "s")->is_stable);
  EXPECT_EQ(Find(*m, "s")->dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(Find(*m, "k")->k, 3);
  EXPECT_FALSE(Find(*m, "k")->has_largest);
  EXPECT_EQ(Find(*m, "g")->tuple_index, 1);
}

TEST(ParserTest, CustomCallRngReducePrecision) {
  auto m = ParseEntry("  s = u64[2] parameter(0)\n"
                      "  b = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_philox\n"
                      "  lo = f32[] constant(0)\n  r = f32[3] rng(lo, lo), distribution=rng_normal\n"
                      "  p = f32[3] reduce-precision(r), exponent_bits=5, mantissa_bits=10\n"
                      "  ROOT c = f32[3] custom-call(p), custom_call_target=\"my\\\"target\\n\", api_version=API_VERSION_TYPED_FFI");
  ASSERT_TRUE(m);
  EXPECT_EQ(Find(*m, "b")->rng_algorithm, "rng_philox");
  EXPECT_EQ(Find(*m, "r")->rng_distribution, "rng_normal");
  EXPECT_EQ(Find(*m, "p")->exponent_bits, 5);
  EXPECT_EQ(Find(*m, "p")->mantissa_bits, 10);
  EXPECT_EQ(Find(*m, "c")->custom_call_target, "my\"target\n");
  EXPECT_EQ(Find(*m, "c")->extra_attributes.at("api_version"), "API_VERSION_TYPED_FFI");
}

TEST(ParserTest, DroppedAndUnknownAttributes) {
  auto m = ParseEntry(
      "  p = f32[2] parameter(0), parameter_replication={false}, sharding={devices=[2]0,1}\n"
      "  ROOT n = f32[2] negate(p), metadata={op_type=\"Neg\" op_name=\"a{b}\\\"c\" source_line=3}, "
      "frontend_attributes={x=\"1\"}, backend_config=\"{\\\"k\\\": 1}\", origin={{\"x\"}}, "
      "statistics={visualizing_index=1}, control-predecessors={%p}, "
      "my_extra={nested={a, \"}\"}, b=[1]}, another=7");
  ASSERT_TRUE(m);
  const Instruction* n = m->entry()->root();
  ASSERT_EQ(n->extra_attributes.size(), 2u);
  EXPECT_EQ(n->extra_attributes.at("my_extra"), "{nested={a, \"}\"}, b=[1]}");
  EXPECT_EQ(n->extra_attributes.at("another"), "7");
  EXPECT_TRUE(Find(*m, "p")->extra_attributes.empty());
}

TEST(ParserTest, BackendConfigAsBraces) {
  auto m = ParseEntry("  ROOT p = f32[2] parameter(0), backend_config={\"a\": {\"b\": [1, 2]}}");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->entry()->root()->extra_attributes.empty());
}

TEST(ParserTest, RealCorpusFilesParse) {
  for (const char* file : {"graphsage_tf.hlo", "ssd_mobilenet_tf.hlo"}) {
    std::string path = std::string(MK_SOURCE_DIR) + "/../shared/hlo-corpus/" + file;
    auto m = ParseModuleFile(path);
    if (!m.ok() && m.status().code() == ErrorCode::kNotFound) GTEST_SKIP() << "corpus not present";
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_NE((*m)->entry(), nullptr);
  }
}

TEST(ParserTest, CorpusDepthwiseConvolution) {
  std::string path = std::string(MK_SOURCE_DIR) + "/../shared/hlo-corpus/ssd_mobilenet_tf.hlo";
  auto m = ParseModuleFile(path);
  if (!m.ok() && m.status().code() == ErrorCode::kNotFound) GTEST_SKIP() << "corpus not present";
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  int depthwise = 0;
  for (const auto& inst : (*m)->entry()->instructions()) {
    if (inst->opcode == Opcode::kConvolution && inst->feature_group_count > 1) ++depthwise;
  }
  EXPECT_EQ(depthwise, 13);  // grep -c feature_group_count ssd_mobilenet_tf.hlo
}

TEST(ParserTest, ErrorsCarryFileLineColumn) {
  auto m = ParseModule("HloModule m\nENTRY e {\n  a = f32[] foo(b)\n}\n", "test.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().ToString(), "test.hlo:3:13: error: unknown opcode 'foo'");
}

TEST(ParserTest, MissingFileIsNotFoundNamingIt) {
  // Read through support/regular_file.h: a missing file is NotFound (exit 2 like any bad input).
  auto m = ParseModuleFile("/nonexistent/dir/x.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(m.status().loc().file, "/nonexistent/dir/x.hlo");
}

TEST(ParserTest, MissingOperandsDoNotCrash) {
  // Operand counts are the verifier's business; the parser only must not fall over.
  auto m = ParseEntry("  ROOT a = f32[] add()");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->entry()->root()->operands.empty());
}

TEST(ParserTest, FloatBitsOfShortestForms) {
  auto m = ParseEntry("  ROOT a = f32[2] constant({0.1, -0})");
  ASSERT_TRUE(m);
  EXPECT_EQ(Bits(m->entry()->root()->literal->data<float>()[0]), Bits(0.1f));
  EXPECT_EQ(Bits(m->entry()->root()->literal->data<float>()[1]), 0x80000000u);
}

}  // namespace
}  // namespace mk::hlo
