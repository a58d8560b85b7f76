#include "common/eval/random_forest.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

// Candidate thresholds of one feature: midpoints between distinct values when there
// are few, else midpoints at quantiles. A value's bin is the number of thresholds <= it.
std::vector<float> FeatureThresholds(std::vector<float> values, int max_bins) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<float> out;
  if (static_cast<int>(values.size()) <= max_bins) {
    for (size_t i = 1; i < values.size(); ++i) out.push_back(0.5f * (values[i - 1] + values[i]));
    return out;
  }
  for (int b = 1; b < max_bins; ++b) {
    const size_t i = values.size() * b / max_bins;
    const float t = 0.5f * (values[i - 1] + values[i]);
    if (out.empty() || t > out.back()) out.push_back(t);
  }
  return out;
}

uint8_t BinOf(const std::vector<float>& thresholds, float x) {
  return static_cast<uint8_t>(std::upper_bound(thresholds.begin(), thresholds.end(), x) -
                              thresholds.begin());
}

}  // namespace

absl::Status RandomForest::Fit(const FeatureMatrix& x, const std::vector<int>& y, int num_classes) {
  if (x.rows == 0 || x.cols == 0) return absl::InvalidArgumentError("random forest: empty data");
  if (static_cast<int64_t>(y.size()) != x.rows) {
    return absl::InvalidArgumentError("random forest: label count differs from row count");
  }
  if (options_.trees <= 0 || options_.max_bins < 2 || options_.max_bins > 255) {
    return absl::InvalidArgumentError("random forest: need trees > 0 and 2 <= max_bins <= 255");
  }
  for (int label : y) {
    if (label < 0 || label >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("random forest: label ", label, " out of range"));
    }
  }
  num_classes_ = num_classes;
  cols_ = x.cols;
  thresholds_.assign(cols_, {});
  // Column-major bins keep the per-feature histogram pass cache-friendly.
  std::vector<uint8_t> binned(static_cast<size_t>(x.rows) * cols_);
  std::vector<float> column(x.rows);
  for (int f = 0; f < cols_; ++f) {
    for (int64_t r = 0; r < x.rows; ++r) column[r] = x.values[r * cols_ + f];
    thresholds_[f] = FeatureThresholds(column, options_.max_bins);
    for (int64_t r = 0; r < x.rows; ++r) binned[f * x.rows + r] = BinOf(thresholds_[f], column[r]);
  }
  trees_.assign(options_.trees, {});
  const int threads = std::max(1, std::min(options_.threads, options_.trees));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = t; i < options_.trees; i += threads) {
        trees_[i] = BuildTree(binned, y, x.rows, options_.seed * 1000003u + i);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return absl::OkStatus();
}

