#!/usr/bin/env python3
"""Writes large-frame.pcapng: a usbmon capture (pcapng, link type 220) of a made-up reader
shaped like libfprint's uru4000 ones, which read each 111,424-byte image frame in one bulk IN.

The device (1209:4000, bus 1 address 7) enumerates (GET_DESCRIPTOR device and configuration,
SET_CONFIGURATION), takes a vendor OUT request, answers a vendor IN request, sends a finger
event on interrupt IN 0x83, then one frame of 111,424 bytes on bulk IN 0x81 in one transfer;
the host's last interrupt IN is cancelled (-ENOENT) as it closes. Deterministic: run it again
and the file is the same, byte for byte.

    python3 Tests/Fixtures/usb-captures/make-large-frame.py
"""
import os
import struct

BUS, DEVICE = 1, 7
FRAME = 111_424
EINPROGRESS, ENOENT = -115, -2
CONTROL, INTERRUPT, BULK = 2, 1, 3

device_descriptor = bytes([18, 1, 0x00, 0x02, 0, 0, 0, 64, 0x09, 0x12, 0x00, 0x40, 0x00, 0x01, 0, 0, 0, 1])
configuration = bytes([9, 2, 32, 0, 1, 1, 0, 0x80, 50,
                       9, 4, 0, 0, 2, 0xff, 0xff, 0xff, 0,
                       7, 5, 0x81, 2, 0x00, 0x02, 0,
                       7, 5, 0x83, 3, 64, 0, 4])
frame = bytes((i * 7 + (i >> 9)) & 0xff for i in range(FRAME))

records = []  # (time µs, usbmon record)
clock = [1_700_000_000_000_000]
urb = [0xffff_8881_0a2b_0000]


def record(kind, urb_id, xfer, endpoint, status, length, data=b"", setup=None):
    clock[0] += 125
    flag_setup = 0 if setup is not None else ord("-")
    is_in = endpoint & 0x80
    flag_data = 0 if data else ord("<" if is_in else ">")
    seconds, micros = divmod(clock[0], 1_000_000)
    header = struct.pack(
        "<QBBBBHbbqiiII8siiII", urb_id, ord(kind), xfer, endpoint, DEVICE, BUS, flag_setup, flag_data,
        seconds, micros, status, length, len(data), setup or bytes(8), 4 if xfer == INTERRUPT else 0, 0, 0, 0)
    assert len(header) == 64
    records.append((clock[0], header + data))


def transfer(xfer, endpoint, requested, out=b"", back=b"", setup=None, status=0):
    urb[0] += 0x100
    record("S", urb[0], xfer, endpoint, EINPROGRESS, requested, out, setup)
    if status is None:
        return
    is_in = endpoint & 0x80
    record("C", urb[0], xfer, endpoint, status, len(back) if is_in else (len(out) if status == 0 else 0), back)


def control(request_type, request, value, index, length, out=b"", back=b""):
    setup = struct.pack("<BBHHH", request_type, request, value, index, length)
    endpoint = 0x80 if request_type & 0x80 else 0x00
    transfer(CONTROL, endpoint, length, out=out, back=back, setup=setup)


control(0x80, 6, 0x0100, 0, 18, back=device_descriptor)
control(0x80, 6, 0x0200, 0, 9, back=configuration[:9])
control(0x80, 6, 0x0200, 0, len(configuration), back=configuration)
control(0x00, 9, 1, 0, 0)
control(0x40, 0x04, 0x0001, 0, 1, out=bytes([0x80]))
control(0xc0, 0x0c, 0x0007, 0, 1, back=bytes([0x55]))
transfer(INTERRUPT, 0x83, 64, back=bytes([0x01, 0x01, 0x00, 0x00]))
transfer(BULK, 0x81, FRAME, back=frame)
urb[0] += 0x100
record("S", urb[0], INTERRUPT, 0x83, EINPROGRESS, 64)
record("C", urb[0], INTERRUPT, 0x83, ENOENT, 0)


def block(kind, body):
    body += bytes(-len(body) % 4)
    length = len(body) + 12
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
out += block(1, struct.pack("<HHI", 220, 0, 262_144))
for micros, data in records:
    out += block(6, struct.pack("<IIIII", 0, micros >> 32, micros & 0xFFFFFFFF, len(data), len(data)) + data)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "large-frame.pcapng")
with open(path, "wb") as f:
    f.write(out)
print(f"{path}: {len(records)} records, {len(out)} bytes")
