/*
 * accessory-sim: which kind an instance is, and handing it what its kind
 * decides: descriptors and strings, echo or not, class and vendor requests.
 */
#include "kinds.h"

#include <errno.h>
#include <linux/usb/ch9.h>

void kind_describe(Instance *inst)
{
    if (inst->root_hub) {
        inst->descriptors = root_hub_descriptors();
        hub_strings(inst, inst->strings);
    } else if (inst->spec.kind == KIND_HUB) {
        inst->descriptors = hub_descriptors(&inst->spec);
        hub_strings(inst, inst->strings);
    } else if (inst->spec.kind == KIND_LOOPBACK) {
        inst->descriptors = loopback_descriptors(&inst->spec);
        loopback_strings(&inst->spec, inst->strings);
    } else {
        inst->descriptors = android_descriptors(&inst->spec);
        android_strings(&inst->spec, inst->strings);
    }
    if (is_hub(inst)) {
        inst->kdriver[0] = g_strdup("hub");
        inst->kdriver_last[0] = g_strdup("hub");
    }
}

gboolean kind_echoes(const Instance *inst, guint8 ep)
{
    /* The loopback pair and a phone's app (accessory mode, interface 0) echo. */
    return endpoint_info(inst, ep).exists && !is_hub(inst) && (ep == 0x01 || ep == 0x81) &&
           inst->spec.kind != KIND_PHONE;
}

int kind_control(Instance *inst, const guint8 *setup, const guint8 *out_data, gsize out_len, guint8 *in_data,
                 gsize in_avail)
{
    guint8 type = setup[0] & USB_TYPE_MASK;
    gboolean in = (setup[0] & USB_DIR_IN) != 0;
    guint wLength = setup[6] | setup[7] << 8;

    if (type == USB_TYPE_CLASS && is_hub(inst))
        return hub_control(inst, setup, in_data, in_avail);
    if (type == USB_TYPE_VENDOR && is_android(inst)) {
        /* Android Open Accessory */
        if (!in && wLength > out_len)
            return -EPIPE;
        return android_control(inst, setup, out_data, in_data, in_avail);
    }
    return -EPIPE; /* other vendor requests: not supported */
}
