// Record → event conversion of every CUPTI activity kind the collector
// enables, from synthetic CUPTI 13 records.
#include "lib/collect/record_converter.h"

#include <cupti.h>

#include "gtest/gtest.h"
#include "tests/collect/fake_event_sink.h"
#include "tests/collect/synthetic_records.h"

namespace sightline::collect {
namespace {

using testing::Api;
using testing::Kernel;
using testing::Marker;
using testing::Memcpy;
using testing::Memset;

const char* FakeApiName(ApiDomain domain, uint32_t cbid) {
  if (domain == ApiDomain::kRuntime && cbid == 211) return "cudaLaunchKernel_v7000";
  if (domain == ApiDomain::kRuntime && cbid == 17) return "cudaGetDevice_v3020";
  if (domain == ApiDomain::kDriver && cbid == 307) return "cuLaunchKernel";
  if (domain == ApiDomain::kDriver && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) {
    return "cuLaunchKernelEx";
  }
  return nullptr;
}

class ConverterTest : public ::testing::Test {
 protected:
  ConverterTest() : converter_(&sink_, Options(), &FakeApiName) {}
  static ConverterOptions Options() {
    ConverterOptions o;
    o.api_skip = {"cudaGetDevice"};
    return o;
  }
  void Convert(const void* record) {
    converter_.Convert(static_cast<const CUpti_Activity*>(record));
  }
  FakeEventSink sink_;
  RecordConverter converter_;
};

TEST_F(ConverterTest, KernelCarriesLaunchConfiguration) {
  auto k = Kernel(1000, 3500, "_Z6matmulPKfS0_Pfi", 42);
  k.graphId = 3;
  k.graphNodeId = 99;
  k.launchType = 3;
  k.clusterX = 2;
  Convert(&k);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  const KernelEvent& e = sink_.kernels[0];
  EXPECT_EQ(e.start_ns, 1000u);
  EXPECT_EQ(e.end_ns, 3500u);
  EXPECT_EQ(e.stream_id, 7u);
  EXPECT_EQ(e.correlation_id, 42u);
  EXPECT_EQ(sink_.Str(e.name_id), "_Z6matmulPKfS0_Pfi");
  EXPECT_EQ(e.grid_x, 132u);
  EXPECT_EQ(e.grid_y, 2u);
  EXPECT_EQ(e.block_x, 256u);
  EXPECT_EQ(e.registers_per_thread, 40u);
  EXPECT_EQ(e.static_shared_bytes, 4096u);
  EXPECT_EQ(e.dynamic_shared_bytes, 1024u);
  EXPECT_EQ(e.shared_memory_config_bytes, 102400u);
  EXPECT_EQ(e.graph_id, 3u);
  EXPECT_EQ(e.graph_node_id, 99u);
  EXPECT_EQ(e.launch_type, 3u);
  EXPECT_EQ(e.cluster_x, 2u);
  EXPECT_FALSE(e.replayed);
  EXPECT_TRUE(sink_.nccls.empty());
  EXPECT_EQ(converter_.stats().counts[static_cast<int>(EventKind::kKernel)], 1u);
}

TEST_F(ConverterTest, ReplayedKernelsAreMarked) {
  converter_.set_replayed_fn([](uint32_t c) { return c == 5; });
  auto a = Kernel(10, 20, "a", 5);
  auto b = Kernel(30, 40, "b", 6);
  Convert(&a);
  Convert(&b);
  ASSERT_EQ(sink_.kernels.size(), 2u);
  EXPECT_TRUE(sink_.kernels[0].replayed);
  EXPECT_FALSE(sink_.kernels[1].replayed);
}

// With metrics on, a kernel record without timestamps (a CUDA graph's
// kernels inside a measured per-range instance, CUPTI 13.0) is kept as an
// untraced kernel; without metrics, or with only one timestamp missing, it
// is invalid and counted lost.
TEST(ConverterUntimedTest, KernelRecordsWithoutTimestampsAreKeptUntracedWhenMetricsAreOn) {
  for (bool keep : {false, true}) {
    FakeEventSink sink;
    ConverterOptions o;
    o.keep_untimed_kernels = keep;
    RecordConverter converter(&sink, o, &FakeApiName);
    auto untimed = Kernel(0, 0, "graph_node_kernel", 8);
    auto half = Kernel(0, 500, "half", 9);
    auto timed = Kernel(10, 20, "timed", 10);
    for (const void* r : {static_cast<const void*>(&untimed), static_cast<const void*>(&half),
                          static_cast<const void*>(&timed)}) {
      converter.Convert(static_cast<const CUpti_Activity*>(r));
    }
    if (keep) {
      ASSERT_EQ(sink.kernels.size(), 2u);
      EXPECT_TRUE(sink.kernels[0].untraced);
      EXPECT_TRUE(sink.kernels[0].untimed());
      EXPECT_FALSE(sink.kernels[0].replayed);
      EXPECT_EQ(sink.Str(sink.kernels[0].name_id), "graph_node_kernel");
      EXPECT_EQ(sink.kernels[0].correlation_id, 8u);
      EXPECT_EQ(sink.kernels[0].grid_x, 132u);  // the record's own configuration
      EXPECT_FALSE(sink.kernels[1].untraced);
      EXPECT_EQ(converter.stats().untimed_kernels_kept, 1u);
      EXPECT_EQ(converter.stats().invalid_timestamps, 1u);  // "half"
    } else {
      ASSERT_EQ(sink.kernels.size(), 1u);
      EXPECT_EQ(converter.stats().untimed_kernels_kept, 0u);
      EXPECT_EQ(converter.stats().invalid_timestamps, 2u);
    }
  }
}

// Memsets inside sequence passes came with no timestamps (the corpus CNN,
// run AV): kept untraced when metrics are on, counted lost otherwise.
TEST(ConverterUntimedTest, MemsetRecordsWithoutTimestampsAreKeptUntracedWhenMetricsAreOn) {
  for (bool keep : {false, true}) {
    FakeEventSink sink;
    ConverterOptions o;
    o.keep_untimed_kernels = keep;
    RecordConverter converter(&sink, o, &FakeApiName);
    auto untimed = Memset(0, 0, 3);
    auto half = Memset(0, 40, 4);
    auto timed = Memset(10, 20, 5);
    for (const auto* m : {&untimed, &half, &timed}) {
      converter.Convert(reinterpret_cast<const CUpti_Activity*>(m));
    }
    if (keep) {
      ASSERT_EQ(sink.memsets.size(), 2u);
      EXPECT_TRUE(sink.memsets[0].untraced);
      EXPECT_EQ(sink.memsets[0].correlation_id, 3u);
      EXPECT_EQ(sink.memsets[0].bytes, 1024u);
      EXPECT_EQ(sink.memsets[0].stream_id, 7u);
      EXPECT_FALSE(sink.memsets[1].untraced);
      EXPECT_EQ(converter.stats().untimed_memsets_kept, 1u);
      EXPECT_EQ(converter.stats().invalid_timestamps, 1u);  // "half"
    } else {
      ASSERT_EQ(sink.memsets.size(), 1u);
      EXPECT_FALSE(sink.memsets[0].untraced);
      EXPECT_EQ(converter.stats().untimed_memsets_kept, 0u);
      EXPECT_EQ(converter.stats().invalid_timestamps, 2u);
    }
  }
}

// What a launch call gives for a kernel measured in place while not traced:
// the configuration of synthetic_records.h's Kernel() (grid 132x2, block
// 256, 1024 bytes of dynamic shared memory) unless `grid` says otherwise.
KernelEvent UntracedLaunch(uint32_t corr, uint32_t grid = 132) {
  KernelEvent e;
  e.correlation_id = corr;
  e.stream_id = 7;
  e.grid_x = grid;
  e.grid_y = 2;
  e.block_x = 256;
  e.dynamic_shared_bytes = 1024;
  return e;
}

// A kernel measured in place while not traced: written from its launch
// call, with what the call does not carry copied from a traced launch of the
// same configuration — at once when one was seen, else once one comes, else
// at the end with those fields 0 (counted).
TEST(ConverterUntracedTest, UntracedKernelsTakeTheirConfigurationFromATracedLaunch) {
  FakeEventSink sink;
  ConverterOptions o;
  o.untraced_kernels = true;
  RecordConverter c(&sink, o, &FakeApiName);
  // Before any traced launch of its configuration: waits.
  c.AddUntracedKernel(UntracedLaunch(50), "_Z6matmulPKfS0_Pfi");
  c.FlushUntracedKernels(false);
  EXPECT_TRUE(sink.kernels.empty());
  auto traced = Kernel(1000, 3500, "_Z6matmulPKfS0_Pfi", 42);  // grid 132x2, block 256
  c.Convert(reinterpret_cast<const CUpti_Activity*>(&traced));
  c.FlushUntracedKernels(false);
  ASSERT_EQ(sink.kernels.size(), 2u);
  const KernelEvent& u = sink.kernels[1];
  EXPECT_TRUE(u.untraced);
  EXPECT_FALSE(u.replayed);
  EXPECT_EQ(u.start_ns, 0u);
  EXPECT_EQ(u.correlation_id, 50u);
  EXPECT_EQ(u.name_id, sink.kernels[0].name_id);
  EXPECT_EQ(u.registers_per_thread, 40u);
  EXPECT_EQ(u.static_shared_bytes, 4096u);
  EXPECT_EQ(u.shared_memory_config_bytes, 102400u);
  EXPECT_EQ(u.context_id, sink.kernels[0].context_id);
  // Known configuration: written at once.
  c.AddUntracedKernel(UntracedLaunch(51), "_Z6matmulPKfS0_Pfi");
  ASSERT_EQ(sink.kernels.size(), 3u);
  EXPECT_EQ(sink.kernels[2].registers_per_thread, 40u);
  // Another grid: never traced; written at the end, counted.
  c.AddUntracedKernel(UntracedLaunch(52, 64), "_Z6matmulPKfS0_Pfi");
  c.FlushUntracedKernels(false);
  EXPECT_EQ(sink.kernels.size(), 3u);
  c.FlushUntracedKernels(true);
  ASSERT_EQ(sink.kernels.size(), 4u);
  EXPECT_EQ(sink.kernels[3].registers_per_thread, 0u);
  EXPECT_TRUE(sink.kernels[3].untraced);
  EXPECT_EQ(c.stats().untraced_without_template, 1u);
  EXPECT_EQ(c.stats().counts[static_cast<int>(EventKind::kKernel)], 4u);
}

// A launch during which the kernel kind changed may have a CUPTI record
// after all: its untraced event waits for the end and is dropped when the
// record was converted before or comes after.
TEST(ConverterUntracedTest, MaybeTracedKernelsAreWrittenOnlyWithoutARecord) {
  FakeEventSink sink;
  ConverterOptions o;
  o.untraced_kernels = true;
  RecordConverter c(&sink, o, &FakeApiName);
  auto before = Kernel(1000, 3500, "_Z6matmulPKfS0_Pfi", 60);
  c.Convert(reinterpret_cast<const CUpti_Activity*>(&before));
  c.AddUntracedKernel(UntracedLaunch(60), "_Z6matmulPKfS0_Pfi", /*maybe_traced=*/true);  // record first
  c.AddUntracedKernel(UntracedLaunch(61), "_Z6matmulPKfS0_Pfi", /*maybe_traced=*/true);  // record later
  c.AddUntracedKernel(UntracedLaunch(62), "_Z6matmulPKfS0_Pfi", /*maybe_traced=*/true);  // none
  c.FlushUntracedKernels(false);
  EXPECT_EQ(sink.kernels.size(), 1u);  // held
  auto after = Kernel(4000, 4500, "_Z6matmulPKfS0_Pfi", 61);
  c.Convert(reinterpret_cast<const CUpti_Activity*>(&after));
  c.FlushUntracedKernels(true);
  ASSERT_EQ(sink.kernels.size(), 3u);
  EXPECT_FALSE(sink.kernels[1].untraced);
  EXPECT_TRUE(sink.kernels[2].untraced);
  EXPECT_EQ(sink.kernels[2].correlation_id, 62u);
  EXPECT_EQ(sink.kernels[2].registers_per_thread, 40u);
  EXPECT_EQ(c.stats().untraced_duplicates_dropped, 2u);
}

TEST_F(ConverterTest, NcclKernelAlsoBecomesCommunicationEvent) {
  auto k = Kernel(100, 900, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 8);
  Convert(&k);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  ASSERT_EQ(sink_.nccls.size(), 1u);
  const NcclEvent& n = sink_.nccls[0];
  EXPECT_EQ(n.op, NcclOp::kAllReduce);
  EXPECT_EQ(sink_.Str(n.datatype_id), "f32");
  EXPECT_EQ(n.source, NcclSource::kGpuKernel);
  EXPECT_EQ(n.start_ns, 100u);
  EXPECT_EQ(n.end_ns, 900u);
  EXPECT_EQ(n.correlation_id, 8u);
  EXPECT_EQ(n.name_id, sink_.kernels[0].name_id);
}

TEST_F(ConverterTest, MemcpyKeepsMemoryKindsAndAsyncFlag) {
  auto pageable = Memcpy(10, 110, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                         CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                         /*async=*/true, 4 << 20);
  auto pinned = Memcpy(200, 250, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                       /*async=*/false, 64);
  Convert(&pageable);
  Convert(&pinned);
  ASSERT_EQ(sink_.memcpys.size(), 2u);
  EXPECT_EQ(sink_.memcpys[0].copy_kind, CopyKind::kHtoD);
  EXPECT_EQ(sink_.memcpys[0].src_kind, MemoryKind::kPageable);
  EXPECT_EQ(sink_.memcpys[0].dst_kind, MemoryKind::kDevice);
  EXPECT_TRUE(sink_.memcpys[0].async);
  EXPECT_EQ(sink_.memcpys[0].bytes, 4u << 20);
  EXPECT_EQ(sink_.memcpys[1].copy_kind, CopyKind::kDtoH);
  EXPECT_EQ(sink_.memcpys[1].dst_kind, MemoryKind::kPinned);
  EXPECT_FALSE(sink_.memcpys[1].async);
}

TEST_F(ConverterTest, PeerMemcpyKeepsBothDevices) {
  CUpti_ActivityMemcpyPtoP4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.start = 5;
  m.end = 9;
  m.bytes = 1000;
  m.srcDeviceId = 0;
  m.dstDeviceId = 1;
  Convert(&m);
  ASSERT_EQ(sink_.memcpys.size(), 1u);
  EXPECT_EQ(sink_.memcpys[0].copy_kind, CopyKind::kPtoP);
  EXPECT_EQ(sink_.memcpys[0].src_device_id, 0u);
  EXPECT_EQ(sink_.memcpys[0].dst_device_id, 1u);
}

TEST_F(ConverterTest, Memset) {
  CUpti_ActivityMemset4 m = Memset(1, 2, 0);
  m.bytes = 4096;
  m.value = 0xab;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.flags = 0;
  Convert(&m);
  ASSERT_EQ(sink_.memsets.size(), 1u);
  EXPECT_EQ(sink_.memsets[0].bytes, 4096u);
  EXPECT_EQ(sink_.memsets[0].value, 0xabu);
  EXPECT_EQ(sink_.memsets[0].memory_kind, MemoryKind::kPinned);
  EXPECT_FALSE(sink_.memsets[0].async);
}

TEST_F(ConverterTest, MemoryAllocationsReleasesAndPools) {
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.correlationId = 41;
  m.address = 0x7f0000000000ull;
  m.bytes = 20ull << 20;
  m.timestamp = 1000;
  m.deviceId = 2;
  m.contextId = 1;
  m.streamId = 0xffffffffu;
  m.source = "libtorch_cuda.so";
  Convert(&m);
  // A stream-ordered release from a local pool.
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  m.timestamp = 2000;
  m.isAsync = 1;
  m.streamId = 7;
  m.source = nullptr;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  m.memoryPoolConfig.address = 0x7e0000000000ull;
  m.memoryPoolConfig.pool.size = 64ull << 20;
  m.memoryPoolConfig.utilizedSize = 20ull << 20;
  Convert(&m);
  m.timestamp = 0;  // invalid: counted, not written
  Convert(&m);
  CUpti_ActivityMemoryPool3 p;
  std::memset(&p, 0, sizeof(p));
  p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
  p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  p.address = 0x7e0000000000ull;
  p.size = 32ull << 20;
  p.timestamp = 3000;
  p.deviceId = 2;
  Convert(&p);

  ASSERT_EQ(sink_.memory.size(), 3u);
  const MemoryEvent& a = sink_.memory[0];
  EXPECT_EQ(a.operation, MemoryOperation::kAllocation);
  EXPECT_EQ(a.memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(a.timestamp_ns, 1000u);
  EXPECT_EQ(a.bytes, 20ull << 20);
  EXPECT_EQ(a.correlation_id, 41u);
  EXPECT_EQ(a.stream_id, kNoStream);
  EXPECT_EQ(a.pool_address, 0u);
  EXPECT_EQ(sink_.strings[a.source_id], "libtorch_cuda.so");
  const MemoryEvent& r = sink_.memory[1];
  EXPECT_EQ(r.operation, MemoryOperation::kRelease);
  EXPECT_TRUE(r.async);
  EXPECT_EQ(r.stream_id, 7u);
  EXPECT_EQ(r.pool_address, 0x7e0000000000ull);
  EXPECT_EQ(r.pool_size, 64ull << 20);
  EXPECT_EQ(r.pool_used, 20ull << 20);
  EXPECT_EQ(r.source_id, 0u);
  const MemoryEvent& t = sink_.memory[2];
  EXPECT_EQ(t.operation, MemoryOperation::kPoolTrimmed);
  EXPECT_EQ(t.bytes, 32ull << 20);
  EXPECT_EQ(converter_.stats().invalid_timestamps, 1u);
  EXPECT_EQ(converter_.stats().counts[static_cast<int>(EventKind::kMemory)], 3u);
}

TEST_F(ConverterTest, SynchronizationGetsDeviceFromEarlierKernelOfItsContext) {
  auto k = Kernel(1, 2, "k", 1);
  k.deviceId = 3;
  k.contextId = 9;
  Convert(&k);
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  s.start = 10;
  s.end = 20;
  s.contextId = 9;
  s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.correlationId = 77;
  Convert(&s);
  ASSERT_EQ(sink_.syncs.size(), 1u);
  EXPECT_EQ(sink_.syncs[0].sync_kind, SyncKind::kContextSynchronize);
  EXPECT_EQ(sink_.syncs[0].stream_id, kNoStream);
  EXPECT_EQ(sink_.syncs[0].cuda_event_id, 0u);
  EXPECT_EQ(sink_.syncs[0].device_id, 3u);
  EXPECT_EQ(sink_.syncs[0].correlation_id, 77u);
}

TEST_F(ConverterTest, ApiRecordsNamedSkippedAndGivenStacks) {
  auto launch = Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 100, 105, 42);
  auto query = Api(CUPTI_ACTIVITY_KIND_RUNTIME, 17, 106, 107, 43);  // skip list
  auto driver = Api(CUPTI_ACTIVITY_KIND_DRIVER, 307, 101, 104, 42);
  auto unknown = Api(CUPTI_ACTIVITY_KIND_RUNTIME, 9999, 110, 120, 44);
  converter_.AttachStack(42, 5);
  Convert(&launch);
  Convert(&query);
  Convert(&driver);
  Convert(&unknown);
  ASSERT_EQ(sink_.apis.size(), 3u);
  EXPECT_EQ(sink_.Str(sink_.apis[0].name_id), "cudaLaunchKernel_v7000");
  EXPECT_EQ(sink_.apis[0].domain, ApiDomain::kRuntime);
  EXPECT_EQ(sink_.apis[0].thread_id, 101u);
  EXPECT_EQ(sink_.apis[0].stack_id, 5u);
  EXPECT_EQ(sink_.Str(sink_.apis[1].name_id), "cuLaunchKernel");
  EXPECT_EQ(sink_.apis[1].domain, ApiDomain::kDriver);
  EXPECT_EQ(sink_.apis[1].stack_id, 0u);  // the stack went to the first record
  EXPECT_EQ(sink_.Str(sink_.apis[2].name_id), "runtime_cbid_9999");
  EXPECT_EQ(converter_.stats().skipped_api_records, 1u);
}

TEST_F(ConverterTest, PythonStacksGoToTheirApiRecord) {
  auto launch = Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 100, 105, 42);
  auto other = Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 110, 115, 43);
  converter_.AttachPythonStack(42, 7);
  converter_.AttachStack(42, 5);
  Convert(&launch);
  Convert(&other);
  ASSERT_EQ(sink_.apis.size(), 2u);
  EXPECT_EQ(sink_.apis[0].python_stack_id, 7u);
  EXPECT_EQ(sink_.apis[0].stack_id, 5u);
  EXPECT_EQ(sink_.apis[1].python_stack_id, 0u);
  EXPECT_EQ(converter_.stats().python_stacks_unmatched, 0u);
}

