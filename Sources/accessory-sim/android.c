/*
 * accessory-sim: the Android Open Accessory 2 kinds (",android").
 *
 * KIND_PHONE is a phone as a host first sees it: VID:PID from the spec
 * (typically 18d1:4ee7), one MTP-like interface (class 6/1/1) with bulk IN
 * 0x81, bulk OUT 0x01 and interrupt IN 0x82; it does not loop back. It
 * answers the AOA vendor requests to the device:
 *   51 GET_PROTOCOL (IN, 2 bytes): 2, and the strings received so far are
 *      cleared, as real phones do;
 *   52 SEND_STRING (OUT, wIndex 0-5, NUL-terminated, at most 256 bytes):
 *      stored; another index stalls;
 *   53 START (OUT): completes, and 20 ms later the layer that registered
 *      android_set_switch_handler() detaches the phone and attaches
 *      KIND_PHONE_ACCESSORY on the same port at the next address.
 * KIND_PHONE_ACCESSORY is 18d1:2d01 (accessory + adb), same serial:
 * interface 0 vendor-specific with bulk IN 0x81 / OUT 0x01 that echo (the
 * phone's app), interface 1 adb (ff/42/01) with bulk IN 0x82 / OUT 0x02. It
 * keeps the strings and answers 51 and 52 too; START there only completes.
 *
 * Calls nothing above it (nor devices.c): the switch goes through the
 * handler devices.c registers, run on the main context (never on umockdev's
 * worker thread, never with sim.lock held), with the phone's BUS:ADDRESS.
 */
#include "kinds.h"

#include <errno.h>
#include <string.h>

#define AOA_GET_PROTOCOL 51
#define AOA_SEND_STRING 52
#define AOA_START 53
#define AOA_VERSION 2
#define SWITCH_DELAY_MS 20

static void (*switch_handler)(int bus, int addr);

void android_set_switch_handler(void (*handler)(int bus, int addr))
{
    switch_handler = handler;
}

GBytes *android_descriptors(const Spec *s)
{
    if (s->kind == KIND_PHONE) {
        const guint8 d[] = {
            18, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 64,
            (guint8)(s->vid & 0xff), (guint8)(s->vid >> 8), (guint8)(s->pid & 0xff), (guint8)(s->pid >> 8),
            0x40, 0x04, /* bcdDevice 4.40 */
            1, 2, (guint8)(s->serial ? 3 : 0), 1,
            /* configuration 1: one interface */
            9, 0x02, 39, 0, 1, 1, 0, 0x80, 250,
            /* interface 0: MTP (still image, PTP), iInterface 4 */
            9, 0x04, 0, 0, 3, 0x06, 0x01, 0x01, 4,
            7, 0x05, 0x81, 0x02, 0x00, 0x02, 0, /* bulk IN 0x81 */
            7, 0x05, 0x01, 0x02, 0x00, 0x02, 0, /* bulk OUT 0x01 */
            7, 0x05, 0x82, 0x03, 28, 0x00, 6,   /* interrupt IN 0x82 */
        };
        return g_bytes_new(d, sizeof(d));
    }
    const guint8 d[] = {
        18, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 64,
        0xd1, 0x18, 0x01, 0x2d, /* 18d1:2d01 */
        0x40, 0x04,
        1, 2, (guint8)(s->serial ? 3 : 0), 1,
        /* configuration 1: two interfaces */
        9, 0x02, 55, 0, 2, 1, 0, 0x80, 250,
        /* interface 0: the accessory (the phone's app), iInterface 4 */
        9, 0x04, 0, 0, 2, 0xff, 0xff, 0x00, 4,
        7, 0x05, 0x81, 0x02, 0x00, 0x02, 0,
        7, 0x05, 0x01, 0x02, 0x00, 0x02, 0,
        /* interface 1: adb, iInterface 5 */
        9, 0x04, 1, 0, 2, 0xff, 0x42, 0x01, 5,
        7, 0x05, 0x82, 0x02, 0x00, 0x02, 0,
        7, 0x05, 0x02, 0x02, 0x00, 0x02, 0,
    };
    return g_bytes_new(d, sizeof(d));
}

void android_strings(const Spec *s, char *strings[8])
{
    strings[1] = g_strdup("Google");
    strings[2] = g_strdup("Pixel 8");
    strings[3] = g_strdup(s->serial);
    if (s->kind == KIND_PHONE) {
        strings[4] = g_strdup(s->protocol ? s->protocol : "MTP");
    } else {
        strings[4] = g_strdup("Android Accessory Interface");
        strings[5] = g_strdup("ADB Interface");
    }
}

typedef struct {
    int bus, addr;
} SwitchRequest;

/* Main context: the phone may have been unplugged meanwhile; the handler
 * looks BUS:ADDRESS up and does nothing unless a phone is still there. */
static gboolean switch_now(gpointer data)
{
    SwitchRequest *req = data;
    if (switch_handler)
        switch_handler(req->bus, req->addr);
    return G_SOURCE_REMOVE;
}

int android_control(Instance *inst, const guint8 *setup, const guint8 *out_data, guint8 *in_data, gsize avail)
{
    guint8 rt = setup[0], rq = setup[1];
    guint wIndex = setup[4] | setup[5] << 8;
    guint wLength = setup[6] | setup[7] << 8;
    gboolean in = (rt & 0x80) != 0;

    if ((rt & 0x1f) != 0) /* recipient: device only */
        return -EPIPE;
    switch (rq) {
    case AOA_GET_PROTOCOL:
        if (!in || wLength < 2 || avail < 2)
            return -EPIPE;
        for (int i = 0; i < 6; i++)
            g_clear_pointer(&inst->aoa_strings[i], g_free);
        in_data[0] = AOA_VERSION;
        in_data[1] = 0;
        return 2;
    case AOA_SEND_STRING: {
        if (in || wIndex > 5 || wLength == 0 || wLength > 256)
            return -EPIPE;
        gsize n = 0;
        while (n < wLength && out_data[n] != 0)
            n++;
        g_free(inst->aoa_strings[wIndex]);
        inst->aoa_strings[wIndex] = g_strndup((const char *)out_data, n);
        return 0;
    }
    case AOA_START: {
        if (in)
            return -EPIPE;
        if (inst->spec.kind == KIND_PHONE) {
            SwitchRequest *req = g_new(SwitchRequest, 1);
            req->bus = inst->bus;
            req->addr = inst->addr;
            GSource *source = g_timeout_source_new(SWITCH_DELAY_MS);
            g_source_set_callback(source, switch_now, req, g_free);
            g_source_attach(source, NULL); /* the main context */
            g_source_unref(source);
        }
        return 0;
    }
    default:
        return -EPIPE;
    }
}
