/*
 * accessory-sim: hubs: a root hub per bus (Linux Foundation 1d6b:0002, the
 * host controller's) and the plugged hub kind (KIND_HUB, "plug-hub": a
 * Genesys Logic GL850G, 05e3:0608, with hub_ports downstream ports). Both
 * answer the hub class requests: the hub descriptor, port status (from the
 * topology) and port features (accepted, no effect).
 */
#include "kinds.h"
#include "topology.h"

#include <errno.h>
#include <string.h>
#include <linux/usb/ch9.h>

#define HUB_DESCRIPTOR_TYPE 0x29

GBytes *hub_descriptors(const Spec *s)
{
    const guint8 d[] = {
        /* device: a USB 2.0 hub, single TT */
        18, 0x01, 0x00, 0x02, 0x09, 0x00, 0x01, 64,
        (guint8)(s->vid & 0xff), (guint8)(s->vid >> 8), (guint8)(s->pid & 0xff), (guint8)(s->pid >> 8),
        0x32, 0x88, 1, 2, 0, 1,
        /* configuration: self powered, remote wakeup */
        9, 0x02, 25, 0, 1, 1, 0, 0xe0, 50,
        /* interface 0: hub */
        9, 0x04, 0, 0, 1, 0x09, 0x00, 0x00, 0,
        /* interrupt IN 0x81, 1 byte, bInterval 12 */
        7, 0x05, 0x81, 0x03, 0x01, 0x00, 12,
    };
    return g_bytes_new(d, sizeof(d));
}


GBytes *root_hub_descriptors(void)
{
    const guint8 d[] = {
        /* device: Linux Foundation 2.0 root hub */
        18, 0x01, 0x00, 0x02, 0x09, 0x00, 0x01, 64,
        0x6b, 0x1d, 0x02, 0x00, 0x00, 0x06, 3, 2, 1, 1,
        /* configuration: self powered, remote wakeup */
        9, 0x02, 25, 0, 1, 1, 0, 0xe0, 0,
        /* interface 0: hub */
        9, 0x04, 0, 0, 1, 0x09, 0x00, 0x00, 0,
        /* interrupt IN 0x81, 4 bytes, bInterval 12 */
        7, 0x05, 0x81, 0x03, 0x04, 0x00, 12,
    };
    return g_bytes_new(d, sizeof(d));
}


void hub_strings(const Instance *inst, char *strings[8])
{
    if (inst->root_hub) {
        strings[1] = g_strdup("accessory-sim");
        strings[2] = g_strdup("xHCI Host Controller");
        strings[3] = g_strdup("Linux accessory-sim xhci-hcd");
    } else {
        strings[1] = g_strdup("GenesysLogic");
        strings[2] = g_strdup("USB2.0 Hub");
    }
}

int hub_control(Instance *inst, const guint8 *setup, guint8 *in_data, gsize avail)
{
    guint8 rt = setup[0], rq = setup[1];
    guint wValue = setup[2] | setup[3] << 8;
    guint wIndex = setup[4] | setup[5] << 8;
    gboolean in = (rt & USB_DIR_IN) != 0;
    guint recipient = rt & USB_RECIP_MASK;

    if (rq == USB_REQ_GET_DESCRIPTOR && in && (wValue >> 8) == HUB_DESCRIPTOR_TYPE) {
        /* individual power switching, no compound device */
        guint8 ports = inst->root_hub ? 15 : inst->spec.hub_ports;
        const guint8 hub[] = {11, HUB_DESCRIPTOR_TYPE, ports, 0x09, 0x00, 10, 0, 0x00, 0x00, 0xff, 0xff};
        gsize n = MIN(sizeof(hub), avail);
        memcpy(in_data, hub, n);
        return (int)n;
    }
    if (rq == USB_REQ_GET_STATUS && in) {
        guint8 status[4] = {0};
        if (recipient == USB_RECIP_OTHER) {
            guint bits = 0x0100; /* power */
            if (hub_port_connected(inst, (int)wIndex))
                bits |= 0x0001 | 0x0002 | 0x0400; /* connection, enable, high speed */
            status[0] = (guint8)(bits & 0xff);
            status[1] = (guint8)(bits >> 8);
        }
        gsize n = MIN(sizeof(status), avail);
        memcpy(in_data, status, n);
        return (int)n;
    }
    if (rq == USB_REQ_SET_FEATURE || rq == USB_REQ_CLEAR_FEATURE)
        return 0;
    return -EPIPE;
}
