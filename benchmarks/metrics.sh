#!/usr/bin/env bash
# Scrape cost of `accessoryctl watch --metrics` under accessory-sim (run inside it: scripts/bench metrics):
# 34 accessories; 500 scrapes, each a new connection; 8 scrapers at once; a scrape while a
# client sends half a request and stops. Needs curl.
#   accessory-sim --accessory ... -- bash benchmarks/metrics.sh BIN_DIR
set -euo pipefail
bin=$1
for i in $(seq 10 41); do "$bin/accessory-sim" ctl plug "1209:$(printf %04x $i):B$i" >/dev/null; done
"$bin/accessoryctl" watch --metrics 127.0.0.1:0 >/dev/null 2>"$TMPDIR/err" &
pid=$!
for _ in $(seq 100); do grep -q "serving metrics" "$TMPDIR/err" && break; sleep 0.1; done
port=$(grep -o '127.0.0.1:[0-9]*' "$TMPDIR/err" | head -1 | cut -d: -f2)
sleep 1
curl -s "http://127.0.0.1:$port/metrics" | wc -c | sed 's/^/scrape bytes: /'
curl -s "http://127.0.0.1:$port/metrics" | grep -c '^accessory_' | sed 's/^/series: /'
urls=(); for _ in $(seq 500); do urls+=(-o /dev/null "http://127.0.0.1:$port/metrics"); done
curl -s -w '%{http_code} %{time_total}\n' "${urls[@]}" | tee $TMPDIR/codes | awk '{print $2}' | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "500 scrapes, one curl (a new connection each): mean %.2f ms, median %.2f ms, p99 %.2f ms\n", s/NR*1000, a[int(NR/2)]*1000, a[int(NR*0.99)]*1000}'
for j in $(seq 8); do curl -s -w '%{time_total}\n' "${urls[@]:0:300}" > "$TMPDIR/c$j" & done
sleep 0.2; while pgrep -x curl >/dev/null; do sleep 0.1; done
cat "$TMPDIR"/c[0-9]* | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "8 scrapers x 100 at once: mean %.2f ms, median %.2f ms, p99 %.2f ms\n", s/NR*1000, a[int(NR/2)]*1000, a[int(NR*0.99)]*1000}'
(exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET /metr' >&3; sleep 8) & silent=$!
sleep 0.2
curl -s -o /dev/null -w 'one scrape while a client sends half a request: %{time_total} s\n' "http://127.0.0.1:$port/metrics"
kill $silent 2>/dev/null || true
sort "$TMPDIR/codes" | cut -d" " -f1 | uniq -c
grep VmRSS /proc/$pid/status
kill -TERM $pid; wait $pid || true
