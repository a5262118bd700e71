// See tracefs_shim.h: the only translation unit that includes tracefs.h.
#include "tracing/tracefs_shim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tracefs.h>

struct memcg_tfs_instance {
  struct tracefs_instance* inst;
};

int memcg_tfs_set_tracing_dir(const char* dir) {
  // libtracefs keeps its own copy of the string.
  return tracefs_set_tracing_dir((char*)dir);
}

int memcg_tfs_instance_exists(const char* name) {
  return tracefs_instance_exists(name) ? 1 : 0;
}

struct memcg_tfs_instance* memcg_tfs_instance_create(const char* name, int* is_new) {
  struct tracefs_instance* inst = tracefs_instance_create(name);
  if (!inst) return NULL;
  struct memcg_tfs_instance* w = calloc(1, sizeof(*w));
  if (!w) {
    tracefs_instance_free(inst);
    errno = ENOMEM;
    return NULL;
  }
  w->inst = inst;
  if (is_new) *is_new = tracefs_instance_is_new(inst) ? 1 : 0;
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

int memcg_tfs_instance_destroy_by_name(const char* name) {
  struct tracefs_instance* inst = tracefs_instance_alloc(NULL, name);
  if (!inst) return -1;
  int ret = tracefs_instance_destroy(inst);
  int saved = errno;
  tracefs_instance_free(inst);
  errno = saved;
  return ret;
}

int memcg_tfs_event_enable(struct memcg_tfs_instance* w, const char* sys,
                           const char* event) {
  return tracefs_event_enable(w->inst, sys, event);
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
