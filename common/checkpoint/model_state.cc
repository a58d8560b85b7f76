#include "common/checkpoint/model_state.h"

#include <torch/torch.h>

#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/gan/curator_model.h"
#include "common/gan/party_model.h"

namespace vfsynth {
namespace {

constexpr char kPublishedGenerator[] = "generator";
constexpr char kAverageUpdates[] = "generator_average_updates";
constexpr char kMarginalTarget[] = "marginal_target";

void WriteModule(torch::serialize::OutputArchive& root, const std::string& name,
                 const torch::nn::Module& module) {
  torch::serialize::OutputArchive archive;
  module.save(archive);
  root.write(name, archive);
}

void WriteOptimizer(torch::serialize::OutputArchive& root, const std::string& name,
                    const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  root.write(name, archive);
}

std::string ToBytes(torch::serialize::OutputArchive& root) {
  std::ostringstream out;
  root.save_to(out);
  return out.str();
}

std::vector<std::vector<int64_t>> Shapes(const torch::nn::Module& module) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : module.named_parameters()) shapes.push_back(p.value().sizes().vec());
  for (const auto& b : module.named_buffers()) shapes.push_back(b.value().sizes().vec());
  return shapes;
}

// LibTorch's load replaces tensors whatever their shape; a state of another
// architecture must be an error, not a silently different network.
absl::Status ReadModule(torch::serialize::InputArchive& root, const std::string& name,
                        torch::nn::Module& module) {
  const auto before = Shapes(module);
  torch::serialize::InputArchive archive;
  root.read(name, archive);
  module.load(archive);
  if (Shapes(module) != before) {
    return absl::InvalidArgumentError(absl::StrCat("saved ", name, " has another architecture"));
  }
  return absl::OkStatus();
}

void ReadOptimizer(torch::serialize::InputArchive& root, const std::string& name,
                   torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive archive;
  root.read(name, archive);
  optimizer.load(archive);
}

// Runs `body`, turning LibTorch exceptions into a status naming `what`.
template <typename Body>
absl::Status Guard(const char* what, Body body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.what_without_backtrace()));
  }
}

// Runs `fill` on a new archive and returns the archive's bytes; LibTorch errors name `what`.
template <typename Fill>
absl::StatusOr<std::string> SaveArchive(const char* what, Fill fill) {
  std::string bytes;
  RETURN_IF_ERROR(Guard(what, [&]() {
    torch::serialize::OutputArchive root;
    fill(root);
    bytes = ToBytes(root);
    return absl::OkStatus();
  }));
  return bytes;
}

// Runs `read` on the archive in `bytes`; LibTorch errors name `what`.
template <typename Read>
absl::Status LoadArchive(const char* what, const std::string& bytes, Read read) {
  return Guard(what, [&]() -> absl::Status {
    torch::serialize::InputArchive root;
    root.load_from(bytes.data(), bytes.size());
    return read(root);
  });
}

absl::Status CopyTensors(const std::vector<torch::Tensor>& from,
                         const std::vector<torch::Tensor>& to, const char* what) {
  if (from.size() != to.size())
    return absl::InvalidArgumentError(absl::StrCat(what, ": another architecture"));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < from.size(); ++i) {
    if (!from[i].sizes().equals(to[i].sizes())) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": another architecture"));
    }
    to[i].copy_(from[i]);
  }
  return absl::OkStatus();
}

absl::Status CopyModule(const torch::nn::Module& from, const torch::nn::Module& to,
                        const char* what) {
  RETURN_IF_ERROR(CopyTensors(from.parameters(), to.parameters(), what));
  return CopyTensors(from.buffers(), to.buffers(), what);
}

std::string StateKey(const torch::Tensor& param) {
  return c10::guts::to_string(param.unsafeGetTensorImpl());
}

torch::Tensor Copy(const torch::Tensor& tensor) {
  return tensor.defined() ? tensor.clone() : tensor;
}

