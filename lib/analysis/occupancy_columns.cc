// The kernel table's theoretical occupancy columns, from the occupancy
// calculator (occupancy.h).
#include "lib/analysis/occupancy.h"
#include "lib/analysis/report_builder.h"

namespace sightline::analysis {

void FillOccupancy(const TimelineModel& model, const LaunchConfig& config, KernelRow* row) {
  if (config.device >= model.devices.size()) return;
  const DeviceTimelineInfo& device = model.devices[config.device];
  if (!device.has_info) return;
  absl::StatusOr<ArchitectureLimits> arch = LimitsForDevice(device.info);
  if (!arch.ok()) return;
  LaunchResources launch;
  launch.threads_per_block = static_cast<uint32_t>(config.threads_per_block());
  launch.registers_per_thread = config.registers_per_thread;
  launch.static_shared_bytes = config.static_shared_bytes;
  launch.dynamic_shared_bytes = config.dynamic_shared_bytes;
  launch.shared_config_bytes = config.shared_memory_config_bytes;
  launch.cluster_launch = config.launch_type == 3;
  absl::StatusOr<OccupancyResult> result = ComputeOccupancy(*arch, launch);
  if (!result.ok()) return;
  row->theoretical_occupancy_pct = result->theoretical_occupancy_pct;
  row->occupancy_limiter = OccupancyLimiterName(result->limiter);
}

}  // namespace sightline::analysis
