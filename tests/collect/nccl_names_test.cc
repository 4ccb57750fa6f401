// NCCL collectives recognised from kernel and API names.
#include "lib/collect/nccl_names.h"

#include "gtest/gtest.h"

namespace sightline::collect {
namespace {

TEST(NcclNamesTest, ModernDeviceKernelNames) {
  NcclKernelInfo info;
  ASSERT_TRUE(ParseNcclKernelName(
      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", &info));
  EXPECT_EQ(info.op, NcclOp::kAllReduce);
  EXPECT_EQ(info.reduction, "Sum");
  EXPECT_EQ(info.datatype, "f32");
  EXPECT_EQ(info.algorithm, "RING_LL");
  ASSERT_TRUE(ParseNcclKernelName("ncclDevKernel_ReduceScatter_Sum_bf16_RING_SIMPLE", &info));
  EXPECT_EQ(info.op, NcclOp::kReduceScatter);
  EXPECT_EQ(info.datatype, "bf16");
  ASSERT_TRUE(ParseNcclKernelName("ncclDevKernel_AllGather_RING_LL", &info));
  EXPECT_EQ(info.op, NcclOp::kAllGather);
  ASSERT_TRUE(ParseNcclKernelName("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", &info));
  EXPECT_EQ(info.op, NcclOp::kSendRecv);
  ASSERT_TRUE(ParseNcclKernelName("ncclDevKernel_Generic_4", &info));
  EXPECT_EQ(info.op, NcclOp::kUnknown);
}

TEST(NcclNamesTest, MangledNameAsCuptiReportsIt) {
  // Recorded from NCCL 2.28.3 on an H200 (tests/data/nccl_*_rank*.sltrace).
  NcclKernelInfo info;
  ASSERT_TRUE(ParseNcclKernelName(
      "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE", &info));
  EXPECT_EQ(info.op, NcclOp::kAllReduce);
  EXPECT_EQ(info.datatype, "f32");
  EXPECT_EQ(info.algorithm, "RING_LL");
  EXPECT_FALSE(ParseNcclKernelName("_Z7ComputePfi", &info));
  EXPECT_FALSE(ParseNcclKernelName("_Z99ncclDevKernel_AllReduce", &info));  // length past end
}

TEST(NcclNamesTest, LegacyKernelNames) {
  NcclKernelInfo info;
  ASSERT_TRUE(ParseNcclKernelName("ncclKernel_Broadcast_RING_LL_Sum_int8_t", &info));
  EXPECT_EQ(info.op, NcclOp::kBroadcast);
  EXPECT_EQ(info.datatype, "int8_t");
  ASSERT_TRUE(ParseNcclKernelName("ncclKernel_Reduce_TREE_LL128_Max_half", &info));
  EXPECT_EQ(info.op, NcclOp::kReduce);
  EXPECT_EQ(info.reduction, "Max");
}

TEST(NcclNamesTest, NonNcclNames) {
  NcclKernelInfo info;
  EXPECT_FALSE(ParseNcclKernelName("_Z6matmulPKfS0_Pfi", &info));
  EXPECT_FALSE(ParseNcclKernelName("nccl", &info));
  EXPECT_FALSE(ParseNcclKernelName("my_ncclDevKernel_AllReduce", &info));
}

TEST(NcclNamesTest, ApiNames) {
  NcclOp op = NcclOp::kUnknown;
  EXPECT_TRUE(ParseNcclApiName("ncclAllReduce", &op));
  EXPECT_EQ(op, NcclOp::kAllReduce);
  EXPECT_TRUE(ParseNcclApiName("ncclReduceScatter", &op));
  EXPECT_EQ(op, NcclOp::kReduceScatter);
  EXPECT_TRUE(ParseNcclApiName("ncclSend", &op));
  EXPECT_EQ(op, NcclOp::kSend);
  EXPECT_FALSE(ParseNcclApiName("ncclGroupEnd", &op));
  EXPECT_FALSE(ParseNcclApiName("ncclCommInitRank", &op));
  EXPECT_FALSE(ParseNcclApiName("AllReduce", &op));
}

TEST(NcclNamesTest, DatatypeSizes) {
  EXPECT_EQ(NcclDatatypeBytes("f32"), 4u);
  EXPECT_EQ(NcclDatatypeBytes("bf16"), 2u);
  EXPECT_EQ(NcclDatatypeBytes("u8"), 1u);
  EXPECT_EQ(NcclDatatypeBytes("double"), 8u);
  EXPECT_EQ(NcclDatatypeBytes("RING"), 0u);
}

}  // namespace
}  // namespace sightline::collect
