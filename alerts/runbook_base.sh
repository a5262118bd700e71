#!/bin/sh
# Sets the base of every alert's runbook_url (where alerts/RUNBOOK.md is served) in
# the rule files and in their tests, so that both keep agreeing:
#   alerts/runbook_base.sh https://git.example.com/ops/memcg_exporter/blob/main/alerts/RUNBOOK.md
# The base must be an absolute http(s) URL ending in RUNBOOK.md (the alert's section is
# appended as #<alert name in lower case>). Whatever base a file has now (or the
# repository-relative alerts/RUNBOOK.md) is replaced.
set -eu
case ${1:-} in
  http://*/RUNBOOK.md | https://*/RUNBOOK.md) ;;
  *) echo "usage: $0 http(s)://.../RUNBOOK.md" >&2; exit 2 ;;
esac
case $1 in *[\ \'\"\|\&\\]*) echo "$0: the base must not contain spaces, quotes, | & or \\" >&2; exit 2 ;; esac
dir=$(dirname "$0")
for f in "$dir"/*.rules.yml "$dir"/tests/*.yml; do
  sed -i -E "s|(runbook_url: *'?)([a-z]+://[^#' ]*/)?(alerts/)?RUNBOOK\.md#|\1$1#|" "$f"
done
echo "runbook_url base is now $1"
