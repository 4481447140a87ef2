/*
 * accessory-sim: the topology: buses (a host controller and its root hub
 * each), hubs and their ports, bus addresses, and the table of present
 * devices (sim.accessories). No I/O.
 */
#define _GNU_SOURCE
#include "topology.h"

#include <stdlib.h>
#include <string.h>

char *topology_hcd_name(int bus)
{
    return bus == 1 ? g_strdup("0000:00:1d.0") : g_strdup_printf("0000:00:%02x.0", bus);
}

char *topology_hcd_syspath(int bus)
{
    char *name = topology_hcd_name(bus);
    char *path = g_strdup_printf("/sys/devices/pci0000:00/%s", name);
    g_free(name);
    return path;
}

int topology_bus_of(const char *port)
{
    return g_str_has_prefix(port, "usb") ? atoi(port + 3) : atoi(port);
}

/* The port's parent: "1-1.4" -> "1-1", "1-1" -> "usb1". */
static char *parent_port(const char *port)
{
    const char *dot = strrchr(port, '.');
    if (dot)
        return g_strndup(port, (gsize)(dot - port));
    return g_strdup_printf("usb%d", topology_bus_of(port));
}

/* The last port number of a port chain: "1-1.4" -> 4, "1-3" -> 3. */
static int last_port(const char *port)
{
    const char *dot = strrchr(port, '.');
    const char *dash = strchr(port, '-');
    return atoi(dot ? dot + 1 : dash ? dash + 1 : port);
}

static void parked_free(gpointer p)
{
    Parked *parked = p;
    g_free(parked->port);
    spec_clear(&parked->spec);
    g_free(parked);
}

guint topology_hub_ports(const Instance *hub)
{
    return hub->root_hub ? SIM_ROOT_HUB_PORTS : hub->spec.hub_ports;
}

char *topology_port_dir_name(const Instance *hub, guint n)
{
    return g_strdup_printf("%s-port%u", hub->port, n);
}

char *topology_child_port(const Instance *hub, guint n)
{
    return hub->root_hub ? g_strdup_printf("%d-%u", hub->bus, n) : g_strdup_printf("%s.%u", hub->port, n);
}

void topology_init(int first_address, int nbuses)
{
    sim.accessories = g_ptr_array_new();
    sim.parked = g_ptr_array_new_with_free_func(parked_free);
    sim.power_log = g_ptr_array_new_with_free_func(g_free);
    sim.nbuses = nbuses;
    for (int bus = 1; bus <= nbuses; bus++) {
        sim.addr_used[bus][1] = TRUE; /* the root hub's */
        sim.devnum_next[bus] = first_address;
    }
}

/* Like the kernel: the bus's next free address from devnum_next, wrapping
 * after 127 and skipping addresses in use. */
static int alloc_address(int bus)
{
    gboolean *used = sim.addr_used[bus];
    int a;
    for (a = sim.devnum_next[bus]; a < 128; a++)
        if (!used[a])
            break;
    if (a >= 128)
        for (a = 1; a < 128; a++)
            if (!used[a])
                break;
    if (a >= 128)
        return -1;
    used[a] = TRUE;
    sim.devnum_next[bus] = a >= 127 ? 1 : a + 1;
    return a;
}

static Instance *find_port(const char *port)
{
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *a = g_ptr_array_index(sim.accessories, i);
        if (strcmp(a->port, port) == 0)
            return a;
    }
    return NULL;
}

gboolean hub_port_connected(const Instance *hub, int n)
{
    char *child = topology_child_port(hub, (guint)n);
    Instance *a = find_port(child);
    g_free(child);
    return a && !a->gone;
}

Instance *topology_at_port(const char *port)
{
    Instance *a = find_port(port);
    return a && !a->gone ? a : NULL;
}

Instance *topology_upstream(const char *port, int *n)
{
    if (g_str_has_prefix(port, "usb") || !strchr(port, '-'))
        return NULL;
    *n = last_port(port);
    if (!strchr(port, '.')) {
        int bus = topology_bus_of(port);
        return bus >= 1 && bus <= sim.nbuses ? sim.root_hubs[bus] : NULL;
    }
    char *parent = parent_port(port);
    Instance *hub = topology_at_port(parent);
    g_free(parent);
    return hub && hub->spec.kind == KIND_HUB ? hub : NULL;
}

