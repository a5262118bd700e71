#!/usr/bin/env bash
# The fuzz targets tests/fuzz/CMakeLists.txt builds and those scripts/fuzz.sh
# runs are the same list (a target built but never run finds nothing).
set -uo pipefail
root=${1:?usage: fuzz_targets.sh SOURCE_DIR}
built=$(sed -n 's/^memcg_fuzz_target(\([a-z0-9_]*\) .*/\1/p' "$root/tests/fuzz/CMakeLists.txt" | sort)
listed=$("$root/scripts/fuzz.sh" --list)
[ -n "$built" ] || { echo "FAIL no memcg_fuzz_target(...) found in tests/fuzz/CMakeLists.txt"; exit 1; }
if [ "$built" = "$listed" ]; then
  echo "PASS the $(wc -l <<<"$built") fuzz targets CMake builds are the ones scripts/fuzz.sh runs"
  exit 0
fi
echo "FAIL tests/fuzz/CMakeLists.txt and scripts/fuzz.sh list different fuzz targets:"
diff <(echo "$built") <(echo "$listed") | sed -n 's/^< /  built, not in fuzz.sh: /p; s/^> /  in fuzz.sh, not built: /p'
exit 1
