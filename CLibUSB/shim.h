#ifndef CLIBUSB_SHIM_H
#define CLIBUSB_SHIM_H
// The only C header the Swift code sees. libusb is found through pkg-config (libusb-1.0).
#include <libusb.h>
#endif