/* On PORT itself or behind it. */
static gboolean at_or_behind(const char *what, const char *port)
{
    gsize n = strlen(port);
    return strncmp(what, port, n) == 0 && (what[n] == '\0' || what[n] == '.');
}

void topology_park(const char *port, const Spec *spec)
{
    Parked *p = g_new0(Parked, 1);
    p->port = g_strdup(port);
    spec_copy(&p->spec, spec);
    g_ptr_array_add(sim.parked, p);
}

static int nearest_first(gconstpointer a, gconstpointer b)
{
    const Parked *x = *(Parked *const *)a, *y = *(Parked *const *)b;
    gsize lx = strlen(x->port), ly = strlen(y->port);
    return lx != ly ? (int)lx - (int)ly : strcmp(x->port, y->port);
}

GPtrArray *topology_unpark(const char *port)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(parked_free);
    for (guint i = 0; i < sim.parked->len;) {
        Parked *p = g_ptr_array_index(sim.parked, i);
        if (at_or_behind(p->port, port)) {
            g_ptr_array_add(out, g_ptr_array_steal_index(sim.parked, i));
        } else {
            i++;
        }
    }
    g_ptr_array_sort(out, nearest_first);
    return out;
}

void topology_drop_parked_behind(const char *port)
{
    char *prefix = g_strdup_printf("%s.", port);
    for (guint i = 0; i < sim.parked->len;) {
        Parked *p = g_ptr_array_index(sim.parked, i);
        if (g_str_has_prefix(p->port, prefix))
            g_ptr_array_remove_index(sim.parked, i);
        else
            i++;
    }
    g_free(prefix);
}

void topology_drop_parked(const char *port)
{
    GPtrArray *gone = topology_unpark(port);
    g_ptr_array_unref(gone);
}

static gboolean port_in_use(const char *port)
{
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *other = g_ptr_array_index(sim.accessories, i);
        if (strcmp(other->port, port) == 0)
            return TRUE;
    }
    return FALSE;
}

/* "B-P[.P]..." with B a bus, 1-7 levels, port numbers 1-255. */
static gboolean port_valid(const char *port)
{
    const char *dash = strchr(port, '-');
    if (!dash || dash == port || dash - port > 2)
        return FALSE;
    for (const char *p = port; p < dash; p++)
        if (!g_ascii_isdigit(*p))
            return FALSE;
    int bus = atoi(port);
    if (bus < 1 || bus > sim.nbuses)
        return FALSE;
    gchar **levels = g_strsplit(dash + 1, ".", -1);
    guint n = g_strv_length(levels);
    gboolean ok = n >= 1 && n <= 7;
    for (guint i = 0; ok && i < n; i++) {
        const char *s = levels[i];
        if (!*s || strlen(s) > 3 || s[0] == '0')
            ok = FALSE;
        for (const char *p = s; ok && *p; p++)
            if (!g_ascii_isdigit(*p))
                ok = FALSE;
        if (ok && atoi(s) > 255)
            ok = FALSE;
    }
    g_strfreev(levels);
    return ok;
}

static char *next_free_port(void)
{
    for (int n = 1; n < 256; n++) {
        char *port = g_strdup_printf("%d-%d", 1, n);
        if (!port_in_use(port))
            return port;
        g_free(port);
    }
    return NULL;
}

char *topology_syspath(const char *port)
{
    char *parent = parent_port(port);
    Instance *up = g_str_has_prefix(parent, "usb") ? sim.root_hubs[topology_bus_of(port)] : find_port(parent);
    char *path = g_strdup_printf("%s/%s", up ? up->syspath : "/sys/devices/unknown", port);
    g_free(parent);
    return path;
}

