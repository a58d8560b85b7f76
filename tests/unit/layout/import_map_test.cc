// The source tree's import map: which folder's files include which other folder's headers.
// A cycle between folders means neither can be understood, built or replaced alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"

namespace vfsynth {
namespace {

namespace fs = std::filesystem;
using FolderGraph = std::map<std::string, std::set<std::string>>;

// Each folder of common/, server/ and client/ with the folders whose headers its files include.
FolderGraph ImportMap(const fs::path& root) {
  const std::regex include(R"re(^\s*#\s*include\s+"((common|server|client)/.+)/[^/]+")re");
  FolderGraph graph;
  for (const char* top : {"common", "server", "client"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string extension = entry.path().extension().string();
      if (!entry.is_regular_file() || (extension != ".cc" && extension != ".h")) continue;
      const std::string folder = fs::relative(entry.path().parent_path(), root).string();
      graph[folder];
      std::ifstream file(entry.path());
      std::string line;
      std::smatch match;
      while (std::getline(file, line)) {
        if (std::regex_search(line, match, include) && match[1].str() != folder)
          graph[folder].insert(match[1].str());
      }
    }
  }
  return graph;
}

// One cycle of folders (its path, the first folder again at the end), or none.
std::vector<std::string> FindCycle(const FolderGraph& graph) {
  std::map<std::string, int> state;  // 0 unseen, 1 on the path, 2 done
  std::vector<std::string> path;
  std::vector<std::string> cycle;
  std::function<bool(const std::string&)> visit = [&](const std::string& folder) {
    state[folder] = 1;
    path.push_back(folder);
    const auto edges = graph.find(folder);
    if (edges != graph.end()) {
      for (const std::string& next : edges->second) {
        if (state[next] == 1) {
          cycle.assign(std::find(path.begin(), path.end(), next), path.end());
          cycle.push_back(next);
          return true;
        }
        if (state[next] == 0 && visit(next)) return true;
      }
    }
    path.pop_back();
    state[folder] = 2;
    return false;
  };
  for (const auto& [folder, edges] : graph) {
    if (state[folder] == 0 && visit(folder)) return cycle;
  }
  return {};
}

TEST(ImportMapTest, FindsACycleWhereThereIsOne) {
  const FolderGraph graph = {
      {"common/a", {"common/b"}}, {"common/b", {"common/c"}}, {"common/c", {"common/a"}}};
  EXPECT_THAT(FindCycle(graph),
              ::testing::ElementsAre("common/a", "common/b", "common/c", "common/a"));
  EXPECT_TRUE(FindCycle({{"common/a", {"common/b"}}, {"common/b", {}}}).empty());
}

TEST(ImportMapTest, NoFolderCycle) {
  const FolderGraph graph = ImportMap(VFSYNTH_SOURCE_DIR);
  ASSERT_GT(graph.size(), 10u);  // the tree was found
  const std::vector<std::string> cycle = FindCycle(graph);
  EXPECT_TRUE(cycle.empty()) << "folders include each other's headers: "
                             << absl::StrJoin(cycle, " -> ");
}

}  // namespace
}  // namespace vfsynth
