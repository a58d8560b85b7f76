// The torch-free parameter count the feasibility estimate uses is the model's own.
#include <gtest/gtest.h>

#include "common/nn/wae.h"
#include "common/nn/wae_size.h"

namespace vfsynth {
namespace {

TEST(WaeParameterCountTest, TheTorchFreeCountIsTheBuiltModelsParameterCount) {
  for (const WaeOptions& options : {WaeOptions{202, 64, 16}, WaeOptions{121, 32, 16},
                                    WaeOptions{2, 1, 1}, WaeOptions{57, 128, 8}}) {
    const int64_t count =
        WaeParameterCountOf(options.input_dim, options.hidden, options.latent);
    EXPECT_EQ(count, WaeParameterCount(options)) << options.input_dim;
    Wae model(options);
    EXPECT_EQ(count, FlatParameters(*model).numel()) << options.input_dim;
  }
}

}  // namespace
}  // namespace vfsynth
