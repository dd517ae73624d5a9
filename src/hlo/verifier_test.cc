// Verifier and shape inference: elementwise, data movement, control flow, module structure and
// the real-model corpus. Contractions, reductions and gather/scatter: shape_inference_test.cc.
#include <filesystem>

#include "hlo/verifier_test_util.h"

namespace mk::hlo {
namespace {

using testing::ExpectVerifyError;
using testing::VerifiedRootShape;

std::string Entry(const std::string& body, const std::string& computations = "") {
  return "HloModule test\n\n" + computations + "ENTRY %main {\n" + body + "}\n";
}

const char* kAddF32 = R"(%add_f32 {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

)";

// ---------------------------------------------------------------------------------------------
// Elementwise

TEST(VerifierElementwise, BinaryKeepsShape) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,3] parameter(0)\n"
                                    "  %b = f32[2,3] parameter(1)\n"
                                    "  ROOT %m = f32[2,3] multiply(%a, %b)\n")),
            "f32[2,3]");
}

TEST(VerifierElementwise, CompareAndIsFiniteGivePred) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4] parameter(0)\n"
                                    "  %b = f32[4] parameter(1)\n"
                                    "  ROOT %c = pred[4] compare(%a, %b), direction=LT\n")),
            "pred[4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = bf16[2,2] parameter(0)\n"
                                    "  ROOT %f = pred[2,2] is-finite(%a)\n")),
            "pred[2,2]");
}

TEST(VerifierElementwise, BitOpsOnIntegersAndPred) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = u32[8] parameter(0)\n"
                                    "  %b = u32[8] parameter(1)\n"
                                    "  %s = u32[8] shift-right-logical(%a, %b)\n"
                                    "  %p = u32[8] popcnt(%s)\n"
                                    "  ROOT %x = u32[8] xor(%p, %a)\n")),
            "u32[8]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = pred[3] parameter(0)\n"
                                    "  %b = pred[3] parameter(1)\n"
                                    "  %o = pred[3] or(%a, %b)\n"
                                    "  ROOT %n = pred[3] not(%o)\n")),
            "pred[3]");
}

TEST(VerifierElementwise, DeclaredShapeMismatchIsReportedAtTheInstruction) {
  std::string text = Entry("  %p0 = f32[8] parameter(0)\n"
                           "  %p1 = f32[8] parameter(1)\n"
                           "  %add.3 = f32[4] add(%p0, %p1)\n"
                           "  ROOT %r = f32[4] negate(%add.3)\n");
  ExpectVerifyError(text, "%add.3 =", "add %add.3: declared shape f32[4] does not match inferred f32[8]");
  auto module = ParseModule(text, "test.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  EXPECT_EQ(VerifyModule(**module).ToString(),
            "test.hlo:6:3: error: add %add.3: declared shape f32[4] does not match inferred f32[8]");
}

TEST(VerifierElementwise, NoImplicitBroadcast) {
  ExpectVerifyError(Entry("  %a = f32[4] parameter(0)\n"
                          "  %b = f32[] parameter(1)\n"
                          "  %bad = f32[4] add(%a, %b)\n"
                          "  ROOT %r = f32[4] copy(%bad)\n"),
                    "%bad =", "operand shapes f32[4] and f32[] differ");
}

TEST(VerifierElementwise, WrongElementTypes) {
  ExpectVerifyError(Entry("  %a = f32[4] parameter(0)\n"
                          "  ROOT %bad = f32[4] shift-left(%a, %a)\n"),
                    "%bad =", "does not accept element type f32");
  ExpectVerifyError(Entry("  %a = s32[4] parameter(0)\n"
                          "  ROOT %bad = s32[4] exponential(%a)\n"),
                    "%bad =", "does not accept element type s32");
  ExpectVerifyError(Entry("  %a = f32[4] parameter(0)\n"
                          "  ROOT %bad = f32[4] compare(%a, %a), direction=EQ\n"),
                    "%bad =", "declared shape f32[4] does not match inferred pred[4]");
}

TEST(VerifierElementwise, OperandCount) {
  ExpectVerifyError(Entry("  %a = f32[4] parameter(0)\n"
                          "  ROOT %bad = f32[4] add(%a)\n"),
                    "%bad =", "expects 2 operands, got 1");
}

