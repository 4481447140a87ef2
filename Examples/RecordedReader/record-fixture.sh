#!/usr/bin/env bash
# Re-records Fixtures/echo.pcapng and Fixtures/noname.pcapng with the package's own tools: accessoryctl, built from the
# checkout this example lives in, opens a session on accessory-sim's loopback accessory
# (1209:0001, serial SN1, interface "org.example.loopback", bulk OUT 0x01 echoed on bulk
# IN 0x81), sends MESSAGE as one bulk OUT transfer and records the conversation with
# --capture. The capture starts with the device's descriptors (GET_DESCRIPTOR answers), so
# the tests replay it with no umockdev file.
#   bash Examples/RecordedReader/record-fixture.sh
# MESSAGE must stay what Tests/RecordedReaderTests/ReplayTests.swift sends (recordedMessage),
# and under 512 bytes, so that `open` sends it as one transfer. Then the same for a device
# whose interface carries no string (accessory-sim's `noname`, 1209:00d1), opened with
# --interface 0 (NamelessReplayTests.swift's recordedMessage).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="/opt/swift/usr/bin:$PATH"
message='hello from RecordedReader'

cd "$root"
swift build --product accessoryctl
swift build --product accessory-sim
bin=$(swift build --show-bin-path)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%s' "$message" >"$work/message"
"$bin/accessory-sim" --accessory 1209:0001:SN1:org.example.loopback -- sh -c \
  "'$bin/accessoryctl' open 1209:0001 --protocol org.example.loopback --idle-timeout 0.3 \
     --capture '$work/echo.pcapng' <'$work/message' >'$work/answer'"
cmp "$work/message" "$work/answer" || { echo "record-fixture: the loopback did not echo the message" >&2; exit 1; }

mkdir -p "$here/Fixtures"
mv "$work/echo.pcapng" "$here/Fixtures/echo.pcapng"
"$bin/accessoryctl" capture summary "$here/Fixtures/echo.pcapng"

nameless='hello from a nameless reader'
printf '%s' "$nameless" >"$work/nameless"
"$bin/accessory-sim" --accessory 1209:00d1:NONAME1:,noname -- sh -c \
  "'$bin/accessoryctl' open 1209:00d1 --interface 0 --idle-timeout 0.3 \
     --capture '$work/noname.pcapng' <'$work/nameless' >'$work/nameless-answer'"
cmp "$work/nameless" "$work/nameless-answer" || { echo "record-fixture: the nameless loopback did not echo" >&2; exit 1; }
mv "$work/noname.pcapng" "$here/Fixtures/noname.pcapng"
"$bin/accessoryctl" capture summary "$here/Fixtures/noname.pcapng"