TEST_F(ConverterTest, CallbackTimedDriverLaunchesAreApiRecordsWithTheirStacks) {
  // A cuBLAS cuLaunchKernelEx without the driver kind: the collector times it
  // in its callbacks; it becomes an API record like CUPTI's, with its stacks.
  converter_.AttachPythonStack(77, 9);
  converter_.AttachStack(77, 4);
  converter_.AddCallbackApi(ApiDomain::kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 500, 520,
                            77, 1234);
  converter_.AddCallbackApi(ApiDomain::kDriver, 307, 530, 530, 78, 1234);
  converter_.AddCallbackApi(ApiDomain::kDriver, 307, 540, 539, 79, 1234);  // end before start: not a valid span, dropped
  ASSERT_EQ(sink_.apis.size(), 2u);
  EXPECT_EQ(sink_.Str(sink_.apis[0].name_id), "cuLaunchKernelEx");
  EXPECT_EQ(sink_.apis[0].domain, ApiDomain::kDriver);
  EXPECT_EQ(sink_.apis[0].start_ns, 500u);
  EXPECT_EQ(sink_.apis[0].end_ns, 520u);
  EXPECT_EQ(sink_.apis[0].correlation_id, 77u);
  EXPECT_EQ(sink_.apis[0].thread_id, 1234u);
  EXPECT_EQ(sink_.apis[0].python_stack_id, 9u);
  EXPECT_EQ(sink_.apis[0].stack_id, 4u);
  EXPECT_EQ(sink_.apis[1].python_stack_id, 0u);
  EXPECT_EQ(converter_.stats().python_stacks_unmatched, 0u);
}

