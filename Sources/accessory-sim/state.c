/*
 * accessory-sim: the simulator's one state (sim), logging, and instance
 * references.
 */
#include "state.h"

#include <stdarg.h>
#include <stdio.h>

Sim sim;

void sim_log(const char *fmt, ...)
{
    if (!sim.debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(stderr, "accessory-sim: %s\n", msg);
    g_free(msg);
}

void instance_fifo_clear(Instance *inst)
{
    Chunk *ch;
    while ((ch = g_queue_pop_head(&inst->fifo)) != NULL) {
        g_clear_object(&ch->data);
        g_free(ch);
    }
    inst->fifo_bytes = 0;
}

Instance *instance_ref(Instance *inst)
{
    g_atomic_int_inc(&inst->refcount);
    return inst;
}

void instance_unref(Instance *inst)
{
    if (!g_atomic_int_dec_and_test(&inst->refcount))
        return;
    spec_clear(&inst->spec);
    g_free(inst->port);
    g_free(inst->syspath);
    for (int i = 0; i < SIM_NIFACES; i++)
        g_free(inst->ifnames[i]);
    for (int i = 0; i < 6; i++)
        g_free(inst->aoa_strings[i]);
    g_free(inst->devnode);
    g_bytes_unref(inst->descriptors);
    for (guint i = 0; i < G_N_ELEMENTS(inst->strings); i++)
        g_free(inst->strings[i]);
    for (int i = 0; i < SIM_NIFACES; i++) {
        g_free(inst->kdriver[i]);
        g_free(inst->kdriver_last[i]);
    }
    /* URB queues are emptied when the instance goes away (urbs.c); the
     * FIFO may still hold data. */
    instance_fifo_clear(inst);
    g_free(inst);
}
