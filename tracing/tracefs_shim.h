// A small C boundary around libtracefs.
//
// Why: tracefs.h of libtracefs 1.6.4 is not C++-clean (no extern "C" and a
// static inline that does not compile as C++), so every libtracefs call lives
// in tracefs_shim.c and C++ code sees only these plain declarations.
// All functions return 0 / a valid pointer on success and -1 / NULL with errno
// set on failure.
#ifndef MEMCG_TRACING_TRACEFS_SHIM_H_
#define MEMCG_TRACING_TRACEFS_SHIM_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct memcg_tfs_instance;

/// Every call names the tracefs root (`dir`, a mounted tracefs) or uses an
/// instance made under one: libtracefs's process-wide tracing dir is never
/// set, so two sessions with different roots never see each other's.
/// 1 if an instance `name` exists under `dir`, else 0.
int memcg_tfs_instance_exists(const char* dir, const char* name);
/// Creates (mkdir <dir>/instances/<name>) or opens an instance; *is_new tells which.
struct memcg_tfs_instance* memcg_tfs_instance_create(const char* dir, const char* name,
                                                     int* is_new);
/// rmdir instances/<name>; fails with EBUSY while any of its files is open.
int memcg_tfs_instance_destroy(struct memcg_tfs_instance* inst);
void memcg_tfs_instance_free(struct memcg_tfs_instance* inst);
/// Removes an existing instance <dir>/instances/<name> (stale instances of ours).
int memcg_tfs_instance_destroy_by_name(const char* dir, const char* name);
/// Writes `<instance>/events/<sys>/<event>/enable`.
int memcg_tfs_event_enable(struct memcg_tfs_instance* inst, const char* sys,
                           const char* event);
/// Writes `<instance>/events/<sys>/<event>/<file>` (e.g. "filter").
int memcg_tfs_event_file_write(struct memcg_tfs_instance* inst, const char* sys,
                               const char* event, const char* file, const char* str);
/// Writes `<instance>/<file>` (e.g. "tracing_on", "trace_clock").
int memcg_tfs_instance_file_write(struct memcg_tfs_instance* inst, const char* file,
                                  const char* str);
/// Sets buffer_size_kb for every CPU of the instance.
int memcg_tfs_set_buffer_size_kb(struct memcg_tfs_instance* inst, size_t kb);
/// Copies the instance's directory into buf (NUL-terminated).
int memcg_tfs_instance_dir(struct memcg_tfs_instance* inst, char* buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif  // MEMCG_TRACING_TRACEFS_SHIM_H_
