// See tracefs_shim.h: the only translation unit that includes tracefs.h.
#include "tracing/tracefs_shim.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <tracefs.h>

struct memcg_tfs_instance {
  struct tracefs_instance* inst;
};

static int instance_path(const char* dir, const char* name, char* buf, size_t len) {
  if (!dir || !name) {
    errno = EINVAL;
    return -1;
  }
  int n = snprintf(buf, len, "%s/instances/%s", dir, name);
  if (n < 0 || (size_t)n >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}

int memcg_tfs_instance_exists(const char* dir, const char* name) {
  char path[PATH_MAX];
  struct stat st;
  if (instance_path(dir, name, path, sizeof(path)) != 0) return 0;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 1 : 0;
}

struct memcg_tfs_instance* memcg_tfs_instance_create(const char* dir, const char* name,
                                                     int* is_new) {
  // mkdir ourselves, then an instance object bound to `dir` (not to the
  // library's process-wide tracing dir, which tracefs_instance_create uses).
  char path[PATH_MAX];
  if (instance_path(dir, name, path, sizeof(path)) != 0) return NULL;
  int created = mkdir(path, 0755) == 0;
  if (!created && errno != EEXIST) return NULL;
  struct tracefs_instance* inst = tracefs_instance_alloc(dir, name);
  if (!inst) {
    int saved = errno ? errno : ENOENT;
    if (created) rmdir(path);
    errno = saved;
    return NULL;
  }
  struct memcg_tfs_instance* w = calloc(1, sizeof(*w));
  if (!w) {
    tracefs_instance_free(inst);
    if (created) rmdir(path);
    errno = ENOMEM;
    return NULL;
  }
  w->inst = inst;
  if (is_new) *is_new = created;
  return w;
}

int memcg_tfs_instance_destroy(struct memcg_tfs_instance* w) {
  if (!w || !w->inst) {
    errno = EINVAL;
    return -1;
  }
  return tracefs_instance_destroy(w->inst);
}

void memcg_tfs_instance_free(struct memcg_tfs_instance* w) {
  if (!w) return;
  tracefs_instance_free(w->inst);
  free(w);
}

int memcg_tfs_instance_destroy_by_name(const char* dir, const char* name) {
  if (!dir) {
    errno = EINVAL;
    return -1;
  }
  struct tracefs_instance* inst = tracefs_instance_alloc(dir, name);
  if (!inst) return -1;
  int ret = tracefs_instance_destroy(inst);
  int saved = errno;
  tracefs_instance_free(inst);
  errno = saved;
  return ret;
}

int memcg_tfs_event_enable(struct memcg_tfs_instance* w, const char* sys,
                           const char* event) {
  // Not tracefs_event_enable(): it lists the event systems under the
  // library's process-wide tracing dir (and mounts tracefs to find one when
  // ours is a private mount). Writing the one enable file needs no lookup.
  return tracefs_event_file_write(w->inst, sys, event, "enable", "1") < 0 ? -1 : 0;
}

int memcg_tfs_event_file_write(struct memcg_tfs_instance* w, const char* sys,
                               const char* event, const char* file, const char* str) {
  return tracefs_event_file_write(w->inst, sys, event, file, str) < 0 ? -1 : 0;
}

int memcg_tfs_instance_file_write(struct memcg_tfs_instance* w, const char* file,
                                  const char* str) {
  return tracefs_instance_file_write(w->inst, file, str) < 0 ? -1 : 0;
}

int memcg_tfs_set_buffer_size_kb(struct memcg_tfs_instance* w, size_t kb) {
  return tracefs_instance_set_buffer_size(w->inst, kb, -1);
}

int memcg_tfs_instance_dir(struct memcg_tfs_instance* w, char* buf, size_t len) {
  char* dir = tracefs_instance_get_dir(w->inst);
  if (!dir) return -1;
  int n = snprintf(buf, len, "%s", dir);
  tracefs_put_tracing_file(dir);
  if (n < 0 || (size_t)n >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}
