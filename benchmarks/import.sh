#!/usr/bin/env bash
# `accessoryctl import udevadm` on a 24.7 MB log beside awk reading every line once (issue 15:
# within 3x of awk, memory flat). Called by `bash scripts/bench import`, with ACCESSORYCTL set.
# The log is the corpus's kiibohd-udevadm-monitor-environment-ftdi.log repeated 20,000 times;
# without ../shared there is nothing to measure.
set -euo pipefail
src="$(dirname "$0")/../../shared/corpus/hotplug-logs/kiibohd-udevadm-monitor-environment-ftdi.log"
if [ ! -f "$src" ]; then echo "skipped: $src is absent (../shared holds the corpus)"; exit 0; fi
command -v hyperfine >/dev/null || { apt-get install -y -qq hyperfine >/dev/null 2>&1 || true; }
[ -x /usr/bin/time ] || { apt-get install -y -qq time >/dev/null 2>&1 || true; }
big="${TMPDIR:-/tmp}/big-udevadm.log"
python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(d*20000)" "$src" "$big"
echo "log: $(stat -c %s "$big") bytes, $(wc -l < "$big") lines"
small="${TMPDIR:-/tmp}/small-udevadm.log"
head -c 1235 "$big" > "$small"
hyperfine -N -w 2 -r 20 --export-markdown "${TMPDIR:-/tmp}/import.md" \
  -n "accessoryctl import udevadm" "$ACCESSORYCTL import udevadm $big -o /dev/null" \
  -n "accessoryctl import udevadm, the one-event log (start-up)" "$ACCESSORYCTL import udevadm $small -o /dev/null" \
  -n "awk (baseline)" "awk '/^ACTION=/{n++} END{print n}' $big" >/dev/null 2>&1
cat "${TMPDIR:-/tmp}/import.md"
for cmd in "$ACCESSORYCTL import udevadm $big -o /dev/null" "awk /^ACTION=/{n++} $big"; do
  /usr/bin/time -f "peak RSS %M KiB: ${cmd%% *}" $cmd 2>&1 >/dev/null | grep "peak RSS"
done