TEST_F(ConverterTest, NvtxRangesPairAcrossThreadsAndCarryMarkerData) {
  auto start = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 1000, "forward", nullptr, 7);
  CUpti_ActivityMarkerData2 data;
  std::memset(&data, 0, sizeof(data));
  data.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  data.id = 1;
  data.color = 0xff00ff00;
  data.category = 4;
  data.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
  data.payload.metricValueUint64 = 12;
  auto other_start = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 1100, "load", "trainer", 8);
  auto other_end = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 1900, nullptr, nullptr, 9);
  auto end = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 2000, nullptr, nullptr, 7);
  Convert(&start);
  Convert(&data);
  Convert(&other_start);
  Convert(&other_end);
  Convert(&end);
  ASSERT_EQ(sink_.ranges.size(), 2u);
  const NvtxRangeEvent& load = sink_.ranges[0];
  EXPECT_EQ(sink_.Str(load.name_id), "load");
  EXPECT_EQ(sink_.Str(load.domain_id), "trainer");
  EXPECT_EQ(load.thread_id, 8u);
  EXPECT_EQ(load.end_thread_id, 9u);
  EXPECT_FALSE(load.push_pop);  // ended on another thread: a start/end range
  const NvtxRangeEvent& fwd = sink_.ranges[1];
  EXPECT_EQ(sink_.Str(fwd.name_id), "forward");
  EXPECT_EQ(fwd.domain_id, 0u);
  EXPECT_EQ(fwd.start_ns, 1000u);
  EXPECT_EQ(fwd.end_ns, 2000u);
  EXPECT_TRUE(fwd.push_pop);
  EXPECT_EQ(fwd.color, 0xff00ff00u);
  EXPECT_EQ(fwd.category, 4u);
  EXPECT_EQ(fwd.payload_kind, PayloadKind::kUint64);
  EXPECT_EQ(fwd.payload_int, 12);
}

