// memcg_test_bcrypt PASSWORD [COST]: prints a bcrypt ("$2b$") crypt(3) hash of
// PASSWORD (cost 4 unless given) for the e2e tests' --web.config.file
// basic_auth_users. It uses libxcrypt, the library the exporter verifies
// with, so those checks need neither python3's crypt module (gone in Python
// 3.13) nor another package.
#include <crypt.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: memcg_test_bcrypt PASSWORD [COST]\n");
    return 2;
  }
  const unsigned long cost = argc == 3 ? std::strtoul(argv[2], nullptr, 10) : 4;
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  // No random bytes given: libxcrypt takes them from the kernel.
  if (crypt_gensalt_rn("$2b$", cost, nullptr, 0, salt, sizeof salt) == nullptr) {
    std::perror("memcg_test_bcrypt: crypt_gensalt_rn");
    return 1;
  }
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on the stack
  const char* hash = crypt_r(argv[1], salt, data.get());
  if (hash == nullptr || hash[0] == '*') {
    std::fprintf(stderr, "memcg_test_bcrypt: crypt_r failed\n");
    return 1;
  }
  std::puts(hash);
  return 0;
}
