/*
 * accessory-sim: hubs: a root hub per bus (Linux Foundation 1d6b:0002, the
 * host controller's) and the plugged hub kind (KIND_HUB, "plug-hub": a
 * Genesys Logic GL850G, 05e3:0608, with hub_ports downstream ports; with
 * --usb3 a GL3523's two halves, 05e3:0610 and the SuperSpeed 05e3:0626).
 * Both answer the hub class requests: the hub descriptor (whose
 * wHubCharacteristics bits 1:0 say how the ports switch power), port status
 * (from the topology and the ports' power) and port features: PORT_POWER
 * switches one port (per-port), every port (ganged) or nothing (none), as
 * real hubs do; the layer above hears of it through the power handler.
 * Other features are accepted with no effect.
 */
#include "kinds.h"
#include "topology.h"

#include <errno.h>
#include <string.h>
#include <linux/usb/ch9.h>

#define HUB_DESCRIPTOR_TYPE 0x29
#define SS_HUB_DESCRIPTOR_TYPE 0x2a
#define PORT_POWER 8

static void (*power_handler)(int bus, int addr, guint32 mask, gboolean on);

void hub_set_power_handler(void (*handler)(int bus, int addr, guint32 mask, gboolean on))
{
    power_handler = handler;
}


guint16 hub_characteristics(const Instance *hub)
{
    /* bits 1:0 power switching, bits 4:3 over-current protection (per port) */
    PowerSwitching p = hub->root_hub ? POWER_PER_PORT : hub->spec.power;
    return p == POWER_PER_PORT ? 0x0009 : p == POWER_GANGED ? 0x0008 : 0x000a;
}

guint32 hub_switch(Instance *hub, guint port, gboolean on)
{
    PowerSwitching p = hub->root_hub ? POWER_PER_PORT : hub->spec.power;
    guint n = topology_hub_ports(hub);
    guint32 mask = 0;
    if (port < 1 || port > n || n > 31 || p == POWER_NONE)
        return 0;
    mask = p == POWER_GANGED ? (guint32)(((1ull << n) - 1) << 1) : 1u << port;
    guint32 changed = on ? (hub->ports_off & mask) : (~hub->ports_off & mask);
    if (on)
        hub->ports_off &= ~mask;
    else
        hub->ports_off |= mask;
    return changed;
}

typedef struct {
    int bus, addr;
    guint32 mask;
    gboolean on;
} PowerChange;

/* Main context: the layer above unplugs or plugs what is on the ports. */
static gboolean power_now(gpointer data)
{
    PowerChange *c = data;
    if (power_handler)
        power_handler(c->bus, c->addr, c->mask, c->on);
    return G_SOURCE_REMOVE;
}

GBytes *hub_descriptors(const Spec *s)
{
    if (s->superspeed) {
        const guint8 ss[] = {
            /* device: a USB 3.0 hub (SuperSpeed, bMaxPacketSize0 2^9) */
            18, 0x01, 0x00, 0x03, 0x09, 0x00, 0x03, 9,
            (guint8)(s->vid & 0xff), (guint8)(s->vid >> 8), (guint8)(s->pid & 0xff), (guint8)(s->pid >> 8),
            0x93, 0x06, 1, 2, 0, 1,
            /* configuration: self powered, remote wakeup */
            9, 0x02, 31, 0, 1, 1, 0, 0xe0, 0,
            /* interface 0: hub */
            9, 0x04, 0, 0, 1, 0x09, 0x00, 0x00, 0,
            /* interrupt IN 0x81, 2 bytes, bInterval 8, and its SuperSpeed companion */
            7, 0x05, 0x81, 0x03, 0x02, 0x00, 8,
            6, 0x30, 0, 0, 0x02, 0x00,
        };
        return g_bytes_new(ss, sizeof(ss));
    }
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
        strings[2] = g_strdup(inst->spec.superspeed ? "USB3.1 Hub" : "USB2.0 Hub");
    }
}

int hub_control(Instance *inst, const guint8 *setup, guint8 *in_data, gsize avail)
{
    guint8 rt = setup[0], rq = setup[1];
    guint wValue = setup[2] | setup[3] << 8;
    guint wIndex = setup[4] | setup[5] << 8;
    gboolean in = (rt & USB_DIR_IN) != 0;
    guint recipient = rt & USB_RECIP_MASK;
    guint ports = topology_hub_ports(inst);
    guint16 chars = hub_characteristics(inst);
    gboolean ss = !inst->root_hub && inst->spec.superspeed;

    if (rq == USB_REQ_GET_DESCRIPTOR && in && (wValue >> 8) == (ss ? SS_HUB_DESCRIPTOR_TYPE : HUB_DESCRIPTOR_TYPE)) {
        /* no compound device; PortPwrCtrlMask all ones (USB 2.0 only) */
        const guint8 hub[] = {11, HUB_DESCRIPTOR_TYPE, (guint8)ports, (guint8)(chars & 0xff), (guint8)(chars >> 8),
                              10, 0, 0x00, 0x00, 0xff, 0xff};
        const guint8 sshub[] = {12, SS_HUB_DESCRIPTOR_TYPE, (guint8)ports, (guint8)(chars & 0xff), (guint8)(chars >> 8),
                                50, 0, 0, 0, 0, 0x00, 0x00};
        const guint8 *src = ss ? sshub : hub;
        gsize n = MIN(src[0], avail);
        memcpy(in_data, src, n);
        return (int)n;
    }
    if (rq == USB_REQ_GET_STATUS && in) {
        guint8 status[4] = {0};
        if (recipient == USB_RECIP_OTHER) {
            if (wIndex < 1 || wIndex > ports)
                return -EPIPE;
            gboolean powered = wIndex > 31 || !(inst->ports_off & (1u << wIndex));
            guint bits = powered ? (ss ? 0x0200 : 0x0100) : 0; /* PORT_POWER: bit 9 on SuperSpeed */
            if (powered && hub_port_connected(inst, (int)wIndex))
                bits |= 0x0001 | 0x0002 | (ss ? 0 : 0x0400); /* connection, enable, high speed */
            status[0] = (guint8)(bits & 0xff);
            status[1] = (guint8)(bits >> 8);
        }
        gsize n = MIN(sizeof(status), avail);
        memcpy(in_data, status, n);
        return (int)n;
    }
    if (rq == USB_REQ_SET_FEATURE || rq == USB_REQ_CLEAR_FEATURE) {
        if (recipient != USB_RECIP_OTHER || wValue != PORT_POWER)
            return 0;
        if ((wIndex & 0xff) < 1 || (wIndex & 0xff) > ports)
            return -EPIPE;
        gboolean on = rq == USB_REQ_SET_FEATURE;
        guint32 changed = hub_switch(inst, wIndex & 0xff, on);
        if (changed) {
            PowerChange *c = g_new(PowerChange, 1);
            *c = (PowerChange){.bus = inst->bus, .addr = inst->addr, .mask = changed, .on = on};
            GSource *source = g_idle_source_new();
            g_source_set_callback(source, power_now, c, g_free);
            g_source_attach(source, NULL); /* the main context */
            g_source_unref(source);
        }
        return 0;
    }
    return -EPIPE;
}