TEST_F(ConverterTest, InstantMarkersWaitForTheirDataUntilEndOfBuffer) {
  auto mark = Marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 5, 500, "checkpoint", nullptr, 3);
  CUpti_ActivityMarkerData2 data;
  std::memset(&data, 0, sizeof(data));
  data.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  data.id = 5;
  data.payloadKind = CUPTI_METRIC_VALUE_KIND_DOUBLE;
  data.payload.metricValueDouble = 0.5;
  Convert(&mark);
  EXPECT_TRUE(sink_.markers.empty());
  Convert(&data);
  converter_.EndBuffer();
  ASSERT_EQ(sink_.markers.size(), 1u);
  EXPECT_EQ(sink_.Str(sink_.markers[0].name_id), "checkpoint");
  EXPECT_EQ(sink_.markers[0].timestamp_ns, 500u);
  EXPECT_EQ(sink_.markers[0].payload_kind, PayloadKind::kDouble);
  EXPECT_DOUBLE_EQ(sink_.markers[0].payload_double, 0.5);
}

TEST_F(ConverterTest, NcclNvtxRangeBecomesHostCommunicationEvent) {
  auto start = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 9, 100, "ncclAllGather", "NCCL", 3);
  auto end = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 9, 150, nullptr, nullptr, 3);
  auto group = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 10, 160, "ncclGroupEnd", "NCCL", 3);
  auto group_end = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 10, 170, nullptr, nullptr, 3);
  Convert(&start);
  Convert(&end);
  Convert(&group);
  Convert(&group_end);
  EXPECT_EQ(sink_.ranges.size(), 2u);
  ASSERT_EQ(sink_.nccls.size(), 1u);
  EXPECT_EQ(sink_.nccls[0].op, NcclOp::kAllGather);
  EXPECT_EQ(sink_.nccls[0].source, NcclSource::kHostNvtx);
  EXPECT_EQ(sink_.nccls[0].thread_id, 3u);
}

