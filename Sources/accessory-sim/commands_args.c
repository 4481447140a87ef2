/*
 * accessory-sim: the arguments and replies the control socket's commands
 * share: BUS:ADDRESS and the device it names, and the shapes of a reply
 * (see control.c for the protocol). Main thread.
 */
#define _GNU_SOURCE
#include "commands_internal.h"
#include "topology.h"

#include <stdlib.h>

void reply_usage(GString *out, const char *usage)
{
    g_string_append_printf(out, "error usage: %s\n", usage);
}

void reply_error(GString *out, char *message)
{
    g_string_append_printf(out, "error %s\n", message);
    g_free(message);
}

void reply_instance(GString *out, const Instance *inst)
{
    g_string_append_printf(out, "ok %d %d %s\n", inst->bus, inst->addr, inst->port);
}

static gboolean parse_busaddr(const char *text, int *bus, int *addr)
{
    char *end;
    long b = strtol(text, &end, 10);
    if (end == text || *end != ':')
        return FALSE;
    const char *a_text = end + 1;
    long a = strtol(a_text, &end, 10);
    if (end == a_text || *end != '\0' || b < 0 || b > 999 || a < 0 || a > 999)
        return FALSE;
    *bus = (int)b;
    *addr = (int)a;
    return TRUE;
}

Instance *command_target(gchar **argv, GString *out, const char *usage)
{
    int bus, addr;
    if (!argv[1] || !parse_busaddr(argv[1], &bus, &addr)) {
        reply_usage(out, usage);
        return NULL;
    }
    Instance *inst = topology_find(bus, addr);
    if (!inst)
        g_string_append_printf(out, "error no device at %d:%d\n", bus, addr);
    return inst;
}