gboolean topology_claim(const char *port, char **port_out, int *addr_out, char **error)
{
    char *chosen = NULL;
    if (port) {
        if (!port_valid(port)) {
            *error = g_strdup_printf("usage: bad port '%s' (like 1-1 or 1-1.4; buses 1-%d)", port, sim.nbuses);
            return FALSE;
        }
        if (port_in_use(port)) {
            *error = g_strdup_printf("port %s is in use", port);
            return FALSE;
        }
        int n = 0;
        Instance *up = topology_upstream(port, &n);
        if (up && n >= 1 && n <= 31 && (up->ports_off & (1u << n))) {
            *error = g_strdup_printf("port %s is powered off", port);
            return FALSE;
        }
        if (strchr(port, '.')) {
            /* behind a hub: the hub must be there and have that port */
            char *parent = parent_port(port);
            Instance *hub = find_port(parent);
            gboolean ok = FALSE;
            if (!hub || hub->spec.kind != KIND_HUB || hub->gone)
                *error = g_strdup_printf("no hub on %s (plug one with plug-hub %s NPORTS)", parent, parent);
            else if (last_port(port) > hub->spec.hub_ports)
                *error = g_strdup_printf("the hub on %s has ports 1-%d", parent, hub->spec.hub_ports);
            else
                ok = TRUE;
            g_free(parent);
            if (!ok)
                return FALSE;
        }
        chosen = g_strdup(port);
    } else if (!(chosen = next_free_port())) {
        *error = g_strdup("no free port");
        return FALSE;
    }
    int addr = alloc_address(topology_bus_of(chosen));
    if (addr < 0) {
        *error = g_strdup_printf("no free address on bus %d", topology_bus_of(chosen));
        g_free(chosen);
        return FALSE;
    }
    *port_out = chosen;
    *addr_out = addr;
    return TRUE;
}

void topology_add(Instance *inst)
{
    g_ptr_array_add(sim.accessories, inst);
}

gboolean topology_remove(Instance *inst)
{
    if (!g_ptr_array_remove(sim.accessories, inst))
        return FALSE;
    sim.addr_used[inst->bus][inst->addr] = FALSE;
    return TRUE;
}

Instance *topology_find(int bus, int addr)
{
    Instance *found = NULL;
    g_rec_mutex_lock(&sim.lock);
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *inst = g_ptr_array_index(sim.accessories, i);
        if (inst->bus == bus && inst->addr == addr && !inst->gone)
            found = inst; /* a gone one is about to be removed (fault unplug-after) */
    }
    g_rec_mutex_unlock(&sim.lock);
    return found;
}

Instance *topology_find_id(guint64 id)
{
    Instance *found = NULL;
    g_rec_mutex_lock(&sim.lock);
    for (guint i = 0; i < sim.accessories->len && !found; i++) {
        Instance *inst = g_ptr_array_index(sim.accessories, i);
        if (inst->id == id)
            found = inst;
    }
    g_rec_mutex_unlock(&sim.lock);
    return found;
}


static int depth_then_port(gconstpointer a, gconstpointer b)
{
    const Instance *x = *(Instance *const *)a, *y = *(Instance *const *)b;
    int dx = 0, dy = 0;
    for (const char *p = x->port; *p; p++)
        dx += *p == '.';
    for (const char *p = y->port; *p; p++)
        dy += *p == '.';
    return dx != dy ? dy - dx : strcmp(x->port, y->port);
}

GPtrArray *topology_behind(const Instance *hub)
{
    char *prefix = g_strdup_printf("%s.", hub->port);
    GPtrArray *children = g_ptr_array_new();
    g_rec_mutex_lock(&sim.lock);
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *a = g_ptr_array_index(sim.accessories, i);
        if (a->bus == hub->bus && g_str_has_prefix(a->port, prefix))
            g_ptr_array_add(children, a);
    }
    g_rec_mutex_unlock(&sim.lock);
    g_ptr_array_sort(children, depth_then_port);
    g_free(prefix);
    return children;
}

static int compare_ports(gconstpointer a, gconstpointer b)
{
    const Instance *x = *(Instance *const *)a, *y = *(Instance *const *)b;
    if (x->bus != y->bus)
        return x->bus - y->bus;
    return strverscmp(x->port, y->port);
}

GPtrArray *topology_present(void)
{
    GPtrArray *sorted = g_ptr_array_new();
    g_rec_mutex_lock(&sim.lock);
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *inst = g_ptr_array_index(sim.accessories, i);
        if (!inst->gone) /* a vanished device is listed no more */
            g_ptr_array_add(sorted, inst);
    }
    g_rec_mutex_unlock(&sim.lock);
    g_ptr_array_sort(sorted, compare_ports);
    return sorted;
}

GPtrArray *topology_take_all(void)
{
    g_rec_mutex_lock(&sim.lock);
    GPtrArray *all = sim.accessories;
    sim.accessories = g_ptr_array_new();
    g_rec_mutex_unlock(&sim.lock);
    return all;
}