// Adam's per-parameter state (step, moments), matched by parameter position.
absl::Status CopyAdam(torch::optim::Adam& from, const std::vector<torch::Tensor>& from_params,
                      torch::optim::Adam& to, const std::vector<torch::Tensor>& to_params,
                      const char* what) {
  if (from_params.size() != to_params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": another architecture"));
  }
  for (size_t i = 0; i < from_params.size(); ++i) {
    auto found = from.state().find(StateKey(from_params[i]));
    if (found == from.state().end()) {  // not stepped yet
      to.state().erase(StateKey(to_params[i]));
      continue;
    }
    const auto& state = static_cast<const torch::optim::AdamParamState&>(*found->second);
    auto copy = std::make_unique<torch::optim::AdamParamState>();
    copy->step(state.step());
    copy->exp_avg(Copy(state.exp_avg()));
    copy->exp_avg_sq(Copy(state.exp_avg_sq()));
    copy->max_exp_avg_sq(Copy(state.max_exp_avg_sq()));
    to.state()[StateKey(to_params[i])] = std::move(copy);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CopyCuratorState(CuratorModel& from, CuratorModel& to) {
  return Guard("copying the curator model", [&]() -> absl::Status {
    RETURN_IF_ERROR(CopyModule(*from.generator(), *to.generator(), "generator"));
    RETURN_IF_ERROR(CopyModule(*from.shared_critic(), *to.shared_critic(), "shared critic"));
    RETURN_IF_ERROR(CopyAdam(from.generator_optimizer(), from.generator()->parameters(),
                             to.generator_optimizer(), to.generator()->parameters(),
                             "generator optimizer"));
    RETURN_IF_ERROR(CopyAdam(from.shared_optimizer(), from.shared_critic()->parameters(),
                             to.shared_optimizer(), to.shared_critic()->parameters(),
                             "shared optimizer"));
    GeneratorAverage* average = from.generator_average();
    if ((average != nullptr) != (to.generator_average() != nullptr)) {
      return absl::InvalidArgumentError("the two models disagree on the generator average");
    }
    if (average != nullptr) {
      RETURN_IF_ERROR(
          CopyModule(*average->average(), *to.generator_average()->average(), "generator average"));
      to.generator_average()->set_updates(average->updates());
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> SaveCuratorState(CuratorModel& model) {
  return SaveArchive("saving the curator model", [&](torch::serialize::OutputArchive& root) {
    WriteModule(root, "generator", *model.generator());
    WriteModule(root, "shared_critic", *model.shared_critic());
    WriteOptimizer(root, "generator_optimizer", model.generator_optimizer());
    WriteOptimizer(root, "shared_optimizer", model.shared_optimizer());
    if (GeneratorAverage* average = model.generator_average()) {
      WriteModule(root, "generator_average", *average->average());
      root.write(kAverageUpdates, torch::tensor(average->updates(), torch::kLong));
    }
  });
}

absl::Status RestoreCuratorState(const std::string& bytes, CuratorModel& model) {
  return LoadArchive(
      "restoring the curator model", bytes, [&](torch::serialize::InputArchive& root) {
        RETURN_IF_ERROR(ReadModule(root, "generator", *model.generator()));
        RETURN_IF_ERROR(ReadModule(root, "shared_critic", *model.shared_critic()));
        ReadOptimizer(root, "generator_optimizer", model.generator_optimizer());
        ReadOptimizer(root, "shared_optimizer", model.shared_optimizer());
        torch::Tensor updates;
        const bool saved_average = root.try_read(kAverageUpdates, updates);
        if (saved_average != (model.generator_average() != nullptr)) {
          return absl::InvalidArgumentError(
              "the saved state and this run disagree on "
              "training.experimental.generator_average_decay");
        }
        if (saved_average) {
          RETURN_IF_ERROR(
              ReadModule(root, "generator_average", *model.generator_average()->average()));
          model.generator_average()->set_updates(updates.item<int64_t>());
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<std::string> SavePublishedGenerator(CuratorModel& model) {
  return SavePublishedGenerator(*model.published_generator());
}

absl::StatusOr<std::string> SavePublishedGenerator(GeneratorImpl& generator) {
  return SaveArchive("saving the published generator", [&](torch::serialize::OutputArchive& root) {
    WriteModule(root, kPublishedGenerator, generator);
  });
}

absl::StatusOr<std::string> SaveGeneratorFit(GeneratorImpl& generator,
                                             torch::optim::Adam& optimizer) {
  return SaveArchive("saving the fitted generator", [&](torch::serialize::OutputArchive& root) {
    WriteModule(root, "generator", generator);
    WriteOptimizer(root, "optimizer", optimizer);
  });
}

absl::Status RestoreGeneratorFit(const std::string& bytes, GeneratorImpl& generator,
                                 torch::optim::Adam& optimizer) {
  return LoadArchive("restoring the fitted generator", bytes,
                     [&](torch::serialize::InputArchive& root) -> absl::Status {
                       RETURN_IF_ERROR(ReadModule(root, "generator", generator));
                       ReadOptimizer(root, "optimizer", optimizer);
                       return absl::OkStatus();
                     });
}

absl::Status RestorePublishedGenerator(const std::string& bytes, GeneratorImpl& generator) {
  return LoadArchive("restoring the published generator", bytes,
                     [&](torch::serialize::InputArchive& root) {
                       return ReadModule(root, kPublishedGenerator, generator);
                     });
}

absl::StatusOr<std::string> SavePartyState(PartyModel& model) {
  return SaveArchive("saving the party model", [&](torch::serialize::OutputArchive& root) {
    WriteModule(root, "feat", *model.feat());
    WriteModule(root, "head", *model.head());
    WriteOptimizer(root, "optimizer", model.optimizer());
    // A DP release: once drawn it must be the one used for the rest of the run.
    if (model.marginal_target().has_value())
      root.write(kMarginalTarget, model.marginal_target()->probabilities());
  });
}

absl::Status RestorePartyState(const std::string& bytes, PartyModel& model) {
  return LoadArchive("restoring the party model", bytes, [&](torch::serialize::InputArchive& root) {
    RETURN_IF_ERROR(ReadModule(root, "feat", *model.feat()));
    RETURN_IF_ERROR(ReadModule(root, "head", *model.head()));
    ReadOptimizer(root, "optimizer", model.optimizer());
    torch::Tensor marginals;
    const bool saved_marginals = root.try_read(kMarginalTarget, marginals);
    if (saved_marginals != model.marginal_target().has_value()) {
      return absl::InvalidArgumentError(
          "the saved state and this run disagree on training.marginal_weight");
    }
    if (saved_marginals) {
      ASSIGN_OR_RETURN(MarginalTarget target,
                       model.marginal_target()->WithProbabilities(marginals));
      model.SetMarginalTarget(std::move(target));
    }
    return absl::OkStatus();
  });
}

}  // namespace vfsynth
