/*
 * accessory-sim: accessory kinds, their descriptors and behaviour: loopback.c,
 * hub.c (root hubs and plugged hubs), android.c, and kinds.c, which picks
 * the instance's kind. The usbdevfs handler hands class and vendor requests
 * and the bulk data's fate to these.
 */
#ifndef ACCESSORY_SIM_KINDS_H
#define ACCESSORY_SIM_KINDS_H

#include "state.h"

/* loopback.c */
GBytes *loopback_descriptors(const Spec *spec);
void loopback_strings(const Spec *spec, char *strings[8]);

/* hub.c */
GBytes *hub_descriptors(const Spec *spec);
GBytes *root_hub_descriptors(void);
void hub_strings(const Instance *inst, char *strings[8]);
/* A hub class request (worker thread, sim.lock held): IN data bytes written
 * to in_data (at most avail), 0 for OUT, -EPIPE for a stall. */
int hub_control(Instance *inst, const guint8 *setup, guint8 *in_data, gsize avail);
/* The hub's wHubCharacteristics. */
guint16 hub_characteristics(const Instance *hub);
/* Switches port (1-31) on or off as the hub's power switching allows (all
 * ports when ganged, none when it has none): the ports whose power changed,
 * as a bit mask (sim.lock held). The caller acts on them. */
guint32 hub_switch(Instance *hub, guint port, gboolean on);
/* Called (main thread, sim.lock not held) after a PORT_POWER request to the
 * hub at BUS:ADDR changed the ports in mask. */
void hub_set_power_handler(void (*handler)(int bus, int addr, guint32 mask, gboolean on));

/* android.c: Android Open Accessory 2 (kinds KIND_PHONE and KIND_PHONE_ACCESSORY) */
GBytes *android_descriptors(const Spec *spec);
void android_strings(const Spec *spec, char *strings[8]);
/* A vendor request to a phone (worker thread, sim.lock held): returns as
 * hub_control() does. */
int android_control(Instance *inst, const guint8 *setup, const guint8 *out_data, guint8 *in_data, gsize avail);
/* Called (main thread, sim.lock not held) about 20 ms after a phone at
 * BUS:ADDR got START: the layer above re-enumerates it (and ignores an
 * address that is no phone any more). */
void android_set_switch_handler(void (*handler)(int bus, int addr));

/* kinds.c */
/* Gives a new instance its kind's descriptors, strings and (hubs) kernel driver. */
void kind_describe(Instance *inst);
/* Whether OUT data on ep comes back on IN (0x01 -> 0x81); else OUT data is
 * taken and IN waits forever. */
gboolean kind_echoes(const Instance *inst, guint8 ep);
/* A class or vendor control request (worker thread, sim.lock held): out_data
 * holds out_len bytes of an OUT request's data stage; an IN request's data
 * goes to in_data (at most in_avail). Returns the IN bytes, 0 for OUT, or
 * -EPIPE for a stall. */
int kind_control(Instance *inst, const guint8 *setup, const guint8 *out_data, gsize out_len, guint8 *in_data,
                 gsize in_avail);

#endif