TEST_F(ConverterTest, UnmatchedEndsAndOpenRangesAreAccounted) {
  auto stray = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 77, 10, nullptr, nullptr, 1);
  auto open = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 78, 20, "never_closed", nullptr, 1);
  Convert(&stray);
  Convert(&open);
  EXPECT_EQ(converter_.stats().unmatched_range_ends, 1u);
  EXPECT_TRUE(sink_.ranges.empty());
  converter_.CloseOpenRanges(500);
  ASSERT_EQ(sink_.ranges.size(), 1u);
  EXPECT_EQ(sink_.ranges[0].end_ns, 500u);
  EXPECT_EQ(converter_.stats().open_ranges_at_end, 1u);
}

TEST_F(ConverterTest, OverheadAndGraphRecords) {
  CUpti_ActivityOverhead3 o;
  std::memset(&o, 0, sizeof(o));
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.threadId = 55;
  o.start = 10;
  o.end = 30;
  Convert(&o);
  ASSERT_EQ(sink_.overheads.size(), 1u);
  EXPECT_EQ(sink_.overheads[0].thread_id, 55u);
  EXPECT_EQ(sink_.overheads[0].overhead_kind,
            static_cast<uint32_t>(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH));
  CUpti_ActivityGraphTrace2 g;
  std::memset(&g, 0, sizeof(g));
  g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  g.start = 100;
  g.end = 200;
  g.graphId = 4;
  g.correlationId = 6;
  Convert(&g);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_EQ(sink_.Str(sink_.kernels[0].name_id), "[CUDA graph 4]");
  EXPECT_EQ(sink_.kernels[0].graph_id, 4u);
}

