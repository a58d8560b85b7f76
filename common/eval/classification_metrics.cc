#include "common/eval/classification_metrics.h"

#include <cstddef>
#include <limits>

namespace vfsynth {

ClassificationScores ScorePredictions(const std::vector<int>& truth,
                                      const std::vector<int>& predicted, int num_classes,
                                      int positive_class) {
  std::vector<double> tp(num_classes, 0), fp(num_classes, 0), fn(num_classes, 0);
  double correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    if (truth[i] == predicted[i]) {
      correct += 1;
      tp[truth[i]] += 1;
    } else {
      fn[truth[i]] += 1;
      fp[predicted[i]] += 1;
    }
  }
  const auto f1 = [&](int c) {
    const double denom = 2 * tp[c] + fp[c] + fn[c];
    return denom == 0 ? 0.0 : 2 * tp[c] / denom;
  };
  ClassificationScores scores;
  scores.accuracy = truth.empty() ? 0 : correct / static_cast<double>(truth.size());
  scores.binary_f1 =
      positive_class >= 0 ? f1(positive_class) : std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  int present = 0;
  for (int c = 0; c < num_classes; ++c) {
    if (tp[c] + fp[c] + fn[c] == 0) continue;
    sum += f1(c);
    ++present;
  }
  scores.macro_f1 = present == 0 ? 0 : sum / present;
  return scores;
}

double RocAuc(const std::vector<double>& scores, const std::vector<int>& labels) {
  double pairs = 0, wins = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (labels[i] != 1) continue;
    for (size_t j = 0; j < scores.size(); ++j) {
      if (labels[j] == 1) continue;
      pairs += 1;
      wins += scores[i] > scores[j] ? 1.0 : scores[i] == scores[j] ? 0.5 : 0.0;
    }
  }
  return pairs == 0 ? std::numeric_limits<double>::quiet_NaN() : wins / pairs;
}

int MinorityClass(const std::vector<int>& labels, int num_classes) {
  std::vector<long> counts(num_classes, 0);
  for (int label : labels) ++counts[label];
  int best = -1;
  for (int c = 0; c < num_classes; ++c) {
    if (counts[c] > 0 && (best < 0 || counts[c] < counts[best])) best = c;
  }
  return best;
}

}  // namespace vfsynth