RandomForest::Tree RandomForest::BuildTree(const std::vector<uint8_t>& binned,
                                           const std::vector<int>& y, int64_t rows,
                                           uint64_t tree_seed) const {
  std::mt19937_64 rng(tree_seed);
  const int k = num_classes_;
  std::vector<uint32_t> weight(rows, 1);
  if (options_.bootstrap) {
    std::fill(weight.begin(), weight.end(), 0);
    for (int64_t i = 0; i < rows; ++i) ++weight[rng() % static_cast<uint64_t>(rows)];
  }
  std::vector<int64_t> index;
  for (int64_t r = 0; r < rows; ++r) {
    if (weight[r] > 0) index.push_back(r);
  }
  const int mtry = options_.max_features > 0
                       ? std::min(options_.max_features, cols_)
                       : std::max(1, static_cast<int>(std::lround(std::sqrt(cols_))));
  std::vector<int> features(cols_);
  std::iota(features.begin(), features.end(), 0);
  std::vector<double> hist(256 * k), left_counts(k), counts(k);

  Tree tree;
  struct Task {
    int64_t begin, end;
    int depth;
    int node;
  };
  tree.nodes.emplace_back();
  std::vector<Task> stack = {{0, static_cast<int64_t>(index.size()), 0, 0}};
  while (!stack.empty()) {
    const Task task = stack.back();
    stack.pop_back();
    std::fill(counts.begin(), counts.end(), 0.0);
    for (int64_t i = task.begin; i < task.end; ++i) counts[y[index[i]]] += weight[index[i]];
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    const int nonzero = static_cast<int>(
        std::count_if(counts.begin(), counts.end(), [](double c) { return c > 0; }));
    double parent_score = 0;  // sum_c n_c^2 / n: higher = purer
    for (double c : counts) parent_score += c * c / total;

    int best_feature = -1, best_bin = -1;
    double best_score = parent_score + 1e-9;
    const bool can_split = nonzero > 1 && total >= options_.min_samples_split &&
                           (options_.max_depth <= 0 || task.depth < options_.max_depth);
    if (can_split) {
      // Draw features without replacement; like scikit-learn, keep drawing past mtry
      // until a usable (non-constant) feature has been seen.
      int tried = 0;
      for (int j = 0; j < cols_ && (tried < mtry || best_feature < 0); ++j) {
        const int pick = j + static_cast<int>(rng() % static_cast<uint64_t>(cols_ - j));
        std::swap(features[j], features[pick]);
        const int f = features[j];
        const int nbins = static_cast<int>(thresholds_[f].size()) + 1;
        if (nbins < 2) continue;
        std::fill(hist.begin(), hist.begin() + nbins * k, 0.0);
        const uint8_t* fb = binned.data() + static_cast<size_t>(f) * rows;
        uint8_t lo = 255, hi = 0;
        for (int64_t i = task.begin; i < task.end; ++i) {
          const int64_t r = index[i];
          const uint8_t b = fb[r];
          hist[b * k + y[r]] += weight[r];
          lo = std::min(lo, b), hi = std::max(hi, b);
        }
        if (lo == hi) continue;  // constant in this node
        ++tried;
        std::fill(left_counts.begin(), left_counts.end(), 0.0);
        double left_total = 0;
        for (int b = lo; b < hi; ++b) {
          for (int c = 0; c < k; ++c)
            left_counts[c] += hist[b * k + c], left_total += hist[b * k + c];
          if (left_total == 0 || left_total == total) continue;
          double left_sq = 0, right_sq = 0;
          for (int c = 0; c < k; ++c) {
            left_sq += left_counts[c] * left_counts[c];
            const double rc = counts[c] - left_counts[c];
            right_sq += rc * rc;
          }
          const double score = left_sq / left_total + right_sq / (total - left_total);
          if (score > best_score) best_score = score, best_feature = f, best_bin = b;
        }
      }
    }
    if (best_feature < 0) {
      tree.nodes[task.node].proba_offset = static_cast<int>(tree.proba.size());
      for (double c : counts) tree.proba.push_back(static_cast<float>(c / total));
      continue;
    }
    const uint8_t* fb = binned.data() + static_cast<size_t>(best_feature) * rows;
    const auto mid = std::partition(index.begin() + task.begin, index.begin() + task.end,
                                    [&](int64_t r) { return fb[r] <= best_bin; });
    const int64_t split = mid - index.begin();
    const int left = static_cast<int>(tree.nodes.size());
    tree.nodes.emplace_back();
    tree.nodes.emplace_back();
    Node& node = tree.nodes[task.node];
    node.feature = best_feature;
    node.threshold = thresholds_[best_feature][best_bin];
    node.left = left;
    node.right = left + 1;
    stack.push_back({task.begin, split, task.depth + 1, left});
    stack.push_back({split, task.end, task.depth + 1, left + 1});
  }
  return tree;
}

absl::StatusOr<std::vector<double>> RandomForest::PredictProba(const FeatureMatrix& x) const {
  const int k = num_classes_;
  std::vector<double> out(static_cast<size_t>(x.rows) * k, 0.0);
  if (trees_.empty())
    return absl::FailedPreconditionError("random forest: PredictProba before Fit");
  if (x.cols != cols_)
    return absl::InvalidArgumentError("random forest: feature count differs from Fit");
  const int threads = std::max(1, options_.threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int64_t r = t; r < x.rows; r += threads) {
        const float* row = x.row(r);
        for (const Tree& tree : trees_) {
          int n = 0;
          while (tree.nodes[n].feature >= 0) {
            const Node& node = tree.nodes[n];
            n = row[node.feature] < node.threshold ? node.left : node.right;
          }
          const float* p = tree.proba.data() + tree.nodes[n].proba_offset;
          for (int c = 0; c < k; ++c) out[r * k + c] += p[c];
        }
        for (int c = 0; c < k; ++c) out[r * k + c] /= static_cast<double>(trees_.size());
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return out;
}

int64_t RandomForest::total_nodes() const {
  int64_t n = 0;
  for (const Tree& tree : trees_) n += static_cast<int64_t>(tree.nodes.size());
  return n;
}

}  // namespace vfsynth