TEST_F(ConverterTest, InvalidTimestampsAndUnknownKindsAreCountedNotWritten) {
  auto backwards = Kernel(500, 400, "k", 1);
  auto zero = Kernel(0, 0, "k", 2);
  auto copy = Memcpy(9, 3, 1, 1, 3, false, 8);
  Convert(&backwards);
  Convert(&zero);
  Convert(&copy);
  CUpti_Activity unknown;
  unknown.kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING;
  Convert(&unknown);
  EXPECT_TRUE(sink_.kernels.empty());
  EXPECT_TRUE(sink_.memcpys.empty());
  EXPECT_EQ(converter_.stats().invalid_timestamps, 3u);
  EXPECT_EQ(converter_.stats().unsupported_records, 1u);
  EXPECT_EQ(converter_.stats().records, 4u);
}

TEST_F(ConverterTest, NcclDisabledMeansNoCommunicationEvents) {
  ConverterOptions o;
  o.nccl = false;
  FakeEventSink sink;
  RecordConverter c(&sink, o, nullptr);
  auto k = Kernel(1, 2, "ncclKernel_AllReduce_RING_LL_Sum_float", 1);
  c.Convert(reinterpret_cast<const CUpti_Activity*>(&k));
  EXPECT_EQ(sink.kernels.size(), 1u);
  EXPECT_TRUE(sink.nccls.empty());
}

}  // namespace
}  // namespace sightline::collect
