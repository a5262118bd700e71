#!/bin/sh
# unit.rules_promtool_agreement: `promtool test rules` and `memcgtool test rules`
# give the same verdict on every rule test file: alerts/tests/*.yml (all pass) and
# tests/rules/*_test.yml (pass_* pass, fail_* are built to fail: both must fail),
# and `check rules` agrees on every rule file. promtool runs each test file 5
# times: without group_eval_order it evaluates rule groups in random order, so
# a verdict that changes between runs is a test file to fix, reported as such.
# memcgtool must not warn that a verdict depends on group order. Exits 77
# without promtool.
# usage: agreement.sh MEMCGTOOL REPO_ROOT
set -u
memcgtool=$1
root=$2
command -v promtool >/dev/null || { echo "SKIP: no promtool"; exit 77; }
bad=0
n=0
verdict() { "$@" >/dev/null 2>&1 && echo pass || echo fail; }
for f in "$root"/alerts/tests/*.yml "$root"/tests/rules/*_test.yml; do
  n=$((n + 1))
  p=$(verdict promtool test rules "$f")
  for _ in 1 2 3 4; do
    [ "$(verdict promtool test rules "$f")" = "$p" ] || p=random
  done
  m=$(verdict "$memcgtool" test rules "$f")
  if "$memcgtool" test rules "$f" 2>&1 | grep -q WARNING; then m="$m+order-warning"; fi
  want=pass
  case $(basename "$f") in fail_*) want=fail ;; esac
  printf '%-60s promtool=%s memcgtool=%s want=%s\n' "${f#"$root"/}" "$p" "$m" "$want"
  if [ "$p" != "$m" ] || [ "$p" != "$want" ]; then
    bad=$((bad + 1))
    "$memcgtool" test rules "$f" | sed 's/^/  memcgtool| /'
    promtool test rules "$f" 2>&1 | sed 's/^/  promtool | /'
  fi
done
for f in "$root"/alerts/*.rules.yml "$root"/tests/rules/*.rules.yml; do
  n=$((n + 1))
  p=$(verdict promtool check rules "$f")
  m=$(verdict "$memcgtool" check rules "$f")
  printf '%-60s check: promtool=%s memcgtool=%s\n' "${f#"$root"/}" "$p" "$m"
  [ "$p" = "$m" ] || bad=$((bad + 1))
done
echo "$n files, $bad disagreements"
[ "$bad" -eq 0 ]
