#ifndef VFSYNTH_TESTS_UNIT_DATA_ENCODER_FROM_JSON_H_
#define VFSYNTH_TESTS_UNIT_DATA_ENCODER_FROM_JSON_H_

#include <gtest/gtest.h>

#include <string>

#include "common/data/encoder.h"
#include "common/data/schema.h"

namespace vfsynth {

// The encoder of a schema written inline (a test failure if it does not parse).
inline TableEncoder EncoderFromJson(const std::string& json) {
  auto schema = ParseSchema(json, "party.json");
  EXPECT_TRUE(schema.ok()) << schema.status();
  auto encoder = TableEncoder::Create(*schema);
  EXPECT_TRUE(encoder.ok()) << encoder.status();
  return *std::move(encoder);
}

}  // namespace vfsynth

#endif  // VFSYNTH_TESTS_UNIT_DATA_ENCODER_FROM_JSON_H_
