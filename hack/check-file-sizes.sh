#!/usr/bin/env bash
# Fails when a file git tracks is larger than MAX_FILE_BYTES (default 1 MiB),
# as staged or as it is in the work tree, so binaries and build output never
# reach the repository: they belong in the ignored bin/. `make verify` runs it.
#
# Usage: hack/check-file-sizes.sh   (from anywhere inside the repository)
set -euo pipefail

max="${MAX_FILE_BYTES:-1048576}"
cd "$(git rev-parse --show-toplevel)"

found=""
report() { # path, what
  if ! printf '%s' "${found}" | grep -Fq -- "  $1 ("; then
    found+="  $1 ($2)"$'\n'
  fi
}
# Staged blobs: what the next commit holds.
while IFS=' ' read -r size path; do
  if (( size > max )); then report "${path}" "${size} bytes staged"; fi
done < <(git ls-files -s -z | tr '\0' '\n' |
  awk '{sub(/^[0-9]+ /, ""); obj = $1; sub(/^[0-9a-f]+ [0-9]+\t/, ""); print obj " " $0}' |
  git cat-file --batch-check='%(objectsize) %(rest)')
# The work tree: a tracked file that grew since it was staged (one wc for
# all files; deleted files are skipped, wc's "total" line is dropped).
while read -r size path; do
  if [[ -f "${path}" ]] && (( size > max )); then report "${path}" "${size} bytes in the work tree"; fi
done < <(git ls-files -z | xargs -0 wc -c 2>/dev/null | awk 'NF >= 2' || true)

if [[ -n "${found}" ]]; then
  echo "tracked files larger than ${max} bytes:" >&2
  printf '%s' "${found}" | sort >&2
  echo "remove them from git (git rm --cached <file>) and keep build output in bin/" >&2
  exit 1
fi
