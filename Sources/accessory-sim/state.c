/*
 * accessory-sim: the simulator's one state (sim), logging, and instances'
 * lives: sim.instances owns them, and instance_release() is the one place
 * where one dies (see state.h).
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

void instance_register(Instance *inst)
{
    if (!sim.instances)
        sim.instances = g_hash_table_new(g_int64_hash, g_int64_equal);
    inst->id = ++sim.next_instance_id;
    g_hash_table_insert(sim.instances, &inst->id, inst);
}

Instance *instance_lookup(guint64 id)
{
    return sim.instances ? g_hash_table_lookup(sim.instances, &id) : NULL;
}

gboolean instance_release(Instance *inst)
{
    if (!inst->departed || inst->clients)
        return FALSE;
    g_hash_table_remove(sim.instances, &inst->id);
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
    /* URBs belong to clients, and there are none; the FIFO may still hold data
     * (the worker clears it when the instance departs). */
    instance_fifo_clear(inst);
    g_free(inst);
    return TRUE;
}