TEST(VerifierElementwise, SelectWithScalarOrFullPredicate) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %p = pred[] parameter(0)\n"
                                    "  %a = f32[2,3] parameter(1)\n"
                                    "  %b = f32[2,3] parameter(2)\n"
                                    "  ROOT %s = f32[2,3] select(%p, %a, %b)\n")),
            "f32[2,3]");
  ExpectVerifyError(Entry("  %p = pred[3] parameter(0)\n"
                          "  %a = f32[2,3] parameter(1)\n"
                          "  ROOT %bad = f32[2,3] select(%p, %a, %a)\n"),
                    "%bad =", "predicate shape pred[3] must be scalar or match f32[2,3]");
}

TEST(VerifierElementwise, ClampWithScalarBounds) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %lo = f32[] parameter(0)\n"
                                    "  %x = f32[5] parameter(1)\n"
                                    "  %hi = f32[5] parameter(2)\n"
                                    "  ROOT %c = f32[5] clamp(%lo, %x, %hi)\n")),
            "f32[5]");
  ExpectVerifyError(Entry("  %lo = f32[3] parameter(0)\n"
                          "  %x = f32[5] parameter(1)\n"
                          "  ROOT %bad = f32[5] clamp(%lo, %x, %lo)\n"),
                    "%bad =", "bound f32[3] must be a scalar or the shape of operand f32[5]");
}

TEST(VerifierElementwise, ConvertAndBitcastConvert) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4] parameter(0)\n"
                                    "  ROOT %c = bf16[4] convert(%a)\n")),
            "bf16[4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4] parameter(0)\n"
                                    "  ROOT %c = s32[4] bitcast-convert(%a)\n")),
            "s32[4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4] parameter(0)\n"
                                    "  ROOT %c = u8[4,4] bitcast-convert(%a)\n")),
            "u8[4,4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = s16[3,2] parameter(0)\n"
                                    "  ROOT %c = f32[3] bitcast-convert(%a)\n")),
            "f32[3]");
  ExpectVerifyError(Entry("  %a = s16[3,4] parameter(0)\n"
                          "  ROOT %bad = f32[3] bitcast-convert(%a)\n"),
                    "%bad =", "needs a last dimension of 2");
  ExpectVerifyError(Entry("  %a = f32[4] parameter(0)\n"
                          "  ROOT %bad = bf16[5] convert(%a)\n"),
                    "%bad =", "declared shape bf16[5] does not match inferred bf16[4]");
}

TEST(VerifierElementwise, ReducePrecisionAndMap) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4] parameter(0)\n"
                                    "  ROOT %r = f32[4] reduce-precision(%a), exponent_bits=8, "
                                    "mantissa_bits=7\n")),
            "f32[4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,4] parameter(0)\n"
                                    "  %b = f32[2,4] parameter(1)\n"
                                    "  ROOT %m = f32[2,4] map(%a, %b), dimensions={0,1}, "
                                    "to_apply=%add_f32\n",
                                    kAddF32)),
            "f32[2,4]");
  ExpectVerifyError(Entry("  %a = s32[2,4] parameter(0)\n"
                          "  ROOT %bad = f32[2,4] map(%a, %a), dimensions={0,1}, to_apply=%add_f32\n",
                          kAddF32),
                    "%bad =", "parameter 0 has shape f32[], expected s32[]");
}

// ---------------------------------------------------------------------------------------------
// Constants, iota, shape changes

TEST(VerifierDataMovement, ConstantAndIota) {
  EXPECT_EQ(VerifiedRootShape(Entry("  ROOT %c = f32[2,2] constant({{1, 2}, {3, 4}})\n")),
            "f32[2,2]");
  EXPECT_EQ(VerifiedRootShape(Entry("  ROOT %i = s32[4,5] iota(), iota_dimension=1\n")),
            "s32[4,5]");
  ExpectVerifyError(Entry("  ROOT %bad = s32[4,5] iota(), iota_dimension=2\n"), "%bad",
                    "iota_dimension=2 is out of range for s32[4,5]");
}

TEST(VerifierDataMovement, ReshapeAndBitcast) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,6] parameter(0)\n"
                                    "  ROOT %r = f32[3,4] reshape(%a)\n")),
            "f32[3,4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,6] parameter(0)\n"
                                    "  ROOT %r = s32[12] bitcast(%a)\n")),
            "s32[12]");
  ExpectVerifyError(Entry("  %a = f32[2,6] parameter(0)\n"
                          "  ROOT %bad = f32[5] reshape(%a)\n"),
                    "%bad =", "cannot reshape f32[2,6] to f32[5]: element counts differ");
  ExpectVerifyError(Entry("  %a = f32[2,6] parameter(0)\n"
                          "  ROOT %bad = f16[12] bitcast(%a)\n"),
                    "%bad =", "byte sizes differ");
}

