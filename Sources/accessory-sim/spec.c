/*
 * accessory-sim: accessory specs, VID:PID[:SERIAL[:PROTOCOL]][,OPTION]...
 * (see control.c for the options). Pure: no state, no I/O.
 */
#include "state.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_PROTOCOL "org.example.loopback"

static gboolean parse_hex16(const char *s, guint16 *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 4)
        return FALSE;
    for (size_t i = 0; i < n; i++)
        if (!g_ascii_isxdigit(s[i]))
            return FALSE;
    *out = (guint16)strtoul(s, NULL, 16);
    return TRUE;
}

static gboolean valid_usb_string(const char *s)
{
    if (!g_utf8_validate(s, -1, NULL))
        return FALSE;
    if (g_utf8_strlen(s, -1) > 126)
        return FALSE;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x21 || *p == 0x7f)
            return FALSE; /* no blanks or control characters */
    return TRUE;
}

gboolean spec_parse(const char *text, Spec *out, char **error)
{
    /* Options after the first comma: ",interface=N", ",interrupt", ",noname", ",android". */
    const char *comma = strchr(text, ',');
    gchar *head = comma ? g_strndup(text, (gsize)(comma - text)) : g_strdup(text);
    gchar **options = comma ? g_strsplit(comma + 1, ",", -1) : g_new0(gchar *, 1);
    gchar **parts = g_strsplit(head, ":", 4);
    g_free(head);
    guint n = g_strv_length(parts);
    gboolean ok = FALSE;

    memset(out, 0, sizeof(*out));
    if (comma && comma[1] == '\0') {
        *error = g_strdup_printf("usage: empty option in '%s' (nothing after the comma)", text);
        goto out;
    }
    if (n < 2 || !parse_hex16(parts[0], &out->vid) || !parse_hex16(parts[1], &out->pid)) {
        *error = g_strdup_printf("usage: bad accessory spec '%s' (VID:PID[:SERIAL[:PROTOCOL]], hex VID and PID)", text);
        goto out;
    }
    if (n >= 3 && parts[2][0] != '\0') {
        if (!valid_usb_string(parts[2])) {
            *error = g_strdup_printf("usage: bad serial '%s' (at most 126 characters, no blanks)", parts[2]);
            goto out;
        }
        out->serial = g_strdup(parts[2]);
    }
    for (gchar **o = options; *o; o++) {
        if (strcmp(*o, "android") == 0)
            out->kind = KIND_PHONE;
        else if (strcmp(*o, "interrupt") == 0)
            out->interrupt = TRUE;
        else if (strcmp(*o, "noname") == 0)
            out->noname = TRUE;
    }
    if (out->kind == KIND_PHONE && out->interrupt) {
        *error = g_strdup_printf("usage: '%s' is both android and interrupt; pick one", text);
        goto out;
    }
    if (out->kind == KIND_PHONE && out->noname) {
        *error = g_strdup_printf("usage: '%s': noname is for a loopback; an android phone's interfaces are fixed", text);
        goto out;
    }
    if (n >= 4 && parts[3][0] != '\0') {
        if (!valid_usb_string(parts[3])) {
            *error = g_strdup_printf("usage: bad protocol '%s' (at most 126 characters, no blanks)", parts[3]);
            goto out;
        }
        out->protocol = g_strdup(parts[3]);
    } else {
        /* empty: the kind's default (a phone's interface says "MTP") */
        out->protocol = g_strdup(out->kind == KIND_PHONE ? "MTP" : DEFAULT_PROTOCOL);
    }
    for (gchar **o = options; *o; o++) {
        if (g_str_has_prefix(*o, "interface=")) {
            const char *num = *o + strlen("interface=");
            char *end = NULL;
            guint64 v = g_ascii_strtoull(num, &end, 10);
            if (!*num || !end || *end || v > 255) {
                *error = g_strdup_printf("usage: bad option '%s' in '%s' (interface=N, N 0-255)", *o, text);
                goto out;
            }
            if (out->kind == KIND_PHONE) {
                *error = g_strdup_printf("usage: '%s': interface=N is for a loopback; an android phone's interfaces are fixed", text);
                goto out;
            }
            out->interface = (guint8)v;
        } else if (strcmp(*o, "android") == 0 || strcmp(*o, "interrupt") == 0 || strcmp(*o, "noname") == 0) {
            /* taken above */
        } else {
            *error = g_strdup_printf("usage: unknown option '%s' in '%s' (this accessory-sim knows interface=N, interrupt, noname, android)", *o, text);
            goto out;
        }
    }
    ok = TRUE;
out:
    if (!ok)
        spec_clear(out);
    g_strfreev(parts);
    g_strfreev(options);
    return ok;
}

void spec_clear(Spec *spec)
{
    g_clear_pointer(&spec->serial, g_free);
    g_clear_pointer(&spec->protocol, g_free);
}

void spec_copy(Spec *dst, const Spec *src)
{
    dst->vid = src->vid;
    dst->pid = src->pid;
    dst->serial = g_strdup(src->serial);
    dst->protocol = g_strdup(src->protocol);
    dst->interface = src->interface;
    dst->interrupt = src->interrupt;
    dst->noname = src->noname;
    dst->kind = src->kind;
    dst->hub_ports = src->hub_ports;
    dst->power = src->power;
    dst->superspeed = src->superspeed;
    dst->paired = src->paired;
    dst->no_disable = src->no_disable;
    dst->wedge = src->wedge;
}
