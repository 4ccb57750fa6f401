#include "lib/analysis/report.h"

#include <utility>

namespace sightline::analysis {

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kHigh: return "high";
    case Severity::kMedium: return "medium";
    case Severity::kLow: return "low";
    case Severity::kInfo: return "info";
  }
  return "info";
}

Severity SeverityForSavingPct(double pct) {
  if (pct >= 20) return Severity::kHigh;
  if (pct >= 5) return Severity::kMedium;
  if (pct >= 1) return Severity::kLow;
  return Severity::kInfo;
}

Finding& Finding::Number(std::string key, double value, std::string unit) {
  EvidenceItem e;
  e.key = std::move(key);
  e.is_number = true;
  e.number = value;
  e.unit = std::move(unit);
  evidence.push_back(std::move(e));
  return *this;
}

Finding& Finding::Text(std::string key, std::string value) {
  EvidenceItem e;
  e.key = std::move(key);
  e.is_number = false;
  e.text = std::move(value);
  evidence.push_back(std::move(e));
  return *this;
}

double Finding::EvidenceNumber(const std::string& key, double fallback) const {
  for (const EvidenceItem& e : evidence) {
    if (e.key == key && e.is_number) return e.number;
  }
  return fallback;
}

}  // namespace sightline::analysis
