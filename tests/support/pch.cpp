// The source of memcg_test_pch (cmake/MemcgTesting.cmake): the precompiled
// header every test target reuses is built with this file's flags.