TEST(VerifierDataMovement, Broadcast) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[3] parameter(0)\n"
                                    "  ROOT %b = f32[2,3,4] broadcast(%a), dimensions={1}\n")),
            "f32[2,3,4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[] parameter(0)\n"
                                    "  ROOT %b = f32[7] broadcast(%a), dimensions={}\n")),
            "f32[7]");
  ExpectVerifyError(Entry("  %a = f32[3] parameter(0)\n"
                          "  ROOT %bad = f32[2,3] broadcast(%a), dimensions={0}\n"),
                    "%bad =", "operand dimension 0 (size 3) does not match result dimension 0 (size 2)");
  ExpectVerifyError(Entry("  %a = f32[3,2] parameter(0)\n"
                          "  ROOT %bad = f32[2,3] broadcast(%a), dimensions={1,0}\n"),
                    "%bad =", "must be in increasing order");
  ExpectVerifyError(Entry("  %a = f32[3] parameter(0)\n"
                          "  ROOT %bad = f32[3] broadcast(%a), dimensions={5}\n"),
                    "%bad =", "out of range");
}

TEST(VerifierDataMovement, TransposeAndReverse) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,3,4] parameter(0)\n"
                                    "  ROOT %t = f32[4,2,3] transpose(%a), dimensions={2,0,1}\n")),
            "f32[4,2,3]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,3] parameter(0)\n"
                                    "  ROOT %r = f32[2,3] reverse(%a), dimensions={0,1}\n")),
            "f32[2,3]");
  ExpectVerifyError(Entry("  %a = f32[2,3,4] parameter(0)\n"
                          "  ROOT %bad = f32[2,2,3] transpose(%a), dimensions={0,0,1}\n"),
                    "%bad =", "repeats dimension 0");
  ExpectVerifyError(Entry("  %a = f32[2,3] parameter(0)\n"
                          "  ROOT %bad = f32[2,3] reverse(%a), dimensions={2}\n"),
                    "%bad =", "out of range for rank 2");
}

TEST(VerifierDataMovement, Slice) {
  // ceil((9 - 2) / 3) = 3 elements: 2, 5, 8.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[10,8] parameter(0)\n"
                                    "  ROOT %s = f32[3,8] slice(%a), slice={[2:9:3], [0:8]}\n")),
            "f32[3,8]");
  ExpectVerifyError(Entry("  %a = f32[10] parameter(0)\n"
                          "  ROOT %bad = f32[6] slice(%a), slice={[5:11]}\n"),
                    "%bad =", "slice dimension 0 [5:11:1] is invalid for size 10");
}

TEST(VerifierDataMovement, DynamicSliceAndUpdate) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[10,8] parameter(0)\n"
                                    "  %i = s32[] parameter(1)\n"
                                    "  ROOT %d = f32[2,8] dynamic-slice(%a, %i, %i), "
                                    "dynamic_slice_sizes={2,8}\n")),
            "f32[2,8]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[10,8] parameter(0)\n"
                                    "  %u = f32[2,8] parameter(1)\n"
                                    "  %i = u32[] parameter(2)\n"
                                    "  ROOT %d = f32[10,8] dynamic-update-slice(%a, %u, %i, %i)\n")),
            "f32[10,8]");
  ExpectVerifyError(Entry("  %a = f32[10,8] parameter(0)\n"
                          "  %i = s32[] parameter(1)\n"
                          "  ROOT %bad = f32[11,8] dynamic-slice(%a, %i, %i), "
                          "dynamic_slice_sizes={11,8}\n"),
                    "%bad =", "exceeds operand f32[10,8] in dimension 0");
  ExpectVerifyError(Entry("  %a = f32[10,8] parameter(0)\n"
                          "  %f = f32[] parameter(1)\n"
                          "  ROOT %bad = f32[2,8] dynamic-slice(%a, %f, %f), "
                          "dynamic_slice_sizes={2,8}\n"),
                    "%bad =", "must be an integer scalar");
  ExpectVerifyError(Entry("  %a = f32[10,8] parameter(0)\n"
                          "  %i = s32[] parameter(1)\n"
                          "  ROOT %bad = f32[2,8] dynamic-slice(%a, %i), dynamic_slice_sizes={2,8}\n"),
                    "%bad =", "needs 2 start indices, got 1");
  ExpectVerifyError(Entry("  %a = f32[4,8] parameter(0)\n"
                          "  %u = f32[5,8] parameter(1)\n"
                          "  %i = s32[] parameter(2)\n"
                          "  ROOT %bad = f32[4,8] dynamic-update-slice(%a, %u, %i, %i)\n"),
                    "%bad =", "is larger than operand f32[4,8] in dimension 0");
}

