/*
 * accessory-sim: reading an instance's descriptors (immutable once the
 * instance exists, so any thread may read them).
 */
#include "state.h"

/* The interface descriptor (alternate setting 0) of a slot. */
const guint8 *interface_desc(const Instance *inst, unsigned int slot)
{
    gsize len = g_bytes_get_size(inst->descriptors);
    const guint8 *d = desc_bytes(inst);
    unsigned int seen = 0;
    for (gsize off = 18; off + 2 <= len && d[off] >= 2; off += d[off]) {
        if (d[off + 1] == 0x04 && off + 9 <= len && d[off + 3] == 0) {
            if (seen == slot)
                return d + off;
            seen++;
        }
    }
    return NULL;
}

EndpointInfo endpoint_info(const Instance *inst, guint8 ep)
{
    EndpointInfo info = {0};
    gsize len = g_bytes_get_size(inst->descriptors);
    const guint8 *d = desc_bytes(inst);
    int slot = -1;
    for (gsize off = 18; off + 2 <= len && d[off] >= 2; off += d[off]) {
        if (d[off + 1] == 0x04 && off + 9 <= len && d[off + 3] == 0)
            slot++; /* alternate settings (none today) stay in their interface's slot */
        else if (d[off + 1] == 0x05 && off + 7 <= len && d[off + 2] == ep && slot >= 0) {
            info.exists = TRUE;
            info.slot = (unsigned int)slot;
            info.interrupt = (d[off + 3] & 0x03) == 0x03;
            break;
        }
    }
    return info;
}
