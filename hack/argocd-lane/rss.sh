#!/usr/bin/env bash
# rss.sh: the resident memory of every process of the real Argo CD lane
# ($LANE_DIR, default /tmp/kargo-fleet-argocd-lane), by its PID file, and
# the total, as ps reports it (RSS counts pages shared between processes
# once per process).
L=${LANE_DIR:-/tmp/kargo-fleet-argocd-lane}
cd "$L/run" 2>/dev/null || { echo "no lane in $L"; exit 1; }
total=0
printf '%-36s %8s %10s\n' component pid rss_MiB
for f in *.pid; do
  p=$(cat "$f")
  rss=$(ps -o rss= -p "$p" 2>/dev/null | tr -d ' ')
  [ -n "$rss" ] || { printf '%-36s %8s %10s\n' "${f%.pid}" "$p" "(gone)"; continue; }
  total=$((total + rss))
  printf '%-36s %8s %10.1f\n' "${f%.pid}" "$p" "$(echo "$rss / 1024" | bc -l)"
done | sort -k3 -n -r
for f in *.pid; do ps -o rss= -p "$(cat "$f")" 2>/dev/null; done | awk '{s+=$1} END {printf "%-36s %8s %10.1f\n", "total", "", s/1024}'
