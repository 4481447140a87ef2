/*
 * accessory-sim: the loopback kind (KIND_LOOPBACK): one vendor-specific
 * interface (ff/00/00, bInterfaceNumber from ",interface=N", iInterface the
 * spec's protocol, or 0 with ",noname") whose OUT 0x01 data comes back on IN 0x81, bulk (512
 * bytes) or with ",interrupt" interrupt (64 bytes, bInterval 1). The echo
 * itself runs in urbs.c, for every endpoint kind_echoes() names.
 */
#include "kinds.h"

GBytes *loopback_descriptors(const Spec *s)
{
    /* ",interrupt": interrupt endpoints of 64 bytes, polled every microframe */
    const guint8 type = s->interrupt ? 0x03 : 0x02;
    const guint8 lo = s->interrupt ? 64 : 0x00, hi = s->interrupt ? 0 : 0x02, interval = s->interrupt ? 1 : 0;
    const guint8 d[] = {
        /* device */
        18, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 64,
        (guint8)(s->vid & 0xff), (guint8)(s->vid >> 8),
        (guint8)(s->pid & 0xff), (guint8)(s->pid >> 8),
        0x00, 0x01, /* bcdDevice 1.00 */
        1, 2, (guint8)(s->serial ? 3 : 0), 1,
        /* configuration 1: bus powered, 100 mA */
        9, 0x02, 32, 0, 1, 1, 0, 0x80, 50,
        /* the interface (bInterfaceNumber from the spec, default 0): vendor specific,
         * iInterface 4 = PROTOCOL (0, no string, with ",noname") */
        9, 0x04, s->interface, 0, 2, 0xff, 0x00, 0x00, (guint8)(s->noname ? 0 : 4),
        /* bulk OUT 0x01, 512 bytes */
        7, 0x05, 0x01, type, lo, hi, interval,
        /* bulk IN 0x81, 512 bytes */
        7, 0x05, 0x81, type, lo, hi, interval,
    };
    return g_bytes_new(d, sizeof(d));
}


void loopback_strings(const Spec *s, char *strings[8])
{
    strings[1] = g_strdup("Example");
    strings[2] = g_strdup("Loopback Accessory");
    strings[3] = g_strdup(s->serial);
    strings[4] = s->noname ? NULL : g_strdup(s->protocol);
}