TEST(VerifierDataMovement, Concatenate) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,3] parameter(0)\n"
                                    "  %b = f32[4,3] parameter(1)\n"
                                    "  ROOT %c = f32[8,3] concatenate(%a, %b, %a), dimensions={0}\n")),
            "f32[8,3]");
  ExpectVerifyError(Entry("  %a = f32[2,3] parameter(0)\n"
                          "  %b = f32[2,5] parameter(1)\n"
                          "  ROOT %bad = f32[4,3] concatenate(%a, %b), dimensions={0}\n"),
                    "%bad =", "operand 1 f32[2,5] cannot be concatenated with f32[2,3] along dimension 0");
}

TEST(VerifierDataMovement, PadWithNegativeAndInteriorPadding) {
  // lo=-1, hi=2, interior=1 on 5 elements: 5 + 4*1 - 1 + 2 = 10.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[5] parameter(0)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %p = f32[10] pad(%a, %z), padding=-1_2_1\n")),
            "f32[10]");
  // 3 + 1 + 1 = 5; 4 + 3*2 = 10; -2 - 1 on 4 = 1.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[3,4,4] parameter(0)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %p = f32[5,10,1] pad(%a, %z), padding=1_1x0_0_2x-2_-1\n")),
            "f32[5,10,1]");
  ExpectVerifyError(Entry("  %a = f32[2] parameter(0)\n"
                          "  %z = f32[] constant(0)\n"
                          "  ROOT %bad = f32[0] pad(%a, %z), padding=-3_0\n"),
                    "%bad =", "an invalid size");
  ExpectVerifyError(Entry("  %a = f32[2] parameter(0)\n"
                          "  %z = s32[] constant(0)\n"
                          "  ROOT %bad = f32[2] pad(%a, %z), padding=0_0\n"),
                    "%bad =", "padding value must be a f32 scalar, got s32[]");
}

// ---------------------------------------------------------------------------------------------
// Tuples, calls, control flow

TEST(VerifierControlFlow, TupleAndGetTupleElement) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2] parameter(0)\n"
                                    "  %b = s32[] parameter(1)\n"
                                    "  %t = (f32[2], s32[]) tuple(%a, %b)\n"
                                    "  ROOT %g = s32[] get-tuple-element(%t), index=1\n")),
            "s32[]");
  ExpectVerifyError(Entry("  %a = f32[2] parameter(0)\n"
                          "  %t = (f32[2]) tuple(%a)\n"
                          "  ROOT %bad = f32[2] get-tuple-element(%t), index=1\n"),
                    "%bad =", "index 1 is out of range for (f32[2])");
}

TEST(VerifierControlFlow, Call) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[] parameter(0)\n"
                                    "  ROOT %c = f32[] call(%a, %a), to_apply=%add_f32\n",
                                    kAddF32)),
            "f32[]");
  ExpectVerifyError(Entry("  %a = f32[] parameter(0)\n"
                          "  ROOT %bad = f32[] call(%a), to_apply=%add_f32\n",
                          kAddF32),
                    "%bad =", "takes 2 parameters, expected 1");
}

const char* kLoop = R"(%cond {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %v = f32[4] get-tuple-element(%s), index=1
  ROOT %t = (s32[], f32[4]) tuple(%next, %v)
}

%bad_body {
  %s = (s32[], f32[4]) parameter(0)
  ROOT %i = s32[] get-tuple-element(%s), index=0
}

)";

TEST(VerifierControlFlow, While) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %z = s32[] constant(0)\n"
                                    "  %v = f32[4] parameter(0)\n"
                                    "  %init = (s32[], f32[4]) tuple(%z, %v)\n"
                                    "  ROOT %w = (s32[], f32[4]) while(%init), condition=%cond, "
                                    "body=%body\n",
                                    kLoop)),
            "(s32[], f32[4])");
  ExpectVerifyError(Entry("  %z = s32[] constant(0)\n"
                          "  %v = f32[4] parameter(0)\n"
                          "  %init = (s32[], f32[4]) tuple(%z, %v)\n"
                          "  ROOT %bad = (s32[], f32[4]) while(%init), condition=%cond, "
                          "body=%bad_body\n",
                          kLoop),
                    "%bad =", "body returns s32[] but the loop state is (s32[], f32[4])");
  ExpectVerifyError(Entry("  %v = f32[4] parameter(0)\n"
                          "  ROOT %bad = f32[4] while(%v), condition=%cond, body=%body\n",
                          kLoop),
                    "%bad =", "condition computation %cond parameter 0 has shape (s32[], f32[4]), "
                            "expected f32[4]");
}

