#include "codegen/emitter.h"

#include <gtest/gtest.h>

namespace mk::codegen {
namespace {

Implementation Sample() {
  Implementation impl;
  impl.target = "cpu";
  impl.sources = {{"module.cc", "extern \"C\" void mk_kernel(void**) {}\n"}};
  impl.flags = {"-fopenmp"};
  impl.buffers = {{BufferSlot::Role::kParameter, 0, hlo::Shape(hlo::DType::kBF16, {2, 3}), 12},
                  {BufferSlot::Role::kOutput, 0, hlo::Shape(hlo::DType::kF32, {3}), 12}};
  impl.hash = "abc";
  return impl;
}

TEST(ImplementationJson, RoundTripsEveryField) {
  Implementation impl = Sample();
  auto back = ImplementationFromJson(ImplementationToJson(impl));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->target, "cpu");
  EXPECT_EQ(back->hash, "abc");
  EXPECT_EQ(back->flags, impl.flags);
  ASSERT_EQ(back->sources.size(), 1u);
  EXPECT_EQ(back->sources[0].text, impl.sources[0].text);
  ASSERT_EQ(back->buffers.size(), 2u);
  EXPECT_EQ(back->buffers[0].role, BufferSlot::Role::kParameter);
  EXPECT_EQ(back->buffers[0].shape.dtype(), hlo::DType::kBF16);
  EXPECT_EQ(back->buffers[0].shape.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back->buffers[1].role, BufferSlot::Role::kOutput);
  EXPECT_EQ(back->buffers[1].bytes, 12);
}

TEST(ImplementationJson, RejectsDamagedForms) {
  nlohmann::json j = ImplementationToJson(Sample());
  EXPECT_FALSE(ImplementationFromJson(nlohmann::json::array()).ok());
  auto no_shape = j;
  no_shape["buffers"][0].erase("shape");
  EXPECT_FALSE(ImplementationFromJson(no_shape).ok());
  auto bad_flags = j;
  bad_flags["flags"] = 3;
  EXPECT_FALSE(ImplementationFromJson(bad_flags).ok());
  auto bad_dtype = j;
  bad_dtype["buffers"][0]["shape"]["dtype"] = "f33";
  EXPECT_FALSE(ImplementationFromJson(bad_dtype).ok());
  auto bad_bytes = j;
  bad_bytes["buffers"][1]["bytes"] = 13;
  EXPECT_FALSE(ImplementationFromJson(bad_bytes).ok());
  auto bad_role = j;
  bad_role["buffers"][0]["role"] = "scratch";
  EXPECT_FALSE(ImplementationFromJson(bad_role).ok());
}

}  // namespace
}  // namespace mk::codegen
