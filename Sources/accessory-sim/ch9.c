/*
 * accessory-sim: control requests on endpoint 0. The standard requests
 * (chapter 9 of the USB specification) are answered here from the
 * instance's descriptors and state; class and vendor requests go to the
 * device's kind (kinds.c).
 */
#include "kinds.h"
#include "usbfs_internal.h"

#include <errno.h>
#include <string.h>
#include <linux/usb/ch9.h>

static gsize string_descriptor(const Instance *inst, guint idx, guint8 *out)
{
    if (idx == 0) {
        out[0] = 4;
        out[1] = USB_DT_STRING;
        out[2] = 0x09; /* en-US */
        out[3] = 0x04;
        return 4;
    }
    if (idx >= G_N_ELEMENTS(inst->strings) || !inst->strings[idx])
        return 0;
    glong units = 0;
    gunichar2 *u16 = g_utf8_to_utf16(inst->strings[idx], -1, NULL, &units, NULL);
    if (!u16)
        return 0;
    if (units > 126)
        units = 126;
    out[0] = (guint8)(2 + 2 * units);
    out[1] = USB_DT_STRING;
    for (glong i = 0; i < units; i++) {
        out[2 + 2 * i] = (guint8)(u16[i] & 0xff);
        out[3 + 2 * i] = (guint8)(u16[i] >> 8);
    }
    g_free(u16);
    return out[0];
}
static int control_request(Instance *inst, const guint8 *setup, guint8 *data, gsize avail)
{
    const guint8 *d = g_bytes_get_data(inst->descriptors, NULL);
    gsize dlen = g_bytes_get_size(inst->descriptors);
    guint8 rt = setup[0], rq = setup[1];
    guint wValue = setup[2] | setup[3] << 8;
    guint wIndex = setup[4] | setup[5] << 8;
    guint wLength = setup[6] | setup[7] << 8;
    gboolean in = (rt & USB_DIR_IN) != 0;
    guint recipient = rt & USB_RECIP_MASK;
    guint8 tmp[256];
    const guint8 *src = tmp;
    gsize n = 0;

    if ((rt & USB_TYPE_MASK) == USB_TYPE_STANDARD) {
        switch (rq) {
        case USB_REQ_GET_STATUS:
            if (!in)
                return -EPIPE;
            tmp[0] = tmp[1] = 0;
            if (recipient == USB_RECIP_DEVICE && is_hub(inst))
                tmp[0] = 1; /* self powered */
            if (recipient == USB_RECIP_ENDPOINT) {
                gboolean *h = halt_flag(inst, wIndex & 0xff);
                tmp[0] = (h && *h) ? 1 : 0;
            }
            n = 2;
            break;
        case USB_REQ_CLEAR_FEATURE:
        case USB_REQ_SET_FEATURE:
            if (recipient == USB_RECIP_ENDPOINT && wValue == USB_ENDPOINT_HALT) {
                gboolean *h = halt_flag(inst, wIndex & 0xff);
                if (h)
                    *h = rq == USB_REQ_SET_FEATURE;
                else if ((wIndex & 0x7f) != 0)
                    return -EPIPE;
                return 0;
            }
            if (recipient == USB_RECIP_DEVICE)
                return 0;
            return -EPIPE;
        case USB_REQ_GET_DESCRIPTOR:
            if (!in)
                return -EPIPE;
            switch (wValue >> 8) {
            case USB_DT_DEVICE:
                src = d;
                n = 18;
                break;
            case USB_DT_CONFIG:
                if ((wValue & 0xff) != 0)
                    return -EPIPE;
                src = d + 18;
                n = dlen - 18;
                break;
            case USB_DT_STRING:
                n = string_descriptor(inst, wValue & 0xff, tmp);
                if (n == 0)
                    return -EPIPE;
                break;
            case USB_DT_DEVICE_QUALIFIER: {
                if (inst->root_hub)
                    return -EPIPE; /* root hubs have none */
                const guint8 q[10] = {10, USB_DT_DEVICE_QUALIFIER, d[2], d[3], d[4], d[5], d[6], d[7], d[17], 0};
                memcpy(tmp, q, sizeof(q));
                n = sizeof(q);
                break;
            }
            default:
                return -EPIPE;
            }
            break;
        case USB_REQ_GET_CONFIGURATION:
            if (!in)
                return -EPIPE;
            tmp[0] = (guint8)inst->config;
            n = 1;
            break;
        case USB_REQ_SET_CONFIGURATION:
            if (wValue > 1)
                return -EPIPE;
            inst->config = (int)wValue;
            inst->halted_in = inst->halted_out = inst->halted_other = FALSE;
            return 0;
        case USB_REQ_GET_INTERFACE:
            if (!in || IFACE_SLOT(inst, wIndex) >= SIM_NIFACES)
                return -EPIPE;
            tmp[0] = 0;
            n = 1;
            break;
        case USB_REQ_SET_INTERFACE:
            if (IFACE_SLOT(inst, wIndex) >= SIM_NIFACES || wValue != 0)
                return -EPIPE;
            clear_interface_halts(inst, IFACE_SLOT(inst, wIndex));
            return 0;
        default:
            return -EPIPE;
        }
    } else {
        /* class and vendor requests: the device's kind */
        int r = kind_control(inst, setup, in ? NULL : data, in ? 0 : (data ? avail : 0), in ? tmp : NULL,
                             in ? sizeof(tmp) : 0);
        if (r < 0 || !in)
            return r < 0 ? r : 0;
        n = (gsize)r;
    }

    if (!in)
        return 0;
    n = MIN(n, MIN((gsize)wLength, avail));
    if (n > 0 && data)
        memcpy(data, src, n);
    return (int)n;
}

/* One control transfer: as control_request(), but an OUT transfer that
 * succeeds reports its data stage as transferred (wLength bytes), as usbfs
 * does in the URB's actual_length and in USBDEVFS_CONTROL's result. */
int usbfs_control(Instance *inst, const guint8 *setup, guint8 *data, gsize avail)
{
    int n = control_request(inst, setup, data, avail);
    if (n >= 0 && !(setup[0] & USB_DIR_IN))
        n = (int)MIN((gsize)(setup[6] | setup[7] << 8), avail);
    return n;
}