const char* kBranches = R"(%neg {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}

%first {
  %t = (f32[4], s32[]) parameter(0)
  ROOT %x = f32[4] get-tuple-element(%t), index=0
}

%twice {
  %x = f32[4] parameter(0)
  ROOT %y = f32[4] add(%x, %x)
}

)";

TEST(VerifierControlFlow, Conditional) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %p = pred[] parameter(0)\n"
                                    "  %a = f32[4] parameter(1)\n"
                                    "  ROOT %c = f32[4] conditional(%p, %a, %a), "
                                    "true_computation=%neg, false_computation=%twice\n",
                                    kBranches)),
            "f32[4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %i = s32[] parameter(0)\n"
                                    "  %a = f32[4] parameter(1)\n"
                                    "  %b = s32[] parameter(2)\n"
                                    "  %t = (f32[4], s32[]) tuple(%a, %b)\n"
                                    "  ROOT %c = f32[4] conditional(%i, %a, %t, %a), "
                                    "branch_computations={%neg, %first, %twice}\n",
                                    kBranches)),
            "f32[4]");
  ExpectVerifyError(Entry("  %p = pred[] parameter(0)\n"
                          "  %a = f32[4] parameter(1)\n"
                          "  ROOT %bad = f32[4] conditional(%p, %a, %a), "
                          "true_computation=%neg, false_computation=%first\n",
                          kBranches),
                    "%bad =", "branch 1 computation %first parameter 0 has shape (f32[4], s32[])");
  ExpectVerifyError(Entry("  %p = f32[] parameter(0)\n"
                          "  %a = f32[4] parameter(1)\n"
                          "  ROOT %bad = f32[4] conditional(%p, %a, %a), "
                          "true_computation=%neg, false_computation=%twice\n",
                          kBranches),
                    "%bad =", "selector must be pred[] or s32[], got f32[]");
}

TEST(VerifierOtherOps, TrustedDeclaredShapes) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4] parameter(0)\n"
                                    "  ROOT %c = (f32[2], s8[3]) custom-call(%a), "
                                    "custom_call_target=\"foo\"\n")),
            "(f32[2], s8[3])");
  EXPECT_EQ(VerifiedRootShape(Entry("  %s = u64[2] parameter(0)\n"
                                    "  ROOT %r = (u64[2], u32[3,4]) rng-bit-generator(%s), "
                                    "algorithm=rng_default\n")),
            "(u64[2], u32[3,4])");
  ExpectVerifyError(Entry("  %s = u64[2] parameter(0)\n"
                          "  ROOT %bad = (u64[3], u32[3,4]) rng-bit-generator(%s), "
                          "algorithm=rng_default\n"),
                    "%bad =", "result must be a tuple (u64[2], values)");
}

// ---------------------------------------------------------------------------------------------
// Module structure and malformed IR built by hand (the parser rejects most of these itself).

Instruction* AddParam(Computation* c, const std::string& name, int64_t number, Shape shape) {
  auto inst = std::make_unique<Instruction>();
  inst->name = name;
  inst->opcode = Opcode::kParameter;
  inst->parameter_number = number;
  inst->shape = std::move(shape);
  inst->loc = SourceLoc{"built", 1, 1};
  return c->AddInstruction(std::move(inst));
}

Instruction* AddOp(Computation* c, const std::string& name, Opcode op, Shape shape,
                   std::vector<Instruction*> operands) {
  auto inst = std::make_unique<Instruction>();
  inst->name = name;
  inst->opcode = op;
  inst->shape = std::move(shape);
  inst->operands = std::move(operands);
  inst->loc = SourceLoc{"built", 7, 3};
  return c->AddInstruction(std::move(inst));
}

TEST(VerifierStructure, MissingEntry) {
  Module m;
  m.name = "m";
  Status s = VerifyModule(m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "module m has no ENTRY computation");
}

