#ifndef VFSYNTH_COMMON_BASE_STATUS_MACROS_H_
#define VFSYNTH_COMMON_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Early-return helpers for absl::Status / absl::StatusOr code paths.
#define VFS_CONCAT_INNER(a, b) a##b
#define VFS_CONCAT(a, b) VFS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status vfs_status_ = (expr);       \
    if (!vfs_status_.ok()) return vfs_status_; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(*tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(VFS_CONCAT(vfs_statusor_, __LINE__), lhs, expr)

#endif  // VFSYNTH_COMMON_BASE_STATUS_MACROS_H_