TEST(VerifierStructure, ParameterNumbersUniqueAndDense) {
  ExpectVerifyError(Entry("  %a = f32[] parameter(0)\n"
                          "  %b = f32[] parameter(2)\n"
                          "  ROOT %s = f32[] add(%a, %b)\n"),
                    "%b =", "parameter number 2 is out of range: %main has 2 parameters");
  ExpectVerifyError(Entry("  %a = f32[] parameter(0)\n"
                          "  %b = f32[] parameter(0)\n"
                          "  ROOT %s = f32[] add(%a, %b)\n"),
                    "%b =", "parameter number 0 is also used by %a");
}

TEST(VerifierStructure, MalformedIrIsAnErrorNotACrash) {
  Module m;
  auto entry = std::make_unique<Computation>();
  entry->name = "main";
  Computation* c = m.AddComputation(std::move(entry));
  m.set_entry(c);
  Shape f32x4(DType::kF32, {4});
  Instruction* p = AddParam(c, "p", 0, f32x4);
  Instruction* add = AddOp(c, "add", Opcode::kAdd, f32x4, {p, nullptr});
  c->set_root(add);
  Status s = VerifyModule(m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "built:7:3: error: add %add: operand 1 is missing");

  add->operands = {p, p};
  EXPECT_TRUE(VerifyModule(m).ok()) << VerifyModule(m).ToString();

  // Out-of-range attribute dimensions, a missing callee and a null called computation.
  Instruction* zero = AddOp(c, "zero", Opcode::kConstant, Shape::Scalar(DType::kF32), {});
  Instruction* t = AddOp(c, "t", Opcode::kTranspose, f32x4, {p});
  t->dimensions = {7};
  EXPECT_NE(VerifyModule(m).message().find("transpose %t: dimensions={7} has dimension 7 out of range"),
            std::string::npos);
  t->opcode = Opcode::kReduce;
  t->operands = {p, zero};
  t->dimensions = {0};
  EXPECT_NE(VerifyModule(m).message().find("missing to_apply computation"), std::string::npos);
  t->called = {nullptr};
  EXPECT_NE(VerifyModule(m).message().find("called computation 0 is missing"), std::string::npos);
  t->called = {};
  t->opcode = Opcode::kGetTupleElement;
  t->operands = {p};
  EXPECT_NE(VerifyModule(m).message().find("operand must be a tuple"), std::string::npos);
  t->opcode = Opcode::kSlice;
  t->slice = {SliceDimension{0, 4, 0}};
  EXPECT_NE(VerifyModule(m).message().find("is invalid for size 4"), std::string::npos);
  t->opcode = Opcode::kPad;
  t->operands = {p, zero};
  t->padding = {PaddingDimension{INT64_MAX, INT64_MAX, INT64_MAX}};
  EXPECT_NE(VerifyModule(m).message().find("an invalid size"), std::string::npos);
  t->opcode = Opcode::kAdd;
  t->operands = {p, p};
  t->shape = Shape(DType::kF32, {-4});
  EXPECT_NE(VerifyModule(m).message().find("has a negative dimension"), std::string::npos);
}

TEST(VerifierStructure, RecursionIsRejected) {
  Module m;
  auto make = [&](const std::string& name) {
    auto comp = std::make_unique<Computation>();
    comp->name = name;
    return m.AddComputation(std::move(comp));
  };
  Computation* f = make("f");
  Computation* g = make("g");
  Shape s = Shape::Scalar(DType::kF32);
  Instruction* fp = AddParam(f, "x", 0, s);
  Instruction* fc = AddOp(f, "call_g", Opcode::kCall, s, {fp});
  fc->called = {g};
  f->set_root(fc);
  Instruction* gp = AddParam(g, "y", 0, s);
  Instruction* gc = AddOp(g, "call_f", Opcode::kCall, s, {gp});
  gc->called = {f};
  g->set_root(gc);
  m.set_entry(f);
  Status st = VerifyModule(m);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("recursively"), std::string::npos) << st.ToString();
}

// ---------------------------------------------------------------------------------------------
// Real modules printed by XLA must verify.

class VerifierCorpus : public ::testing::TestWithParam<const char*> {};

TEST_P(VerifierCorpus, Verifies) {
  std::string path = std::string(MK_SOURCE_DIR) + "/../shared/hlo-corpus/" + GetParam();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "corpus not present: " << path;
  auto module = ParseModuleFile(path);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Status status = VerifyModule(**module);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

INSTANTIATE_TEST_SUITE_P(Corpus, VerifierCorpus,
                         ::testing::Values("graphsage_tf.hlo", "ssd_mobilenet_tf.hlo"));

}  // namespace
}  // namespace mk::hlo
